"""The verdict of a certification bundle as its report page shows it, and as ``nncts diff``
compares it.

A bundle (``nncts certify --out DIR``) holds ``verdict.json`` (``certified``, ``verdict``,
``scope``, ``reasons`` and one entry per suite: ``status``, ``reason``, ``counts``,
``seconds``, ``failures``: :mod:`nncts.certify`) and each suite's results under
``results/<suite>/``. :func:`for_run` turns them into what the page's verdict section
(``templates/_verdict.html.j2``) renders: every suite, fuzz and MLTS included, with its
verdict, the reason when it did not pass, its failing clusters
(:func:`reports.clusters.cluster_failures` over its records) or its failing models or fuzz
findings, and relative links to its own page and console log in the bundle.
:func:`write_fuzz_page` writes the fuzzer's page (``results/fuzz/index.html``), the one suite
that writes none itself. :func:`compare` is the ``verdict`` heading of ``nncts diff``.

``verdict.json`` may come from someone else's bundle: its values are only shown (the page
escapes them) and fields of the wrong type count as absent.
"""
from __future__ import annotations

import os
import urllib.parse
from pathlib import Path


from harness.records import read_json, read_records
from harness.suites import suite as suite_spec

from .clusters import cluster_failures
from .templating import ENV

VERDICT, RESULTS = "verdict.json", "results"
#: Where ``nncts certify`` writes the bundle's report (links are relative to it by default).
REPORT_DIR = "report"
#: A suite's own page in its results directory: the first of these that exists.
SUITE_PAGES = ("index.html", "mlts.html")
CONSOLE_LOG = "console.log"
#: Most test ids a cluster lists on the page (its count is always complete).
MAX_TESTS_SHOWN = 50
#: Most clusters of one suite the verdict shows (the largest; the page's failure clusters
#: and failures list have them all).
MAX_CLUSTERS_SHOWN = 20



def bundle_of(dirs) -> Path | None:
    """The one bundle the run directories ``dirs`` (paths, or loaded
    :class:`reports.run.SuiteDir` objects) belong to: a directory holding ``verdict.json``,
    or the bundle of a ``<bundle>/results/<suite>`` directory; None when they are not of a
    bundle or of more than one."""
    found = set()
    for d in dirs:
        p = Path(getattr(d, "path", d)).resolve()
        if (p / VERDICT).is_file():
            found.add(p)
        elif p.parent.name == RESULTS and (p.parent.parent / VERDICT).is_file():
            found.add(p.parent.parent)
        else:
            return None
    return found.pop() if len(found) == 1 else None


def _href(target: Path, page_dir: Path) -> str:
    """A relative URL from a page in ``page_dir`` to ``target``."""
    return urllib.parse.quote(Path(os.path.relpath(target, page_dir)).as_posix())


def _links(bundle: Path, name: str, page_dir: Path) -> list[dict]:
    """``[{"text", "href"}]``: the suite's own page and console log, those that exist."""
    folder = bundle / RESULTS / name
    page = next((folder / p for p in SUITE_PAGES if (folder / p).is_file()), None)
    targets = [("page", page), ("console log", folder / CONSOLE_LOG)]
    return [{"text": text, "href": _href(t, page_dir)} for text, t in targets if t is not None and t.is_file()]


def _records(dirs, folder: Path) -> tuple[list[dict], dict]:
    """(records, run meta) of the suite directory ``folder``: from ``dirs`` when one of them
    is it (a loaded :class:`reports.run.SuiteDir`), else read from its ``outcomes.jsonl``
    (strictly: a bundle may come from elsewhere) and ``summary.json``; ([], {}) without
    records."""
    for d in dirs:
        if hasattr(d, "records") and Path(d.path).resolve() == folder.resolve():
            return d.records, d.meta
    if not (folder / "outcomes.jsonl").is_file():
        return [], {}
    summary = read_json(folder / "summary.json") if (folder / "summary.json").is_file() else {}
    meta = summary.get("meta") if isinstance(summary, dict) else None
    return read_records(folder / "outcomes.jsonl", strict=True), meta if isinstance(meta, dict) else {}


def _dicts(value) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _strings(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _failures(entries: list[dict], bundle: Path, page_dir: Path) -> list[dict]:
    """Failing MLTS models and fuzz findings as the page lists them (a finding's file linked)."""
    out = []
    for f in entries:
        row = {k: str(f.get(k, "")) for k in ("id", "outcome", "kind", "phase", "message", "replay")}
        file = f.get("file")
        row["href"] = _href(bundle / file, page_dir) if isinstance(file, str) and (bundle / file).is_file() \
            and (bundle / file).resolve().is_relative_to(bundle) else ""
        out.append(row)
    return out


def _label(entry: dict) -> str:
    """The suite's verdict in words: passed, failed, not run, or either of the last two with
    `` (not required)`` (an unavailable MLTS; a suite the verdict did not count: ``required``
    false, the precision sweeps unless the profile names them)."""
    status = str(entry.get("status", "unknown"))
    if status == "not run" and entry.get("suite") == "mlts" and "left out" not in str(entry.get("reason", "")):
        return "not run (not required)"
    if status != "passed" and entry.get("required") is False:
        return f"{status} (not required)"
    return status


def suite_entries(bundle: Path, doc: dict, dirs=(), page_dir: Path | None = None,
                  only: str | None = None) -> list[dict]:
    """One entry per suite of ``verdict.json``'s document ``doc``: ``suite``, ``title``,
    ``status``, ``label`` (:func:`_label`), ``reason``, ``counts``, ``seconds``,
    ``failures_total``, ``links`` (relative to ``page_dir``, default ``<bundle>/report``),
    ``clusters`` (a pytest suite's :data:`MAX_CLUSTERS_SHOWN` largest failing clusters, each
    with at most :data:`MAX_TESTS_SHOWN` ``tests`` and ``more``: how many it leaves out),
    ``clusters_total`` (how many clusters there are) and ``failures``
    (failing MLTS models, fuzz findings). ``only``: just that suite's entry."""
    page_dir = Path(page_dir) if page_dir is not None else bundle / REPORT_DIR
    out = []
    for s in _dicts(doc.get("suites")):
        name = str(s.get("suite", "?"))
        if only is not None and name != only:
            continue
        try:
            spec = suite_spec(name)
        except ValueError:
            spec = None
        folder = bundle / RESULTS / name
        clusters, clusters_total = [], 0
        if spec is not None and spec.runs_under_pytest:
            records, meta = _records(dirs, folder)
            clusters = cluster_failures(records, meta)
            clusters_total = len(clusters)
            clusters = [dict(c, tests=c["tests"][:MAX_TESTS_SHOWN], more=max(0, c["count"] - MAX_TESTS_SHOWN))
                        for c in clusters[:MAX_CLUSTERS_SHOWN]]
        counts = s.get("counts") if isinstance(s.get("counts"), dict) else {}
        out.append({"suite": name, "title": spec.title if spec else name, "status": str(s.get("status", "unknown")),
                    "label": _label(s), "reason": str(s.get("reason") or ""), "counts": counts,
                    "seconds": s.get("seconds") if isinstance(s.get("seconds"), (int, float)) else 0.0,
                    "failures_total": s.get("failures_total", 0), "links": _links(bundle, name, page_dir),
                    "clusters": clusters, "clusters_total": clusters_total,
                    "failures": [] if clusters else _failures(_dicts(s.get("failures")), bundle, page_dir)})
    return out


def read_verdict(bundle: Path) -> dict:
    """``<bundle>/verdict.json`` as a dict. ValueError (one line, naming the file) when it
    cannot be read or is not a JSON object."""
    doc = read_json(Path(bundle) / VERDICT)
    if not isinstance(doc, dict):
        raise ValueError(f"{Path(bundle) / VERDICT}: not a JSON object")
    return doc


def for_run(dirs, page_dir: Path | None = None) -> dict | None:
    """The verdict section of the page of a run made of ``dirs`` (paths or loaded
    :class:`reports.run.SuiteDir`): None when they are not one bundle's (:func:`bundle_of`);
    else ``{"verdict", "certified", "passed", "scope", "scope_reasons", "reasons", "driver",
    "profile", "modes", "quick", "fuzz_seconds", "suites": suite_entries(...)}`` with links
    relative to ``page_dir`` (default ``<bundle>/report``, where ``nncts certify`` writes
    the page). A bundle made before scopes existed has ``scope`` "quick" when its ``quick``
    is true, else "unknown". ValueError (one line) for an unreadable ``verdict.json``."""
    bundle = bundle_of(dirs)
    if bundle is None:
        return None
    doc = read_verdict(bundle)
    scope = doc.get("scope") if isinstance(doc.get("scope"), str) else "quick" if doc.get("quick") is True \
        else "unknown"
    return {"verdict": str(doc.get("verdict", "unknown")), "certified": doc.get("certified") is True,
            "passed": doc.get("passed", doc.get("certified")) is True, "scope": scope,
            "scope_reasons": _strings(doc.get("scope_reasons")), "reasons": _strings(doc.get("reasons")),
            **{k: doc.get(k) for k in ("driver", "profile", "modes", "quick", "fuzz_seconds")},
            "suites": suite_entries(bundle, doc, dirs, page_dir)}


def write_fuzz_page(bundle: Path) -> Path | None:
    """Write the fuzzer's page, ``<bundle>/results/fuzz/index.html`` (template
    ``fuzz.html.j2``: libFuzzer's executions and rate, the time and budget, each finding with
    its file and replay command), from ``verdict.json``; returns its path, None when the
    fuzzer did not run. ValueError for an unreadable ``verdict.json``."""
    bundle = Path(bundle).resolve()
    folder = bundle / RESULTS / "fuzz"
    doc = read_verdict(bundle)
    entry = next(iter(suite_entries(bundle, doc, page_dir=folder, only="fuzz")), None)
    if entry is None or entry["status"] == "not run" or not folder.is_dir():
        return None
    entry["links"] = [link for link in entry["links"] if link["text"] != "page"]
    page = folder / "index.html"
    page.write_text(ENV.get_template("fuzz.html.j2").render(s=entry, driver=doc.get("driver")), encoding="utf-8")
    return page


def headline(v: dict | None) -> str:
    """A :func:`for_run` document's verdict in one line: ``certified``; or the verdict and
    what the suites did (``not certified (quick run): every required suite passed``, ``not
    certified: cts failed, fuzz not run``); ``not a bundle`` for None."""
    if v is None:
        return "not a bundle"
    if v["certified"]:
        return v["verdict"]
    if v["passed"]:
        return f"{v['verdict']}: every required suite passed"
    bad = [f"{s['suite']} {s['label']}" for s in v["suites"]
           if s["status"] != "passed" and not s["label"].endswith("(not required)")]
    return f"{v['verdict']}: {', '.join(bad) or 'no suite results'}"


def compare(a: dict | None, b: dict | None) -> list[dict]:
    """The ``verdict`` heading of ``nncts diff``: ``[]`` when neither run is a bundle or
    nothing changed; else an entry ``{"what": "verdict", "from", "to", "why": [B's reasons
    that A has not]}`` when the :func:`headline` differs, then ``{"what": <suite>, "from", "to",
    "why"}`` for each suite whose verdict differs (``why``: B's reason or failing count and
    largest cluster, when B's side did not pass). ``a``/``b``: :func:`for_run` documents
    (None: not a bundle, shown as "not a bundle")."""
    if a is None and b is None:
        return []
    out = []
    va, vb = headline(a), headline(b)
    if va != vb:
        reasons_a = set(a["reasons"]) if a else set()
        out.append({"what": "verdict", "from": va, "to": vb,
                    "why": [r for r in (b["reasons"] if b else []) if r not in reasons_a]})
    suites_a = {s["suite"]: s for s in (a or {}).get("suites", [])}
    suites_b = {s["suite"]: s for s in (b or {}).get("suites", [])}
    for name in [*suites_a, *(n for n in suites_b if n not in suites_a)]:
        sa, sb = suites_a.get(name), suites_b.get(name)
        la, lb = (s["label"] if s else "absent" for s in (sa, sb))
        if la != lb:
            why = [_why(sb)] if sb and sb["status"] != "passed" else []
            out.append({"what": name, "from": la, "to": lb, "why": why})
    return out


def _why(entry: dict) -> str:
    """Why a suite did not pass, in one line: its reason, or its failing count and largest
    cluster (or first failing model or finding)."""
    if entry["reason"]:
        return entry["reason"]
    if entry["clusters"]:
        c = entry["clusters"][0]
        return (f"{entry['failures_total']} failing; largest cluster: {c['operation']} x {c['operand_type']}, "
                f"{c['mode'] or 'no mode'}: {c['count']} tests: {c['pattern'][:120]}")
    first = entry["failures"][0] if entry["failures"] else None
    return f"{entry['failures_total']} failing" + (f"; first: {first['id']} {first['message'][:120]}" if first else "")
