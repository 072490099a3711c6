"""Timing charts of a run as inline SVG (pygal, without its JavaScript: no CDN reference,
no script in the page): seconds per suite and mode, the slowest tests, and a histogram of
test durations by decade.

Colours by meaning: on the page red is a failure and green a pass, so durations (no
verdict) are drawn in one neutral blue, whatever the outcomes (pygal's default first series
colour is red)."""
from __future__ import annotations

import collections
import math
import re

import pygal
from pygal.style import DefaultStyle

#: pygal's generator comments (with the project's URLs) and its inline configuration script,
#: which only its (omitted) tooltip JavaScript reads.
_STRIP = re.compile(r"<!--.*?-->|<script\b.*?</script>", re.S)
#: Histogram bins: upper bounds in seconds and their labels.
BINS = ((1e-3, "< 1 ms"), (1e-2, "1-10 ms"), (1e-1, "10-100 ms"), (1.0, "0.1-1 s"), (10.0, "1-10 s"),
        (math.inf, ">= 10 s"))
#: The one colour of every timing series: neither the page's failure red nor its pass green.
NEUTRAL = "#4a78a8"


def _config(title: str, height: int) -> dict:
    return dict(title=title, js=[], disable_xml_declaration=True, width=900, height=height,
                show_legend=False, print_values=True, truncate_label=60, explicit_size=True,
                style=DefaultStyle(colors=(NEUTRAL,), value_font_size=9, label_font_size=9))


def _svg(chart) -> str:
    return _STRIP.sub("", chart.render(is_unicode=True))


def seconds_per_mode(records) -> dict[str, float]:
    """``"<suite> <mode>"`` -> summed test durations (seconds), in first-seen order."""
    out: dict[str, float] = collections.defaultdict(float)
    for r in records:
        out[f"{r.get('suite', 'cts')} {r.get('mode', 'sync')}"] += r.get("duration_s", 0.0)
    return dict(out)


def histogram(records) -> list[int]:
    """Number of tests whose duration falls in each of :data:`BINS`."""
    counts = [0] * len(BINS)
    for r in records:
        d = r.get("duration_s", 0.0)
        counts[next(i for i, (upper, _) in enumerate(BINS) if d < upper)] += 1
    return counts


def slowest(records, n: int = 15) -> list[dict]:
    """The ``n`` longest-running records, longest first."""
    return sorted(records, key=lambda r: -r.get("duration_s", 0.0))[:n]


def timing_charts(records) -> dict[str, str]:
    """``{"per_mode", "slowest", "histogram"}`` -> an ``<svg>`` element (str) each; {} for
    no records."""
    if not records:
        return {}
    modes = seconds_per_mode(records)
    per_mode = pygal.HorizontalBar(**_config("Seconds per suite and mode", 80 + 28 * len(modes)))
    per_mode.x_labels = list(modes)[::-1]  # a horizontal bar chart draws its first bar lowest
    per_mode.add("seconds", [round(s, 3) for s in modes.values()][::-1])
    top = slowest(records)[::-1]
    slow = pygal.HorizontalBar(**_config(f"Slowest {len(top)} tests (seconds)", 80 + 28 * len(top)))
    slow.x_labels = [f"{r.get('suite', 'cts')} {r['id']}" for r in top]
    slow.add("seconds", [round(r.get("duration_s", 0.0), 4) for r in top])  # longest on top
    hist = pygal.Bar(**_config("Tests by duration", 360))
    hist.x_labels = [label for _, label in BINS]
    hist.add("tests", histogram(records))
    return {"per_mode": _svg(per_mode), "slowest": _svg(slow), "histogram": _svg(hist)}
