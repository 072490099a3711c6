"""The MLTS report: one self-contained, offline HTML page per run (jinja2 template
``templates/mlts.html.j2``; charts drawn by matplotlib and inlined as SVG, no script, no CDN,
no external file), with ``<stem>.json`` (the run document, verbatim) and
``<stem>.csv`` (one row per model) beside it, and ``<stem>-stress.csv`` when stress tests ran
(``<stem>.csv`` in a stress-only run).

The run document (its schema), a model's status, the totals, the latency ratio markers and
every judgement the page shows (words and colour level, :func:`reports.mlts.judge_model`) are
:mod:`reports.mlts`'s (the run report reads the same documents). The page, its charts and
``<stem>.json`` (each model's ``"judgement"``) take words and colours from those functions
only: a claim cannot be green beside numbers that say otherwise.
"""
from __future__ import annotations

import csv
import datetime
import html
import io
import json
import math
import re
from pathlib import Path

import jinja2

from reports.mlts import (BASELINES, DRIVER_MODES, LEVEL_COLOURS, PAR_BAND, PRECISION_RATIO, SLOW_RATIO, judge_model,
                          latency_ratio, layer_counts, layer_ratio, model_status, outcome_level, precision_level,
                          ratio_marker, status_level, totals)

#: Series colours (driver modes then baselines) of the histograms: neither green nor red,
#: which are the judgement colours (:data:`reports.mlts.LEVEL_COLOURS`).
_COLOURS = {"sync": "#1f77b4", "async": "#17becf", "burst": "#9467bd",
            "xnnpack": "#8c564b", "builtin": "#7f7f7f"}
#: The ratio chart tells the baselines apart by hatching (its colours are the judgements').
_HATCHES = {"xnnpack": "", "builtin": "////"}
#: Legend words of the ratio chart's levels.
_RATIO_LEGEND = {"good": f"faster or on par (\u2264 {1 + PAR_BAND:g}\u00d7)",
                 "warn": f"slower, up to {SLOW_RATIO:g}\u00d7", "bad": f"more than {SLOW_RATIO:g}\u00d7 slower"}

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("mlts", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]),
                          trim_blocks=True, lstrip_blocks=True)


# ---------------------------------------------------------------- derived figures

def group_operators(entries) -> list[dict]:
    """Fallback or folded operators grouped by builtin name and reason, in first-seen order:
    ``[{"builtin", "reason", "count", "indexes": "3, 5-9, 12"}]`` (a model with float16
    weights folds one DEQUANTIZE per weight: the page lists them as one line)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for e in entries or []:
        groups.setdefault((e.get("builtin", "?"), e.get("reason", "")), []).append(int(e.get("index", -1)))
    out = []
    for (builtin, reason), idx in groups.items():
        runs, start = [], None
        idx = sorted(idx)
        for i, v in enumerate(idx):
            if start is None:
                start = v
            if i + 1 == len(idx) or idx[i + 1] != v + 1:
                runs.append(str(start) if start == v else f"{start}-{v}")
                start = None
        out.append({"builtin": builtin, "reason": reason, "count": len(idx), "indexes": ", ".join(runs)})
    return out


def stress_rows(records) -> list[dict]:
    """The stress table's rows: ``test``, ``driver``, ``outcome``, ``expected`` (when the
    record says), ``duration_s``, ``detail`` (the message), ``params`` (one line: the
    test's parameters but its model list), ``log`` (the tail kept for a non-SUCCESS),
    ``level`` of the outcome and ``expected_level`` (good when the outcome is the expected
    one, bad when not, none when nothing was expected): :func:`reports.mlts.outcome_level`."""
    rows = []
    for r in records or []:
        params = {k: v for k, v in (r.get("params") or {}).items() if k != "models"}
        expected = r.get("expected")
        rows.append({"test": r.get("test"), "driver": r.get("driver"), "outcome": r.get("outcome"),
                     "expected": expected, "level": outcome_level(r.get("outcome")),
                     "expected_level": "none" if not expected else ("good" if expected == r.get("outcome") else "bad"),
                     "duration_s": r.get("duration_s", r.get("duration")),
                     "detail": r.get("detail", r.get("message", "")) or "",
                     "params": ", ".join(f"{k}={v}" for k, v in params.items()), "log": r.get("log") or ""})
    return rows


def _max_errors(acc: dict | None) -> tuple[float | None, float | None]:
    """The largest MSE and the largest maximum error over a model's outputs (None if none)."""
    outs = (acc or {}).get("outputs") or []
    return (max((o["mse"] for o in outs if o.get("mse") is not None), default=None),
            max((o["max_error"] for o in outs if o.get("max_error") is not None), default=None))


# ---------------------------------------------------------------- charts (matplotlib -> inline SVG)

def _figure(width: float, height: float):
    from matplotlib.figure import Figure   # no pyplot: no global state, no display backend
    return Figure(figsize=(width, height), dpi=72, layout="constrained")


def _svg(fig, chart_id: str, title: str) -> str:
    """``fig`` as an inline ``<svg>`` element: fonts as ``<text>`` (selectable, small), no XML
    prolog, every id and reference prefixed with ``chart_id`` so several charts share a page."""
    import matplotlib
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": chart_id}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)   # RDF boilerplate
    svg = re.sub(r'\bid="([^"]+)"', rf'id="{chart_id}-\1"', svg)
    svg = re.sub(r'url\(#([^)]+)\)', rf'url(#{chart_id}-\1)', svg)
    svg = re.sub(r'href="#([^"]+)"', rf'href="#{chart_id}-\1"', svg)
    return svg.replace("<svg ", f'<svg class="chart" id="{chart_id}" role="img" aria-label="{html.escape(title)}" ', 1)


def _finish(fig, ax, chart_id: str, label: str, title: str, xlabel: str, ylabel: str | None = None,
            grid_axis: str = "both", handles=None) -> str:
    """The chrome every chart of the page shares, then the inline SVG (:func:`_svg`): axis
    labels, ``title``, the legend outside at the upper right (8 pt; of ``handles`` when
    given, else of the labelled artists), a light grid on ``grid_axis``; ``label`` is the
    SVG's accessible name."""
    ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.legend(**({"handles": handles} if handles else {}), fontsize=8, loc="outside right upper")
    ax.grid(alpha=0.3, axis=grid_axis)
    return _svg(fig, chart_id, label)


#: Drawn charts by (function, chart id, digest of the data drawn): a run re-renders its page
#: after every model, and each model's charts are then drawn once (about 0.5 s each).
_CHARTS: dict[tuple[str, str, str], str | None] = {}


def _cached(fn, data, chart_id: str, *args):
    """``fn(*args)`` unless the same chart of the same ``data`` was drawn before."""
    import hashlib
    digest = hashlib.sha1(json.dumps(data, sort_keys=True, default=_json_default).encode()).hexdigest()
    key = (fn.__name__, chart_id, digest)
    if key not in _CHARTS:
        if len(_CHARTS) > 512:
            _CHARTS.clear()
        _CHARTS[key] = fn(*args)
    return _CHARTS[key]


def _series(model: dict) -> list[tuple[str, str, dict]]:
    """(label, colour key, STATS) of every latency measured for ``model``: driver modes, then
    the TFLite baselines."""
    lat = model.get("latency") or {}
    out = [(f"driver {m}", m, s) for m, s in (lat.get("driver") or {}).items() if s]
    out += [(f"TFLite {b}", b, s) for b, s in (lat.get("tflite") or {}).items() if s]
    return out


def histogram_chart(model: dict, chart_id: str) -> str | None:
    """SVG of ``model``'s latency histograms (each series as a share of its iterations; log
    x when the series span more than 10x), or None when no histogram was measured."""
    series = [(label, key, s["histogram"]) for label, key, s in _series(model)
              if s.get("histogram") and sum(s["histogram"].get("counts") or []) > 0]
    if not series:
        return None
    fig = _figure(9, 2.8)
    ax = fig.add_subplot()
    lo = min(h["edges_ms"][0] for _, _, h in series)
    hi = max(h["edges_ms"][-1] for _, _, h in series)
    for label, key, h in series:
        counts = [c / sum(h["counts"]) for c in h["counts"]]
        ax.stairs(counts, h["edges_ms"], label=label, color=_COLOURS.get(key), fill=True, alpha=0.35)
        ax.stairs(counts, h["edges_ms"], color=_COLOURS.get(key), linewidth=1.2)
    if lo > 0 and hi / lo > 10:
        ax.set_xscale("log")
    return _finish(fig, ax, chart_id, f"{model['name']} latency histograms",
                   f"{model['name']}: latency histograms", "latency (ms)", "share of iterations")


def ratio_chart(doc: dict, chart_id: str, mode: str = "sync") -> str | None:
    """SVG of every model's driver/TFLite mean-latency ratio in ``mode`` (horizontal bars per
    baseline growing from 1 on a log x axis: leftwards the driver is faster, rightwards
    slower), or None when no model has a ratio. Each bar's colour is its marker's level
    (:func:`reports.mlts.ratio_marker`: green faster or on par, amber slower, red more than
    :data:`reports.mlts.SLOW_RATIO` times slower), its hatching the baseline, and its end
    carries the marker's words ("18.00x slower")."""
    from matplotlib.patches import Patch
    rows = []
    for m in doc.get("models") or []:
        markers = judge_model(m)["latency"].get(mode) or {}
        if any(mk["ratio"] is not None for mk in markers.values()):
            rows.append((m["name"], markers))
    if not rows:
        return None
    fig = _figure(9, 1.3 + 0.42 * len(rows) * len(BASELINES) / 2)
    ax = fig.add_subplot()
    height = 0.8 / len(BASELINES)
    values, levels = [], set()
    for j, b in enumerate(BASELINES):
        for i, (_, markers) in enumerate(rows):
            mk = markers[b]
            if mk["ratio"] is None:
                continue
            y, v = i + (j - (len(BASELINES) - 1) / 2) * height, mk["ratio"]
            values.append(v)
            levels.add(mk["level"])
            colour = LEVEL_COLOURS[mk["level"]]
            # bars grow from 1: leftwards when the driver is faster, rightwards when slower
            ax.barh([y], [v - 1.0], left=1.0, height=height * 0.9, color=colour, alpha=0.85,
                    hatch=_HATCHES[b], edgecolor="white" if _HATCHES[b] else colour)
            ax.text(v * (1.04 if v >= 1 else 1 / 1.04), y, f"{mk['text']} vs {b}", va="center",
                    ha="left" if v >= 1 else "right", fontsize=7, color=colour)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    values = [v for v in values if v > 0]
    lo, hi = min(values + [1.0]), max(values + [1.0])
    ax.set_xlim(lo / (6 if lo < 1 else 1.5), hi * 4)   # room for the bars' words
    from matplotlib.ticker import FuncFormatter
    times = FuncFormatter(lambda v, _: f"{v:g}\u00d7")
    ax.xaxis.set_major_formatter(times)
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}\u00d7" if f"{v:.0e}"[0] in "25" else ""))
    ax.set_yticks(range(len(rows)), [n for n, _ in rows], fontsize=8)
    ax.invert_yaxis()
    handles = [Patch(facecolor="#999999", edgecolor="white", hatch=_HATCHES[b], label=f"vs TFLite {b}")
               for b in BASELINES]
    handles += [Patch(color=LEVEL_COLOURS[lv], label=_RATIO_LEGEND[lv]) for lv in ("good", "warn", "bad")
                if lv in levels]
    return _finish(fig, ax, chart_id, f"latency ratio {mode}", f"Latency ratio, driver {mode} vs TFLite (1 thread)",
                   f"driver {mode} mean latency / TFLite mean latency (< 1: driver faster)", grid_axis="x",
                   handles=handles)


def layers_chart(model: dict, chart_id: str) -> str | None:
    """SVG of the divergence locator's per-layer figures: each compared operator output's
    worst error as a multiple of its tolerance (:func:`reports.mlts.layer_ratio`), log y, a
    line at 1 (above: beyond tolerance); points within tolerance green, points beyond it in
    the locator's level colour (:func:`reports.mlts.divergence_judgement`: amber for
    accumulated drift, red when an operator is beyond in isolation), non-finite ones drawn
    as triangles at the top; the title counts them ("25 of 31 compared layers beyond
    tolerance") and the first divergent operator is marked; None without per-layer figures."""
    acc = model.get("accuracy") or {}
    floor = 1e-6
    points = [(la, r) for la in acc.get("layers") or [] if (r := layer_ratio(la)) is not None]
    if not points:
        return None
    compared, beyond, _ = layer_counts(acc)
    div = acc.get("divergence") or {}
    beyond_colour = LEVEL_COLOURS["bad" if div.get("found") else "warn"]
    finite = [r for _, r in points if math.isfinite(r)]
    top = max(finite + [10.0]) * 3
    ys = [max(r, floor) if math.isfinite(r) else top for _, r in points]
    fig = _figure(9, 2.6)
    ax = fig.add_subplot()
    xs = list(range(len(points)))
    ax.plot(xs, ys, linewidth=1, color="#999999")
    inside = [(x, y) for x, y, (_, r) in zip(xs, ys, points) if r <= 1.0]
    outside = [(x, y, math.isfinite(r)) for x, y, (_, r) in zip(xs, ys, points) if not r <= 1.0]
    if inside:
        ax.plot(*zip(*inside), marker="o", markersize=3, linestyle="none", color=LEVEL_COLOURS["good"],
                label="within tolerance")
    for fin, marker, word in ((True, "o", "beyond tolerance"), (False, "^", "not finite (shape or NaN)")):
        pts = [(x, y) for x, y, f in outside if f == fin]
        if pts:
            ax.plot(*zip(*pts), marker=marker, markersize=4, linestyle="none", color=beyond_colour, label=word)
    ax.axhline(1.0, color="#bb0000", linestyle="--", linewidth=1, label="tolerance")
    if div.get("found"):
        hits = [i for i, (la, _) in enumerate(points) if la.get("operator") == div.get("operator")]
        if hits:
            ax.plot([hits[0]], [ys[hits[0]]], marker="X", markersize=10, color=LEVEL_COLOURS["bad"], linestyle="none",
                    label=f"first divergence: op {div.get('operator')} {div.get('builtin', '')}")
    ax.set_yscale("log")
    counted = (f"{beyond} of {compared} compared layers beyond tolerance" if beyond
               else f"all {compared} compared layers within tolerance")
    return _finish(fig, ax, chart_id, f"{model['name']} per-layer error",
                   f"{model['name']}: per-layer error against TFLite\n{counted}",
                   "compared operator output (TFLite execution order)", "error / tolerance")


# ---------------------------------------------------------------- files

def _fmt(v, spec: str = ".3g") -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


#: Columns of ``<stem>.csv`` (one row per model).
CSV_COLUMNS = (
    ["model", "kind", "status", "source", "operators", "mapped", "fallback_operators", "compile_no_cache_s",
     "compile_with_cache_s"]
    + [f"driver_{m}_{s}_ms" for m in DRIVER_MODES for s in ("mean", "p50", "p90", "p99")]
    + [f"tflite_{b}_{s}_ms" for b in BASELINES for s in ("mean", "p50", "p90", "p99")]
    + [f"ratio_{m}_vs_{b}" for m in DRIVER_MODES for b in BASELINES]
    + ["max_mse", "max_error", "top_k_agreement", "detection_iou", "within_tolerance", "accuracy_level",
       "layers_compared", "layers_beyond", "first_divergence", "precision_ratio", "tflite_precision_ratio",
       "precision_level", "errors"])


def csv_rows(doc: dict) -> list[dict]:
    """One dict per model with :data:`CSV_COLUMNS` (empty string where not measured);
    ``accuracy_level``, ``layers_compared`` and ``layers_beyond`` are the accuracy judgement's
    (:func:`reports.mlts.accuracy_judgement`); ``precision_ratio`` / ``tflite_precision_ratio``
    the worst output's error against the float64 truth over the reference float32 path's own
    (the driver's, TFLite's) and ``precision_level`` its grade
    (:func:`reports.mlts.precision_judgement`)."""
    rows = []
    for m in doc.get("models") or []:
        mp, cp = m.get("mapping") or {}, m.get("compile") or {}
        lat, acc = m.get("latency") or {}, m.get("accuracy") or {}
        row = {"model": m["name"], "kind": m.get("kind"), "status": model_status(m), "source": m.get("source"),
               "operators": mp.get("operators"), "mapped": mp.get("mapped"),
               "fallback_operators": " ".join(f["builtin"] for f in mp.get("fallback") or []),
               "compile_no_cache_s": cp.get("no_cache_s"), "compile_with_cache_s": cp.get("with_cache_s")}
        for kind, names in (("driver", DRIVER_MODES), ("tflite", BASELINES)):
            for n in names:
                s = (lat.get(kind) or {}).get(n) or {}
                for q in ("mean", "p50", "p90", "p99"):
                    row[f"{kind}_{n}_{q}_ms"] = s.get(f"{q}_ms")
        for mo in DRIVER_MODES:
            for b in BASELINES:
                row[f"ratio_{mo}_vs_{b}"] = latency_ratio(m, mo, b)
        row["max_mse"], row["max_error"] = _max_errors(acc)
        row["top_k_agreement"] = (acc.get("top_k") or {}).get("agreement")
        row["detection_iou"] = (acc.get("detection") or {}).get("iou")
        row["within_tolerance"] = acc.get("within_tolerance") if acc else None
        judged_all = judge_model(m)
        judged = judged_all["accuracy"]
        row["accuracy_level"] = judged["level"]
        if acc:
            row["layers_compared"], row["layers_beyond"] = judged["layers_compared"], judged["layers_beyond"]
        div = acc.get("divergence") or {}
        row["first_divergence"] = (f"op {div.get('operator')} {div.get('builtin', '')}".strip()
                                   if div.get("found") else ("none" if div else None))
        tw = acc.get("three_way") or {}
        row["precision_ratio"], row["tflite_precision_ratio"] = tw.get("ratio"), tw.get("tflite_ratio")
        row["precision_level"] = (judged_all.get("precision") or {}).get("level")
        row["errors"] = "; ".join(f"{e['stage']}: {e['message']}" for e in m.get("errors") or [])
        rows.append({k: ("" if row.get(k) is None else row[k]) for k in CSV_COLUMNS})
    return rows


def _write_csv(path: Path, columns, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(columns))
        w.writeheader()
        w.writerows(rows)


def _json_default(o):
    """numpy scalars and arrays, Paths, anything else by str()."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def render_html(doc: dict) -> str:
    """The page for the run document ``doc`` (see the module docstring). Every word and
    colour of a judgement comes from :func:`reports.mlts.judge_model` (``judgement`` of each
    view and summary row)."""
    models = doc.get("models") or []
    views = []
    for i, m in enumerate(models):
        judged = judge_model(m)
        lat = m.get("latency") or {}
        driver_rows = [{"label": f"driver {mode}", "stats": lat["driver"][mode], "markers": markers}
                       for mode, markers in judged["latency"].items()]
        baseline_rows = [{"label": f"TFLite {b}", "stats": s} for b, s in (lat.get("tflite") or {}).items() if s]
        mp = m.get("mapping") or {}
        acc = m.get("accuracy") or {}
        hist = _cached(histogram_chart, [m["name"], m.get("latency")], f"hist-{i}", m, f"hist-{i}")
        layers = _cached(layers_chart, [m["name"], acc.get("layers"), acc.get("divergence")], f"layers-{i}",
                         m, f"layers-{i}")
        views.append({"model": m, "judgement": judged, "driver_rows": driver_rows,
                      "fallback": group_operators(mp.get("fallback")), "folded": group_operators(mp.get("folded")),
                      "max_mse": _max_errors(m.get("accuracy"))[0], "max_error": _max_errors(m.get("accuracy"))[1],
                      "baseline_rows": baseline_rows,
                      "histogram": hist, "layers": layers})
    summary_rows = []
    for v in views:
        m, lat = v["model"], v["model"].get("latency") or {}
        sync = (lat.get("driver") or {}).get("sync") or {}
        summary_rows.append({"name": m["name"], "judgement": v["judgement"], "sync": sync.get("mean_ms"),
                             "baselines": {b: ((lat.get("tflite") or {}).get(b) or {}).get("mean_ms")
                                           for b in BASELINES},
                             "markers": v["judgement"]["latency"].get("sync") or {b: ratio_marker(None) for b in BASELINES}})
    return _ENV.get_template("mlts.html.j2").render(
        doc=doc, views=views, summary_rows=summary_rows, totals=totals(doc), baselines=BASELINES,
        ratio_chart=ratio_chart(doc, "ratio-sync"), fmt=_fmt, par_band=PAR_BAND, slow_ratio=SLOW_RATIO,
        colours=LEVEL_COLOURS, status_level=status_level, outcome_level=outcome_level,
        precision_level=precision_level, precision_ratio=PRECISION_RATIO,
        graded=any((m.get("accuracy") or {}).get("three_way") for m in models),
        stress=stress_rows(doc.get("stress")))


def judged_document(doc: dict) -> dict:
    """``doc`` as ``<stem>.json`` holds it: the run document with each model's judgements
    (``"judgement"``: :func:`reports.mlts.judge_model`, the words and levels the page shows);
    ``doc`` itself is not changed."""
    return {**doc, "models": [{**m, "judgement": judge_model(m)} for m in doc.get("models") or []]}


def write_report(doc: dict, out_dir: str | Path, stem: str = "mlts") -> list[Path]:
    """Write ``<stem>.html``, ``<stem>.json`` (:func:`judged_document`) and ``<stem>.csv`` (one row per model; plus
    ``<stem>-stress.csv`` when ``doc["stress"]`` has outcomes, which is ``<stem>.csv`` itself
    in a run without models) into ``out_dir`` (created), each replaced atomically
    so a reader never sees half a file; returns their paths. ``doc["generated"]`` is set to now
    when missing."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc.setdefault("generated", datetime.datetime.now().isoformat(timespec="seconds"))
    paths = []

    def put(name: str, writer) -> None:
        tmp = out / (name + ".tmp")
        writer(tmp)
        tmp.replace(out / name)
        paths.append(out / name)

    put(f"{stem}.html", lambda p: p.write_text(render_html(doc), encoding="utf-8"))
    put(f"{stem}.json", lambda p: p.write_text(json.dumps(judged_document(doc), indent=1, default=_json_default),
                                               encoding="utf-8"))
    if doc.get("models"):
        put(f"{stem}.csv", lambda p: _write_csv(p, CSV_COLUMNS, csv_rows(doc)))
    if doc.get("stress"):
        cols = ["test", "driver", "outcome", "expected", "duration_s", "detail", "params"]
        put(f"{stem}-stress.csv" if doc.get("models") else f"{stem}.csv", lambda p: _write_csv(
            p, cols, [{c: ("" if r.get(c) is None else r.get(c)) for c in cols} for r in stress_rows(doc["stress"])]))
    return paths
