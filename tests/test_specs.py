"""Our own golden specs (cts/specs): built files are up to date, every model names an
independent golden source, and the builder never imports the operation table."""
import ast
import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cts.specs import BUILT, FAMILIES, VERSION
from tests.cts_run import ROOT

SPECS_DIR = ROOT / "cts" / "specs"


def test_built_specs_are_up_to_date():
    proc = subprocess.run([sys.executable, "-m", "cts.specs", "check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_builder_does_not_import_the_operation_table():
    code = ("import sys, cts.specs.__main__ as m, tempfile, pathlib; "
            "m.build(pathlib.Path(tempfile.mkdtemp())); "
            "print(any(k == 'runtime.ops' or k.startswith('runtime.ops.') for k in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def _built_models():
    """(file name, model object) of every built document under cts/specs/built."""
    for path in sorted((BUILT / VERSION).glob("*.json.gz")):
        with gzip.open(path, "rt") as f:
            for m in json.load(f)["models"]:
                yield path.name, m


def test_every_family_is_built_and_nothing_else():
    assert sorted(p.name for p in (BUILT / VERSION).glob("*.json.gz")) == sorted(f"{f}.json.gz" for f in FAMILIES)


def test_every_model_names_an_independent_golden_source():
    models = list(_built_models())
    assert len(models) > 600
    for name, m in models:
        source = m["golden_source"]
        assert source.startswith(("hand calculation", "numpy formula")), (name, m["name"], source)
        assert not any(w in source for w in ("runtime", "operation table", "ops.", "kernel")), (m["name"], source)


#: The only project modules a spec module may import: operand/operation codes and the
#: corpus schema (never the operation table, drivers or executor).
ALLOWED_RUNTIME_IMPORTS = {"runtime.types", "runtime.testing.test_model", "runtime.testing.corpus_writer"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module == "runtime":  # from runtime import x: the submodule x
                names.update(f"runtime.{a.name}" for a in node.names)
            else:
                names.add(node.module)
    return names


def test_spec_modules_import_no_operation_table():
    modules = [SPECS_DIR / f"{f}.py" for f in FAMILIES] + sorted(SPECS_DIR.glob("*.py"))
    for path in modules:
        runtime = {n for n in _imports(path) if n == "runtime" or n.startswith("runtime.")}
        assert runtime <= ALLOWED_RUNTIME_IMPORTS, (path.name, runtime - ALLOWED_RUNTIME_IMPORTS)
    assert {p.stem for p in modules} >= {*FAMILIES, "variations", "__init__", "__main__"}


def test_claimed_feature_levels_are_the_validators():
    """min_supported_version of every built model is the feature level the validator
    computes for it (the operation table is used here to check metadata, not goldens)."""
    from runtime.hal.validate import validate_model
    from runtime.testing.hal_convert import to_hal_model
    from runtime.testing.test_model import load_spec
    for family in FAMILIES:
        for tm in load_spec(BUILT / VERSION / f"{family}.json.gz"):
            assert validate_model(to_hal_model(tm)).model_level == tm.feature_level, tm.name


# --- CONV_2D / DEPTHWISE_CONV_2D specs and the variations (cts/specs/conv.py, variations.py)

def _conv_specs() -> dict:
    from runtime.testing.test_model import load_spec
    return {tm.name: tm for tm in load_spec(BUILT / VERSION / "conv.json.gz")}


def _expected(tm):
    return tm.main.operands[tm.main.output_indexes[0]]


def _dequantized(o):
    return (o.data.astype(np.float64) - o.zero_point) * o.scale


def test_formula_and_padding_by_hand():
    from cts.specs.conv import RELU1, RELU6, SAME, VALID, conv_formula, implicit_padding
    # 1x1 filter 2, bias 0.5: -1, 0.25, 3 -> -1.5, 1, 6.5 -> RELU6 0, 1, 6
    x = np.array([-1.0, 0.25, 3.0]).reshape(1, 1, 3, 1)
    got = conv_formula(x, np.full((1, 1, 1, 1), 2.0), [0.5], (0, 0, 0, 0), (1, 1), (1, 1), RELU6)
    assert got.ravel().tolist() == [0.0, 1.0, 6.0]
    # depthwise, multiplier 2: channels (1, -2) times (1, 2 | 3, 4) -> 1, 2, -6, -8 -> RELU1
    got = conv_formula(np.array([1.0, -2.0]).reshape(1, 1, 1, 2), np.arange(1.0, 5.0).reshape(1, 1, 1, 4),
                       np.zeros(4), (0, 0, 0, 0), (1, 1), (1, 1), RELU1, multiplier=2)
    assert got.ravel().tolist() == [1.0, 1.0, -1.0, -1.0]
    # SAME: out = ceil(in / stride), total = (out - 1) * stride + (f - 1) * dilation + 1 - in
    assert implicit_padding(5, 2, 3, 1, SAME) == (1, 1)  # out 3, total 4 + 3 - 5 = 2
    assert implicit_padding(4, 1, 2, 2, SAME) == (1, 1)  # dilated extent 3: total 3 + 3 - 4 = 2
    assert implicit_padding(7, 3, 2, 1, SAME) == (0, 1)  # out 3, total 6 + 2 - 7 = 1
    assert implicit_padding(7, 3, 2, 1, VALID) == (0, 0)


@pytest.mark.parametrize("prefix", ["conv2d_act", "depthwise_conv2d_act"])
def test_every_fuse_code_clamps_something(prefix):
    specs = _conv_specs()
    pre = _expected(specs[f"{prefix}_none_nhwc"]).data
    assert (pre < -1).any() and (abs(pre) < 1).any() and ((pre > 1) & (pre < 6)).any() and (pre > 6).any()
    relu, relu1, relu6 = (_expected(specs[f"{prefix}_{a}_nhwc"]).data for a in ("relu", "relu1", "relu6"))
    np.testing.assert_allclose(relu, np.maximum(pre, 0), atol=1e-5)
    np.testing.assert_allclose(relu1, np.clip(pre, -1, 1), atol=1e-5)
    np.testing.assert_allclose(relu6, np.clip(pre, 0, 6), atol=1e-5)
    assert relu6.max() == 6 and relu.max() > 6 and relu1.min() == -1


SUFFIXES = [f"_{layout}{flavor}{internal}" for flavor in ("", "_relaxed", "_float16", "_quant8", "_quant8_signed",
                                                          "_per_channel", "_quant8_signed_per_channel")
            for layout in ("nhwc", "nchw") for internal in ("", "_all_inputs_as_internal")]


@pytest.mark.parametrize("base,op,channel_dim", [("conv2d_act_relu6", "CONV_2D", 0),
                                                 ("depthwise_conv2d_same_stride2_batch2_m3", "DEPTHWISE_CONV_2D", 3)])
def test_variations(base, op, channel_dim):
    from runtime.types import OperandLifeTime as L, OperandType as T
    specs = _conv_specs()
    names = {n for n in specs if n.startswith(base + "_")}
    assert names == {base + s for s in SUFFIXES} | {base + "_nhwc_without_optional",
                                                     base + "_nhwc_quant8_without_optional"}
    ref = specs[base + "_nhwc"]
    x, want = ref.main.operands[0].data, _expected(ref).data
    for name in names:
        tm = specs[name]
        conv = tm.main.operations[-1]
        assert conv.type.name == op
        ins = [tm.main.operands[i] for i in conv.inputs]
        assert tm.is_relaxed == ("_relaxed" in name)
        out = _expected(tm)
        if "_nchw" in name:
            assert ins[-3].data, name  # layout flag true
            assert list(out.dimensions) == [want.shape[i] for i in (0, 3, 1, 2)]
        if "quant8" in name or "per_channel" in name:
            assert ins[0].zero_point != 0 and out.zero_point != 0, name
            deq = _dequantized(out)
            deq = deq.transpose(0, 2, 3, 1) if "_nchw" in name else deq
            assert np.abs(deq - want).max() <= 3 * out.scale, name  # the float golden, requantized
            filt, bias = ins[1], ins[2]
            assert bias.type == T.TENSOR_INT32 and bias.zero_point == 0
            if "per_channel" in name:
                assert filt.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and filt.channel_quant[1] == channel_dim
                assert len(filt.channel_quant[0]) == bias.dimensions[0]
            else:
                assert filt.zero_point != 0
                assert np.float32(bias.scale) == np.float32(np.float32(ins[0].scale) * np.float32(filt.scale))
        elif "_nchw" not in name:
            tol = 5e-3 * (1 + np.abs(want)) if "float16" in name else 1e-6
            assert (np.abs(out.data.astype(np.float64) - want) <= tol).all(), name
        if name.endswith("_all_inputs_as_internal"):
            add, = tm.main.operations[:-1]
            assert add.type.name == "ADD" and add.outputs == [conv.inputs[0]]
            assert tm.main.operands[conv.inputs[0]].lifetime == L.TEMPORARY_VARIABLE
            new, zero, act = (tm.main.operands[i] for i in add.inputs)
            assert tm.main.input_indexes == [add.inputs[0]] and new.lifetime == L.SUBGRAPH_INPUT
            assert zero.data.tolist() == [new.zero_point] and int(act.data) == 0
        else:
            assert len(tm.main.operations) == 1
            if "_nhwc" in name and "quant8" not in name and "per_channel" not in name and "float16" not in name:
                assert (ins[0].data == x).all(), name
    short = specs[base + "_nhwc_without_optional"]
    assert len(short.main.operations[0].inputs) == len(ref.main.operations[0].inputs) - 3
    assert short.min_supported_version == "V1_0" and specs[base + "_nhwc_quant8_without_optional"].feature_level <= 3


def test_every_quantized_conv_operand_has_a_non_zero_zero_point():
    from runtime.types import OperandType as T
    quantized = [o for tm in _conv_specs().values() for o in tm.main.operands
                 if o.type in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)]
    assert len(quantized) > 1000 and all(o.zero_point != 0 for o in quantized)


def test_omitted_variation_for_operations_that_allow_omitted_operands():
    """``_omitted``: optional inputs at their default become NO_VALUE, only for specs whose
    operation allows omitted operands (not CONV_2D: AOSP rejects them there)."""
    import dataclasses

    from cts.specs.conv import RELU, VALID, conv_spec
    from cts.specs.variations import FLOAT32, expand, variant
    from runtime.types import OperandLifeTime as L
    spec = conv_spec("c", np.ones((1, 2, 2, 1)), np.ones((1, 1, 1, 1)), np.zeros(1), VALID, (1, 1), RELU)
    assert not any("_omitted" in tm.name for tm, _ in expand(spec))
    assert any(tm.name == "c_nhwc_omitted" for tm, _ in expand(dataclasses.replace(spec, omittable=True)))
    tm, _ = variant(spec, FLOAT32, False, "omitted")
    ins = [tm.main.operands[i] for i in tm.main.operations[0].inputs]
    assert [o.lifetime for o in ins[-3:]] == [L.NO_VALUE] * 3 and all(o.data is None for o in ins[-3:])
    assert tm.main.operands[tm.main.output_indexes[0]].data.ravel().tolist() == [1.0] * 4


def _naive_conv(x, w, b, pads, strides, dilation, act, multiplier):
    """Scalar loops over every output element, tap and channel (a second, independent
    formulation of the NNAPI definition)."""
    left, _, top, _ = pads
    (sw, sh), (dw, dh) = strides, dilation
    n, h, wd, c = x.shape
    fh, fw = w.shape[1:3]
    depth_out = w.shape[0] if multiplier is None else w.shape[3]
    oh = (h + pads[2] + pads[3] - (fh - 1) * dh - 1) // sh + 1
    ow = (wd + pads[0] + pads[1] - (fw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, oh, ow, depth_out))
    for bi, yi, xi, o in np.ndindex(out.shape):
        acc = b[o]
        for i, j in np.ndindex(fh, fw):
            y, xx = yi * sh - top + i * dh, xi * sw - left + j * dw
            if 0 <= y < h and 0 <= xx < wd:
                if multiplier is None:
                    acc += sum(x[bi, y, xx, k] * w[o, i, j, k] for k in range(c))
                else:
                    acc += x[bi, y, xx, o // multiplier] * w[0, i, j, o]
        out[bi, yi, xi, o] = acc
    lo, hi = {0: (-np.inf, np.inf), 1: (0, np.inf), 2: (-1, 1), 3: (0, 6)}[act]
    return np.clip(out, lo, hi)


def test_conv_formula_agrees_with_scalar_loops_on_every_spec():
    from cts.specs.conv import _float_specs, implicit_padding
    from runtime.types import OperationType as Op
    specs = _float_specs()
    assert len(specs) == 20
    for spec in specs:
        x, w, b, *scalars = (s.value for s in spec.slots)
        depthwise = spec.op == Op.DEPTHWISE_CONV_2D
        dilation = tuple(scalars[-2:])
        params = scalars[:-3]
        act, multiplier = params[-1], params[-2] if depthwise else None
        params = params[:-2] if depthwise else params[:-1]
        if len(params) == 6:
            pads, strides = tuple(params[:4]), tuple(params[4:])
        else:
            code, strides = params[0], tuple(params[1:])
            pt, pb = implicit_padding(x.shape[1], strides[1], w.shape[1], dilation[1], code)
            pl, pr = implicit_padding(x.shape[2], strides[0], w.shape[2], dilation[0], code)
            pads = (pl, pr, pt, pb)
        want = _naive_conv(x, w, b, pads, strides, dilation, act, multiplier)
        np.testing.assert_allclose(spec.formula(x, w, b, *scalars), want, atol=1e-12, err_msg=spec.name)
