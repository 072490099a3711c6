"""``nncts merge SHARD_DIR... --out DIR [--title T]``: one run from the report directories of
its shards (``nncts cts --shard I/N --report-dir D``, see :mod:`harness.sharding`).

The merged directory gets ``outcomes.jsonl`` (every test once), ``junit.xml`` (built from
those records: :mod:`reports.junit`), ``summary.json`` and ``index.html``
(:func:`reports.html.write_reports`), the shards named in the summary's run description.

Errors (one line on stderr, exit 2): a directory that is missing or has no
``outcomes.jsonl`` or ``shard.json``; a malformed one (a line that is not a record, other
than a truncated last line of a killed run); shards of different N or of different drivers;
a test recorded by two shards with different outcomes. A test two shards record with the
same outcome is kept once and counted as a duplicate in the summary; shards of the N that
were not given (e.g. 1/3 and 3/3 given, 2/3 missing), and a shard with fewer records than
tests it selected, are warnings on stderr and in the summary.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.sharding import SHARD_FILE

RECORDS = "outcomes.jsonl"


@dataclass
class Shard:
    """One shard's report directory: shard ``index`` of ``count``, its driver, its records
    (one per test id), its run description (summary.json's ``meta``) and how many tests it
    selected (None when unknown)."""

    path: Path
    index: int
    count: int
    driver: str
    records: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    selected: int | None = None

    @property
    def name(self) -> str:
        return f"{self.index}/{self.count}"


def read_outcomes(path: Path) -> list[dict]:
    """The records of an outcomes.jsonl (:func:`harness.records.read_records`, strict), the
    last one per test id (a resumed run may record a test again). ValueError naming the file
    and line for a line that is not an outcome record (a truncated last line is dropped)."""
    from harness.records import read_records
    by_id: dict[str, dict] = {}
    for record in read_records(path, strict=True):
        by_id.pop(record["id"], None)
        by_id[record["id"]] = record
    return list(by_id.values())


def load_shard(path) -> Shard:
    """Load a shard's report directory. ValueError (one line, naming it) when it is missing,
    lacks outcomes.jsonl or shard.json, or either is malformed."""
    from harness.sharding import parse_shard
    from harness.records import read_json
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"{path}: no such directory")
    for name in (RECORDS, SHARD_FILE):
        if not (path / name).is_file():
            hint = " (not written by a --shard run)" if name == SHARD_FILE else ""
            raise ValueError(f"{path}: no {name}{hint}")
    doc = read_json(path / SHARD_FILE)
    try:
        index, count = parse_shard(f"{doc.get('shard')}/{doc.get('of')}")
    except ValueError as e:
        raise ValueError(f"{path / SHARD_FILE}: {e}") from None
    meta = read_json(path / "summary.json").get("meta") or {} if (path / "summary.json").is_file() else {}
    if not isinstance(meta, dict):
        raise ValueError(f"{path / 'summary.json'}: field 'meta' must be an object")
    selected = doc.get("selected")
    return Shard(path, index, count, str(doc.get("driver") or meta.get("driver") or "?"),
                 read_outcomes(path / RECORDS), meta, selected if isinstance(selected, int) else None)


def check_shards(shards: list[Shard]) -> list[str]:
    """ValueError when the shards are of different N or drivers; else the warnings: shards
    of N not given, a shard given twice, a shard with fewer records than tests it selected."""
    for attr, what in (("count", "N"), ("driver", "drivers")):
        values = {getattr(s, attr) for s in shards}
        if len(values) > 1:
            listing = ", ".join(f"{s.path} ({s.name}, driver {s.driver})" for s in shards)
            raise ValueError(f"shards of different {what}: {listing}")
    count = shards[0].count
    given = [s.index for s in shards]
    warnings = []
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in given]
    if missing:
        warnings.append(f"missing shard(s) {', '.join(missing)}: the merged run lacks their tests")
    for i in sorted({i for i in given if given.count(i) > 1}):
        warnings.append(f"shard {i}/{count} given twice: " + ", ".join(str(s.path) for s in shards if s.index == i))
    for s in shards:
        if s.selected is not None and len(s.records) < s.selected:
            warnings.append(f"shard {s.name} ({s.path}) recorded {len(s.records)} of the {s.selected} tests "
                            f"it selected (killed? nncts cts --resume finishes it)")
    return warnings


def merge_records(shards: list[Shard]) -> tuple[list[dict], list[str]]:
    """``(records, duplicates)``: every test id once, in shard order; ``duplicates`` the ids
    two shards record with the same outcome. ValueError naming the first id two shards record
    with different outcomes."""
    seen: dict[str, tuple[dict, Shard]] = {}
    duplicates = []
    for shard in shards:
        for record in shard.records:
            first = seen.get(record["id"])
            if first is None:
                seen[record["id"]] = (record, shard)
            elif first[0]["outcome"] != record["outcome"]:
                raise ValueError(f"test {record['id']} recorded with different outcomes: {first[0]['outcome']} "
                                 f"by shard {first[1].name} ({first[1].path}), {record['outcome']} by shard "
                                 f"{shard.name} ({shard.path})")
            else:
                duplicates.append(record["id"])
    return [record for record, _ in seen.values()], duplicates


def merge(dirs, out, title: str | None = None) -> tuple[list[Path], list[str], dict]:
    """Merge the shard directories ``dirs`` into ``out`` (created): returns the files written,
    the warnings and the run description. ValueError (one line) for any error above, or an
    ``out`` that is one of the shards or cannot be written."""
    from reports import junit
    from reports.html import write_reports
    shards = [load_shard(d) for d in dirs]
    out = Path(out)
    if any(out.resolve() == s.path.resolve() for s in shards):
        raise ValueError(f"--out {out}: one of the shard directories; choose another")
    warnings = check_shards(shards)
    records, duplicates = merge_records(shards)
    try:
        out.mkdir(parents=True, exist_ok=True)
        records_path = out / RECORDS
        records_path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records), encoding="utf-8")
        junit_path = junit.write(records, out / "junit.xml")
    except OSError as e:
        raise ValueError(f"--out {out}: cannot write ({e.strerror or e})") from None
    meta = {k: v for k, v in shards[0].meta.items() if k != "pytest_exit_code"}
    meta.update({"driver": meta.get("driver", shards[0].driver),
                 "shards": ", ".join(s.name for s in shards),
                 "shard directories": [str(s.path) for s in shards],
                 "pytest exit codes": [s.meta.get("pytest_exit_code") for s in shards],
                 "duplicates": len(duplicates)})
    if duplicates:
        meta["duplicate tests"] = duplicates[:100]
    if warnings:
        meta["warnings"] = warnings
    suite = meta.get("suite", "cts")
    title = title or f"nncts {suite}: driver {meta['driver']} ({len(shards)} of {shards[0].count} shards merged)"
    paths = write_reports(records_path, out, title=title, meta=meta)
    return [records_path, junit_path, *paths], warnings, meta


def _merge(args, parser) -> int:
    try:
        paths, warnings, meta = merge(args.shard_dirs, args.out, args.title)
    except ValueError as e:
        parser.exit(2, f"nncts merge: error: {' '.join(str(e).split())}\n")
    for warning in warnings:
        print(f"nncts merge: warning: {warning}", file=sys.stderr)
    if meta["duplicates"]:
        print(f"{meta['duplicates']} duplicate test(s): recorded by two shards with the same outcome, kept once")
    print("merged:", ", ".join(str(p) for p in paths))
    return 0


def add_parsers(sub) -> None:
    """Add ``merge`` to the nncts parser's subparsers ``sub`` (``set_defaults(handler=...)``;
    the handler takes (args, parser) and returns the exit code)."""
    p = sub.add_parser("merge", help="merge the report directories of a run's shards (--shard I/N) into one "
                                     "run: outcomes.jsonl, junit.xml, summary.json, index.html")
    p.add_argument("shard_dirs", nargs="+", metavar="SHARD_DIR", help="a shard's report directory")
    p.add_argument("--out", required=True, metavar="DIR", help="where the merged run goes (created)")
    p.add_argument("--title", default=None, help="page title (default: suite, driver and shards)")
    p.set_defaults(handler=_merge)
