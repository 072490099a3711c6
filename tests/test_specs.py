"""Our own golden specs (cts/specs): built files are up to date, every model names an
independent golden source, and the builder never imports the operation table."""
import gzip
import json
import subprocess
import sys

from cts.specs import BUILT, FAMILIES, VERSION
from tests.cts_run import ROOT


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


def test_every_model_names_an_independent_golden_source():
    for family in FAMILIES:
        with gzip.open(BUILT / VERSION / f"{family}.json.gz", "rt") as f:
            doc = json.load(f)
        for m in doc["models"]:
            source = m["golden_source"]
            assert source.startswith(("hand calculation", "numpy formula")), (m["name"], source)
