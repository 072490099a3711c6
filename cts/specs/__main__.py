"""``python -m cts.specs build [--out DIR]`` writes the built spec documents;
``python -m cts.specs check`` rebuilds them in a temporary directory, prints how many files
it checked and exits 1 naming every built file that differs from the fresh build (run after
editing a spec)."""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from runtime.testing.corpus_writer import model_json, write_document

from . import BUILT, FAMILIES, VERSION, family_models


def build(out: Path) -> list[Path]:
    """Write one document per family under ``out/SPECS``; returns the paths."""
    paths = []
    for family in FAMILIES:
        models = [model_json(tm, {"golden_source": golden}) for tm, golden in family_models(family)]
        path = out / VERSION / f"{family}.json.gz"
        write_document(path, family, VERSION, models, f"cts/specs/{family}.py")
        paths.append(path)
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m cts.specs", description=__doc__)
    p.add_argument("command", choices=("build", "check"))
    p.add_argument("--out", type=Path, default=BUILT)
    args = p.parse_args(argv)
    if args.command == "build":
        for path in build(args.out):
            print(f"wrote {path}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = build(Path(tmp))
        stale = [f.name for f in fresh
                 if not (BUILT / VERSION / f.name).exists()
                 or (BUILT / VERSION / f.name).read_bytes() != f.read_bytes()]
    for name in stale:
        print(f"stale: cts/specs/built/{VERSION}/{name} (run python -m cts.specs build)")
    print(f"checked {len(fresh)} built spec files in cts/specs/built/{VERSION} against a fresh build: "
          + (f"{len(stale)} stale" if stale else "all current"))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
