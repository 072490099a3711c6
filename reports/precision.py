"""The precision page: what the precision sweeps (``nncts precision``) measured, per driver.

For each sweep (one unary element-wise operation, input -> output type, sweep kind and
quantization) the page (``precision.html``, template ``templates/precision.html.j2``;
offline: no script, charts as inline SVG) shows the AOSP verdict, the max and mean error in
ULP of the output type (quanta for quantized outputs, units for TENSOR_INT32), the error
budget and its grade, where in the input range the failing and over-budget elements lie (the
bins merged into ranges, and the smallest and largest failing input), a histogram of the
largest error per input bin along the real line (one bar per binade and sign for float
inputs, per 16 stored values for quantized ones; red where an element fails AOSP's
tolerance, amber where one exceeds the budget, blue otherwise; height log10(1 + ULP)),
the worst inputs (input, bit pattern, actual, truth, error) and the command that replays them
(``python -m precision --driver ... --case ... --input ...``: a table of those elements).

The run report (``index.html``) carries a summary of the same (:func:`overview`, section
``templates/_precision.html.j2``) and links to the page, written next to it by
:func:`write_page` whenever the run has precision records.

Records may come from someone else's bundle: every field is checked for its type and a field
of the wrong type counts as absent; the page escapes every string (jinja2 autoescape, and
:func:`histogram_svg` escapes its labels).
"""
from __future__ import annotations

import math
import shlex
from pathlib import Path

from markupsafe import Markup, escape

from .replay import driver_options, replay_command
from .templating import ENV

#: The page's file name, next to the run report.
PAGE = "precision.html"
#: The record ``suite`` of the sweeps.
SUITE = "precision"
#: Most bins a histogram draws (a record holds at most this many; more are ignored).
MAX_BINS = 1024
#: Most worst inputs a row shows.
MAX_WORST = 16



def _number(v) -> float | None:
    """A record's number: int / float, or the texts ``inf`` / ``-inf`` / ``nan``; None else."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if v in ("inf", "-inf", "nan"):
        return float(v)
    return None


def number_text(v) -> str:
    """A figure as the page prints it: ``0``, ``0.5``, ``1793.9``, ``1.68e+07``, ``inf``;
    ``-`` when absent."""
    x = _number(v)
    if x is None:
        return "-"
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if x == 0:
        return "0"
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.3g}"


def _text(v) -> str:
    return v if isinstance(v, str) else ""


def _texts(v) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def _hist(h) -> dict | None:
    """A record's histogram with lists of equal length (at most :data:`MAX_BINS`), None
    when malformed."""
    if not isinstance(h, dict) or not isinstance(h.get("labels"), list):
        return None
    labels = [x if isinstance(x, str) else "?" for x in h["labels"][:MAX_BINS]]
    out = {"labels": labels}
    for key in ("n", "undefined", "max", "mean", "fail", "over"):
        values = h.get(key) if isinstance(h.get(key), list) else []
        nums = [_number(x) for x in values[:len(labels)]]
        out[key] = [x if x is not None else 0.0 for x in nums] + [0.0] * (len(labels) - len(nums))
    return out


def value_text(v) -> str:
    """An input, actual or truth value of a record exactly: an integer as is, a float by its
    repr (``5.774865974279314e+37``), ``inf`` / ``-inf`` / ``nan``; ``-`` otherwise."""
    if isinstance(v, bool):
        return "-"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return v if v in ("inf", "-inf", "nan") else "-"


def _worst(w, unit: str) -> list[dict]:
    out = []
    for e in (w if isinstance(w, list) else [])[:MAX_WORST]:
        if isinstance(e, dict):
            out.append({"input": value_text(e.get("input")), "bits": _text(e.get("bits")),
                        "actual": value_text(e.get("actual")), "truth": value_text(e.get("truth")),
                        "error": number_text(e.get("error")), "failing": e.get("failing") is True,
                        "bin": _text(e.get("bin")), "unit": unit})
    return out


def sweep_row(record: dict, meta: dict | None = None) -> dict:
    """One row of the page for an outcome record of the precision suite, under its run's
    ``meta`` (the driver label, for the replay commands): the record's sweep figures with
    every field type-checked (see the module docstring)."""
    meta = meta or {}
    s = record.get("sweep") if isinstance(record.get("sweep"), dict) else {}
    unit = _text(s.get("unit")) or "ULP"
    parts = _text(record.get("id")).split("/")
    operation = _text(s.get("operation")) or (parts[1] if len(parts) > 1 else "?")
    types = _text(s.get("types")) or (parts[2] if len(parts) > 2 else "?")
    replay = s.get("replay") if isinstance(s.get("replay"), list) and all(isinstance(a, str) for a in s["replay"]) \
        else None
    why = s.get("undefined_why") if isinstance(s.get("undefined_why"), dict) else {}
    span = s.get("failing_span") if isinstance(s.get("failing_span"), list) and len(s["failing_span"]) == 2 else None
    tol = s.get("tolerance") if isinstance(s.get("tolerance"), dict) else {}
    return {
        "id": _text(record.get("id")), "anchor": "sweep-" + "".join(c if c.isalnum() else "-" for c in
                                                                    _text(record.get("id"))),
        "outcome": _text(record.get("outcome")) or "?", "message": _text(record.get("message")),
        "driver": _text(meta.get("driver")), "operation": operation, "types": types,
        "sweep": _text(s.get("sweep")) or (parts[3] if len(parts) > 3 else ""), "pair": _text(s.get("pair")),
        "mode": _text(s.get("mode")) or _text(record.get("mode")), "unit": unit, "measured": bool(s),
        "max": _number(s.get("max")), "mean": _number(s.get("mean")), "max_text": number_text(s.get("max")),
        "mean_text": number_text(s.get("mean")),
        **{k: int(s[k]) if isinstance(s.get(k), int) and not isinstance(s.get(k), bool) else 0
           for k in ("elements", "judged", "undefined", "failing", "over_budget", "infinite")},
        "undefined_why": [(str(k), v) for k, v in why.items() if isinstance(v, int)],
        "tolerance": ", ".join(f"{k} {number_text(tol.get(k))}" for k in ("atol", "rtol") if _number(tol.get(k))
                               is not None) if not tol.get("exact") else "exact",
        "fail_ranges": _texts(s.get("fail_ranges")), "over_ranges": _texts(s.get("over_ranges")),
        "failing_span": [value_text(x) for x in span] if span else None,
        "failing_nearest_zero": value_text(s.get("failing_nearest_zero")) if span else "",
        "budget": number_text(s.get("budget")) if _number(s.get("budget")) is not None else "",
        "budget_source": _text(s.get("budget_source")), "grade": _text(s.get("grade")) or "not measured",
        "worst_bin": _text(s.get("worst_bin")), "worst": _worst(s.get("worst"), unit), "hist": _hist(s.get("hist")),
        "replay": shlex.join([*replay[:3], *driver_options(meta.get("driver"), meta.get("driver_tls")), *replay[3:]])
        if replay else "",
        "node_replay": replay_command(record, meta) if record.get("outcome") in ("failed", "unexpected_pass") else "",
    }


def rows_of(dirs) -> list[dict]:
    """:func:`sweep_row` of every precision record of the run directories ``dirs`` (objects
    with ``records`` and ``meta``: :class:`reports.run.SuiteDir`), ordered by driver,
    operation, types and sweep."""
    rows = [sweep_row(r, d.meta) for d in dirs for r in d.records if r.get("suite") == SUITE]
    return sorted(rows, key=lambda r: (r["driver"], r["operation"], r["types"], r["sweep"], r["pair"]))


def overview(rows: list[dict]) -> dict:
    """The run report's precision section (JSON-able): ``sweeps``, ``failed``, ``skipped``,
    grade counts, ``page`` (:data:`PAGE`) and one compact row per sweep (operation, types,
    sweep, pair, outcome, unit, max, mean, grade, failing, fail ranges, anchor); {} without
    sweeps."""
    if not rows:
        return {}
    grades: dict[str, int] = {}
    for r in rows:
        if r["measured"]:
            grades[r["grade"]] = grades.get(r["grade"], 0) + 1
    keys = ("driver", "operation", "types", "sweep", "pair", "outcome", "unit", "max_text", "mean_text", "grade",
            "failing", "fail_ranges", "anchor", "message")
    return {"sweeps": len(rows), "failed": sum(r["outcome"] == "failed" for r in rows),
            "skipped": sum(r["outcome"] == "skipped" for r in rows), "grades": grades, "page": PAGE,
            "rows": [{k: r[k] for k in keys} for r in rows]}


#: Bar colours: an element beyond AOSP's tolerance, over the budget, within both.
FAIL, OVER, OK, UNDEFINED = "#b00", "#b36200", "#4a78a8", "#bbb"


def histogram_svg(hist: dict | None, width: int = 900, height: int = 120, axis: bool = True) -> Markup:
    """An inline SVG of a (:func:`_hist`-checked) histogram: per bin a bar of height
    log10(1 + max error) (the tallest bar the full height), coloured :data:`FAIL` where an
    element fails the tolerance, :data:`OVER` where one exceeds the budget, :data:`OK`
    otherwise; a bin holding only undefined elements a grey tick. With ``axis``: the first,
    last, zero and worst bins labelled below. Empty markup without bins."""
    if not hist or not hist["labels"]:
        return Markup("")
    labels, n = hist["labels"], len(hist["labels"])
    plot_h = height - (28 if axis else 2)
    bar = width / n
    heights = [math.log10(1 + m) if math.isfinite(m) else math.inf for m in hist["max"]]
    finite = [h for h in heights if math.isfinite(h)]
    top = max(finite + [math.log10(2)])
    paths = {FAIL: [], OVER: [], OK: [], UNDEFINED: []}
    w = max(bar - (0.3 if bar > 2 else 0.0), 0.6)
    for i in range(n):
        x = i * bar
        if hist["n"][i] == 0 or hist["max"][i] == 0:
            if hist["n"][i] == 0 and hist["undefined"][i]:
                paths[UNDEFINED].append(f"M{x:.2f} {plot_h:.1f}h{w:.2f}v-2h-{w:.2f}z")
            continue
        h = plot_h if not math.isfinite(heights[i]) else max(heights[i] / top * (plot_h - 4), 1.0)
        colour = FAIL if hist["fail"][i] else OVER if hist["over"][i] else OK
        paths[colour].append(f"M{x:.2f} {plot_h:.1f}v-{h:.1f}h{w:.2f}v{h:.1f}z")
    body = [f'<path fill="{c}" d="{"".join(p)}"/>' for c, p in paths.items() if p]
    worst = max(range(n), key=lambda i: (hist["n"][i] > 0, heights[i] if hist["n"][i] else -1.0))
    if not hist["max"][worst]:
        worst = -1   # no error anywhere: no bin is the worst
    text = []
    if axis:
        # the ends, zero (between -0 and +0), -1 and 1 (the binades [1, 2)), the worst bin
        marks = {0: ("start", labels[0]), n - 1: ("end", labels[n - 1])}
        for i, label in enumerate(labels):
            if label in ("+0", "-[1, 2)", "[1, 2)"):
                marks[i] = ("middle", {"+0": "0", "-[1, 2)": "-1", "[1, 2)": "1"}[label])
        if worst >= 0:
            marks[worst] = (marks.get(worst, ("middle",))[0], labels[worst])
        for i, (anchor, label) in sorted(marks.items()):
            x = i * bar + (0 if label == "0" else bar / 2)
            style = ' font-weight="bold"' if i == worst else ""
            text.append(f'<text x="{x:.1f}" y="{height - 14}" font-size="10" text-anchor="{anchor}"{style}>'
                        f'{escape(label)}</text>')
    where = f"worst: {labels[worst]}" if worst >= 0 else "no error in any bin"
    if axis:
        text.append(f'<text x="{width}" y="{height - 2}" font-size="9" text-anchor="end" fill="#555">'
                    f'largest error per input bin, log scale; {escape(where)}</text>')
    title = f"largest error per input bin along the real line; {where}"
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                  f'viewBox="0 0 {width} {height}" role="img"><title>{escape(title)}</title>'
                  f'<line x1="0" y1="{plot_h + 0.5}" x2="{width}" y2="{plot_h + 0.5}" stroke="#999"/>'
                  + "".join(body) + "".join(text) + "</svg>")


def write_page(dirs, out_dir: str | Path) -> Path | None:
    """Write ``precision.html`` into ``out_dir`` for the precision records of ``dirs`` (see
    :func:`rows_of`; titled ``nncts precision sweeps: driver NAME[, NAME ...]``); returns its
    path, None (nothing written) when there are none."""
    rows = rows_of(dirs)
    if not rows:
        return None
    drivers: dict[str, list[dict]] = {}
    for r in rows:
        drivers.setdefault(r["driver"] or "(driver not recorded)", []).append(r)
    title = f"nncts precision sweeps: driver {', '.join(drivers)}"
    page = Path(out_dir) / PAGE
    page.write_text(ENV.get_template("precision.html.j2").render(
        title=title, drivers=drivers, summary=overview(rows), svg=histogram_svg,
        colours={"fail": FAIL, "over": OVER, "ok": OK}), encoding="utf-8")
    return page
