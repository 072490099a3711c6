"""The MLTS page says what its numbers say (issue 22, item 6): from hand-made run documents,
a model whose final outputs are within tolerance while 25 of its 31 compared layers are
beyond the per-layer tolerance (accumulated drift), a driver 18x slower than XNNPACK, a
kernel bug, a model that failed, and an all-good model. Each claim's words and colour level
come from one function of :mod:`reports.mlts`; the page (as headless Chromium renders it,
with the colours Chromium computes), its charts and ``mlts.json`` must all agree with them
and with the numbers, which are counted here by hand."""
from __future__ import annotations

import html
import json
import math
import re

import pytest

pytest.importorskip("matplotlib")

from mlts import report  # noqa: E402
from reports import mlts as judge  # noqa: E402
from tests.browser import needs_chromium, rendered_dom, screenshot  # noqa: E402
from tests.test_mlts_report import _row, _stats  # noqa: E402

GREEN, AMBER, RED, GREY = "rgb(0, 119, 0)", "rgb(179, 98, 0)", "rgb(187, 0, 0)", "rgb(119, 119, 119)"


def _layers(ratios: list[float]) -> list[dict]:
    """Per-layer figures of a quantized model (tolerance 3 quanta) with these ratios."""
    return [{"operator": i, "builtin": "CONV_2D" if i % 2 == 0 else "DEPTHWISE_CONV_2D", "tensor": f"t{i}",
             "max_error": 3 * r, "tolerance": 3.0, "ratio": r} for i, r in enumerate(ratios)]


#: 3 within, 25 beyond (4 to 28 quanta off: 1.33x to 9.33x), 3 within: 31 compared, 25 beyond.
DRIFT_RATIOS = [1 / 3, 2 / 3, 1.0] + [(4 + k) / 3 for k in range(25)] + [1.0, 2 / 3, 1 / 3]


def _model(name: str, *, sync: float, xnnpack: float, builtin: float, accuracy: dict | None,
           errors: list | None = None) -> dict:
    return {"name": name, "kind": "classifier", "source": "hand-made", "path": f"/models/{name}.tflite",
            "errors": errors or [], "mapping": {"operators": 31, "mapped": 31, "partitions": 1, "fallback": [],
                                                "folded": [], "nnapi_operations": {"CONV_2D": 16}},
            "compile": {"no_cache_s": 0.01, "with_cache_s": 0.005},
            "latency": {"driver": {"sync": _stats(sync)},
                        "tflite": {"xnnpack": _stats(xnnpack), "builtin": _stats(builtin)}},
            "accuracy": accuracy}


def _accuracy(within: bool, layers: list[dict], divergence: dict, output_within: bool = True) -> dict:
    return {"within_tolerance": within, "tolerance": {"quant_atol": 3, "layer_quant_atol": 3},
            "outputs": [{"index": 0, "name": "probs", "mse": 0.004, "max_error": 1.0 if output_within else 9.0,
                         "within_tolerance": output_within}],
            "top_k": {"k": 5, "agreement": 1.0, "top1": True, "within_tolerance": within},
            "detection": None, "reference": "ai-edge-litert builtin kernels", "divergence": divergence,
            "layers": layers}


def drift_model() -> dict:
    """Final outputs within tolerance, 25 of 31 layers beyond (none in isolation: 24 re-run);
    18 ms against XNNPACK's 1 ms (18x slower: red) and builtin's 12 ms (1.5x: amber)."""
    div = {"found": False, "operator": None, "builtin": "", "message": "no operator departs from TFLite in isolation "
           "(24 re-run); the accumulated error first exceeds the tolerance at operator 3 DEPTHWISE_CONV_2D",
           "isolated": [{"operator": i, "builtin": "CONV_2D", "max_error": 1.0, "ratio": 1 / 3} for i in range(3, 27)]}
    return _model("quant_drift", sync=18.0, xnnpack=1.0, builtin=12.0,
                  accuracy=_accuracy(True, _layers(DRIFT_RATIOS), div))


def good_model() -> dict:
    """Every layer within; 5 ms against XNNPACK's 5.1 ms (on par) and builtin's 10 ms (0.5x)."""
    div = {"found": False, "message": "no divergence beyond tolerance over 31 compared tensors", "isolated": []}
    return _model("all_good", sync=5.0, xnnpack=5.1, builtin=10.0,
                  accuracy=_accuracy(True, _layers([0.01 * (i + 1) for i in range(31)]), div))


def kernel_bug_model() -> dict:
    """Operator 4 beyond tolerance in isolation, output beyond tolerance; 3 ms against 6 ms
    (0.5x faster) and 2.5 ms (1.2x slower: amber)."""
    div = {"found": True, "operator": 4, "builtin": "CONV_2D", "nnapi": "CONV_2D", "tensor": "t4",
           "max_error": 30.0, "tolerance": 3.0, "message": "first divergence at operator 4 CONV_2D"}
    return _model("kernel_bug", sync=3.0, xnnpack=6.0, builtin=2.5,
                  accuracy=_accuracy(False, _layers([0.1, 0.2, 0.3, 0.4, 10.0, 12.0]), div, output_within=False))


def failed_model() -> dict:
    m = _model("import_failed", sync=1.0, xnnpack=1.0, builtin=1.0, accuracy=None,
               errors=[{"stage": "import", "message": "not a TFLite flatbuffer"}])
    m["latency"] = None
    return m


def document(*models: dict) -> dict:
    return {"title": "nncts MLTS: hand-made", "generated": "2025-01-02T03:04:05", "complete": True,
            "driver": {"spec": "sample"}, "environment": {"python": "3.11"}, "settings": {},
            "models": list(models), "stress": None}


# ---------------------------------------------------------------- the judgements by hand

def test_latency_colour_by_ratio_never_green_when_slower():
    assert judge.SLOW_RATIO == 2.0 and judge.PAR_BAND == 0.05
    cases = {0.5: ("better", "good", "0.50\u00d7 faster"), 1.04: ("par", "good", "1.04\u00d7 on par"),
             0.96: ("par", "good", "0.96\u00d7 on par"), 1.06: ("worse", "warn", "1.06\u00d7 slower"),
             2.0: ("worse", "warn", "2.00\u00d7 slower"), 2.01: ("worse", "bad", "2.01\u00d7 slower"),
             18.0: ("worse", "bad", "18.00\u00d7 slower"), None: ("none", "none", "n/a"),
             math.inf: ("none", "none", "n/a")}
    for ratio, (verdict, level, text) in cases.items():
        mk = judge.ratio_marker(ratio)
        assert (mk["verdict"], mk["level"], mk["text"]) == (verdict, level, text), ratio


def test_accuracy_and_divergence_say_the_drift():
    drift = drift_model()["accuracy"]
    assert judge.layer_counts(drift)[:2] == (31, 25)
    assert judge.layer_counts(drift)[2]["operator"] == 3
    a = judge.accuracy_judgement(drift)
    assert a["level"] == "warn" and (a["layers_compared"], a["layers_beyond"]) == (31, 25)
    assert a["text"] == ("final outputs within tolerance; 25 of 31 compared layers beyond the per-layer "
                         "tolerance (accumulated drift)")
    assert a["short"] == "\u2713 within; 25 of 31 layers beyond"
    d = judge.divergence_judgement(drift)
    assert d["level"] == "warn" and d["short"] == "none in isolation; drift in 25 of 31 layers"
    assert d["text"] == ("none of the 24 operators re-run in isolation is beyond tolerance; accumulated drift: "
                         "25 of 31 compared layers beyond the per-layer tolerance, the first at TFLite operator 3 "
                         "DEPTHWISE_CONV_2D")
    good = good_model()["accuracy"]
    assert judge.accuracy_judgement(good)["level"] == "good"
    assert judge.accuracy_judgement(good)["text"] == "within tolerance; all 31 compared layers within the per-layer tolerance"
    assert judge.divergence_judgement(good) == {"level": "good", "short": "none",
                                                "text": "every compared layer within tolerance (31 compared)"}
    bug = kernel_bug_model()["accuracy"]
    assert judge.accuracy_judgement(bug)["level"] == "bad"
    assert judge.accuracy_judgement(bug)["text"] == "beyond tolerance: output 0 probs, top-k agreement"
    assert judge.divergence_judgement(bug) == {
        "level": "bad", "short": "op 4 CONV_2D",
        "text": "first departure beyond tolerance at TFLite operator 4 CONV_2D (NNAPI CONV_2D), tensor t4: "
                "max error 30 > 3"}
    assert judge.accuracy_judgement(None) == {"within_tolerance": None, "layers_compared": 0, "layers_beyond": 0,
                                              "level": "bad", "short": "not measured",
                                              "text": "accuracy not measured"}
    assert judge.divergence_judgement(None) is None


def test_task_level_pass_with_an_output_beyond_is_amber():
    """raw_outputs False (a quantized classifier judged by top-k): within overall, but the
    element-wise check of an output is beyond: said, in amber."""
    acc = _accuracy(True, [], {"found": False, "message": ""}, output_within=False)
    a = judge.accuracy_judgement(acc)
    assert a["level"] == "warn"
    assert a["text"] == ("task-level checks within tolerance; output 0 probs beyond the element-wise tolerance "
                         "(judged by top-k agreement)")
    # no per-layer figures: the locator's claim is grey, not green
    assert judge.divergence_judgement(acc)["level"] == "none"


def test_layer_ratio_of_odd_figures():
    assert judge.layer_ratio({"max_error": 6.0, "tolerance": 3.0}) == 2.0
    assert judge.layer_ratio({"max_error": 1.0, "tolerance": 0.0}) == math.inf
    assert judge.layer_ratio({"max_error": 0.0, "tolerance": 0.0}) == 0.0
    assert judge.layer_ratio({"builtin": "ADD"}) is None
    # inf (shape mismatch) and NaN count as beyond; a layer without figures is not compared
    acc = {"layers": [{"ratio": math.inf}, {"ratio": math.nan}, {"ratio": 0.5}, {"builtin": "ADD"}]}
    assert judge.layer_counts(acc)[:2] == (3, 2)


# ---------------------------------------------------------------- the page, the charts, the JSON

def test_json_carries_the_judgements_the_page_shows(tmp_path):
    doc = document(drift_model(), good_model(), kernel_bug_model(), failed_model())
    before = json.dumps(doc, sort_keys=True)
    page = report.write_report(doc, tmp_path)[0]
    assert json.dumps(doc, sort_keys=True) == before      # the caller's document is not changed
    saved = json.loads((tmp_path / "mlts.json").read_text())
    assert [{k: v for k, v in m.items() if k != "judgement"} for m in saved["models"]] == doc["models"]
    drift, good, bug, failed = (m["judgement"] for m in saved["models"])
    assert drift["status"] == "passed" and drift["accuracy"]["level"] == "warn"
    assert drift["accuracy"]["layers_beyond"] == 25 and drift["divergence"]["level"] == "warn"
    assert drift["latency"]["sync"]["xnnpack"]["level"] == "bad"
    assert drift["latency"]["sync"]["xnnpack"]["ratio"] == pytest.approx(18.0)
    assert drift["latency"]["sync"]["builtin"]["level"] == "warn"
    assert good["accuracy"]["level"] == "good" and good["latency"]["sync"]["xnnpack"]["verdict"] == "par"
    assert bug["status_level"] == "bad" and bug["divergence"]["short"] == "op 4 CONV_2D"
    assert failed["accuracy"]["short"] == "not measured" and failed["latency"] == {}
    text = page.read_text()
    for j in (drift, good, bug):
        assert html.escape(j["accuracy"]["text"][1:]) in text and html.escape(j["divergence"]["text"]) in text
    drift_section = text[text.index('id="model-quant_drift"'):text.index('id="model-all_good"')]
    assert "every compared layer within tolerance" not in drift_section and "25 of 31" in drift_section
    # totals: a zero count is grey, not red
    assert '<span class="good">2 passed</span>' in text and '<span class="bad">1 failed</span>' in text
    assert '<span class="none">0 failed</span>' in report.render_html(document(good_model()))
    import csv
    rows = {r["model"]: r for r in csv.DictReader(open(tmp_path / "mlts.csv"))}
    assert (rows["quant_drift"]["accuracy_level"], rows["quant_drift"]["layers_compared"],
            rows["quant_drift"]["layers_beyond"]) == ("warn", "31", "25")
    assert rows["import_failed"]["layers_beyond"] == "" and rows["import_failed"]["accuracy_level"] == "bad"


def _fills(svg: str) -> set[str]:
    return set(re.findall(r"fill: ?(#[0-9a-f]{6})", svg))


def test_ratio_chart_is_coloured_by_the_judgement():
    slow = report.ratio_chart(document(drift_model()), "r")
    assert "18.00\u00d7 slower vs xnnpack" in slow and "1.50\u00d7 slower vs builtin" in slow
    # red (18x) and amber (1.5x) bars; no green anywhere, and not the old per-baseline green
    assert {"#bb0000", "#b36200"} <= _fills(slow)
    assert "#007700" not in slow and "#2ca02c" not in slow
    assert "more than 2\u00d7 slower" in slow and "slower, up to 2\u00d7" in slow and "faster or on par" not in slow
    fast = report.ratio_chart(document(good_model()), "g")
    assert "#007700" in _fills(fast) and not {"#bb0000", "#b36200"} & _fills(fast)
    assert "0.98\u00d7 on par vs xnnpack" in fast and "0.50\u00d7 faster vs builtin" in fast


def test_layers_chart_counts_and_colours_the_layers_beyond():
    svg = report.layers_chart(drift_model(), "l")
    assert "25 of 31 compared layers beyond tolerance" in svg
    assert "#b36200" in svg and "#007700" in svg          # amber drift points, green ones within
    bug = report.layers_chart(kernel_bug_model(), "b")
    assert "2 of 6 compared layers beyond tolerance" in bug and "#bb0000" in bug and "#b36200" not in bug
    good = report.layers_chart(good_model(), "g")
    assert "all 31 compared layers within tolerance" in good
    assert "#b36200" not in good and "#bb0000" in good      # red only as the tolerance line


#: Appended to a copy of the page in the test only: writes each judgement element's text and
#: the colour Chromium computed for it into the DOM (the page itself has no script).
_PROBE = """<script>
const out = [];
for (const e of document.querySelectorAll('.good, .warn, .bad, .none')) {
  out.push([e.textContent.replace(/\\s+/g, ' ').trim(), getComputedStyle(e).color]);
}
const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


@needs_chromium
def test_rendered_page_words_and_colours_agree_with_the_numbers(tmp_path):
    doc = document(drift_model(), good_model(), kernel_bug_model(), failed_model())
    page = report.write_report(doc, tmp_path)[0]
    dom = rendered_dom(tmp_path, page)
    assert _row(dom, "latency-summary", "quant_drift") == [
        "passed", "18", "1", "\u25b2 18.00\u00d7 slower", "12", "\u25b2 1.50\u00d7 slower"]
    assert _row(dom, "accuracy-summary", "quant_drift")[5:] == [
        "\u2713 within; 25 of 31 layers beyond", "none in isolation; drift in 25 of 31 layers"]
    assert _row(dom, "accuracy-summary", "all_good")[5:] == ["\u2713 within", "none"]
    assert _row(dom, "accuracy-summary", "kernel_bug")[5:] == ["\u2717 beyond", "op 4 CONV_2D"]
    assert _row(dom, "accuracy-summary", "import_failed")[5:] == ["not measured", ""]
    drift = dom[dom.index('id="model-quant_drift"'):dom.index('id="model-all_good"')]
    assert "every compared layer within tolerance" not in drift
    assert ("Final outputs within tolerance; 25 of 31 compared layers beyond the per-layer tolerance "
            "(accumulated drift).") in drift
    assert "25 of 31 compared layers beyond tolerance" in drift     # the chart's title
    # the colours as Chromium computed them
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>"))
    colours = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', rendered_dom(tmp_path, probe), re.S)
                         .group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    seen: dict[str, set[str]] = {}
    for text, colour in colours:
        seen.setdefault(text, set()).add(colour)
    assert seen["\u25b2 18.00\u00d7 slower"] == {RED}
    assert seen["\u25b2 1.50\u00d7 slower"] == {AMBER}
    assert seen["\u2248 0.98\u00d7 on par"] == {GREEN} and seen["\u25bc 0.50\u00d7 faster"] == {GREEN}
    assert seen["\u25b2 1.20\u00d7 slower"] == {AMBER}          # kernel_bug: 3 ms / 2.5 ms
    for text, cs in seen.items():                               # slower is never green
        if "slower" in text and "\u00d7" in text:
            assert GREEN not in cs, text
    assert seen["\u2713 within; 25 of 31 layers beyond"] == {AMBER}
    assert seen[("Final outputs within tolerance; 25 of 31 compared layers beyond the per-layer tolerance "
                 "(accumulated drift).")] == {AMBER}
    assert seen["none in isolation; drift in 25 of 31 layers"] == {AMBER}
    assert any(t.startswith("none of the 24 operators re-run in isolation") and cs == {AMBER}
               for t, cs in seen.items())
    assert seen["\u2713 within"] == {GREEN}
    assert seen["Within tolerance; all 31 compared layers within the per-layer tolerance."] == {GREEN}
    assert seen["every compared layer within tolerance (31 compared)"] == {GREEN}
    assert seen["\u2717 beyond"] == {RED} and seen["op 4 CONV_2D"] == {RED} and seen["not measured"] == {RED}
    assert seen["n/a"] == {GREY}                                  # import_failed: no latency
    assert seen["2 passed"] == {GREEN} and seen["1 inaccurate"] == {RED} and seen["1 failed"] == {RED}
    screenshot(tmp_path, page)
