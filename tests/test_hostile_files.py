"""Every file nncts reads is hostile until checked (runtime.files): a gzip bomb, a document
nested 100,000 deep, a list where an object belongs, a malformed finding in a batch, a
records file with a monster line. Each is refused with one line naming the file (and the
model and field), memory stays bounded, and a batch goes on past a bad member."""
from __future__ import annotations

import base64
import copy
import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from fuzz.findings import read_finding_input
from harness.expectations import load_baseline
from nncts.merge import load_shard
from harness.requirements import load_profile
from harness.records import read_json, read_records
from runtime.files import (MAX_DOCUMENT_BYTES, MAX_ITEMS, FileFormatError, FileLimitError, iter_json_lines,
                           load_json, load_toml)
from runtime.testing.test_model import CorpusError, load_spec
from tests.cts_run import ROOT

CORPUS = ROOT / "cts" / "corpus"
#: Peak RSS a command refusing a bomb may reach (the bomb inflates to 1 GiB).
RSS_BOUND_MB = 400
DEEP = 100_000


# --- hostile files, made in tmp_path ------------------------------------------------------------

def gzip_bomb(path: Path, inflated: int = 1 << 30) -> Path:
    """A gzip file of about 1 MiB that inflates to ``inflated`` bytes: ``{"models": [`` then
    spaces (valid JSON so far: only a size bound stops a reader). Made of 16 MiB members, each
    compressed once and repeated (a multi-member gzip stream, RFC 1952), so it takes a fraction
    of a second where streaming 1 GiB through GzipFile takes several."""
    head = gzip.compress(b'{"models": [', mtime=0)
    block = 16 << 20
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    spaces = c.compress(b" " * block) + c.flush()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(head)
        for _ in range(inflated // block):
            f.write(spaces)
    return path


def write_gz(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode() if isinstance(text, str) else text, mtime=0))
    return path


def one_line(text: str) -> bool:
    return "\n" not in text.strip() and "Traceback" not in text


def run_measured(args: list[str], tmp_path: Path, timeout: float = 300) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``args`` (from the project root) under a wrapper that reports the child's peak
    RSS (``getrusage(RUSAGE_CHILDREN).ru_maxrss``, kB on Linux); returns (result, MB)."""
    rss_file = tmp_path / "rss.txt"
    wrapper = ("import resource, subprocess, sys\n"
               "r = subprocess.run(sys.argv[2:])\n"
               "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
               "sys.exit(r.returncode)\n")
    proc = subprocess.run([sys.executable, "-c", wrapper, str(rss_file), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
    return proc, int(rss_file.read_text()) / 1024


@pytest.fixture(scope="module")
def bomb_dir(tmp_path_factory) -> Path:
    """A corpus directory whose one document is a gzip bomb (V1_0/bomb.json.gz)."""
    root = tmp_path_factory.mktemp("bomb")
    gzip_bomb(root / "V1_0" / "bomb.json.gz")
    return root


# --- the gzip bomb ------------------------------------------------------------------------------

def test_the_bomb_is_small_and_inflates_to_a_gibibyte(bomb_dir):
    path = bomb_dir / "V1_0" / "bomb.json.gz"
    assert path.stat().st_size < 2 << 20
    inflated = 0
    with gzip.open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            inflated += len(chunk)
    assert inflated == len(b'{"models": [') + (1 << 30)


def test_load_spec_refuses_a_gzip_bomb(bomb_dir):
    path = bomb_dir / "V1_0" / "bomb.json.gz"
    with pytest.raises(CorpusError) as e:
        load_spec(path)
    assert str(e.value) == f"{path}: more than {MAX_DOCUMENT_BYTES:,} bytes once inflated (the limit)"


def test_nncts_cts_refuses_a_gzip_bomb_corpus_in_one_line_and_bounded_memory(bomb_dir, tmp_path):
    proc, rss_mb = run_measured([sys.executable, "-m", "nncts.cli", "cts", "--corpus", str(bomb_dir),
                                 "--report-dir", str(tmp_path / "report")], tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr == (f"nncts cts: error: --corpus: {bomb_dir / 'V1_0' / 'bomb.json.gz'}: more than "
                           f"{MAX_DOCUMENT_BYTES:,} bytes once inflated (the limit)\n")
    assert rss_mb < RSS_BOUND_MB, f"peak RSS {rss_mb:.0f} MB"


def test_fuzz_replay_refuses_a_gzip_bomb_finding_in_bounded_memory(bomb_dir, tmp_path):
    bomb = bomb_dir / "V1_0" / "bomb.json.gz"
    proc, rss_mb = run_measured([sys.executable, "-m", "fuzz", "--replay", str(bomb)], tmp_path)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        f"BAD   {bomb}: more than {MAX_DOCUMENT_BYTES:,} bytes once inflated (the limit)",
        "0 replayed, 0 still open, 1 malformed (not replayed)"]
    assert "Traceback" not in proc.stderr
    assert rss_mb < RSS_BOUND_MB, f"peak RSS {rss_mb:.0f} MB"


# --- nesting, digits, item counts ----------------------------------------------------------------

def test_json_nested_100000_deep_is_one_line_everywhere(tmp_path):
    deep = "[" * DEEP + "]" * DEEP
    corpus_doc = write_gz(tmp_path / "V1_0" / "deep.json.gz", '{"models": ' + deep + "}")
    with pytest.raises(CorpusError) as e:
        load_spec(corpus_doc)
    assert str(e.value) == f"{corpus_doc}: nested deeper than 64 levels (the limit)"
    finding = write_gz(tmp_path / "finding.json.gz", deep)
    with pytest.raises(ValueError, match=f"^{finding}: nested deeper than 64 levels"):
        read_finding_input(finding)
    summary = tmp_path / "summary.json"
    summary.write_text('{"meta": ' + deep + "}")
    with pytest.raises(ValueError) as e:
        read_json(summary)
    assert str(e.value) == f"{summary}: not readable JSON (nested deeper than 64 levels (the limit))"


def test_json_just_past_the_nesting_limit_is_refused_and_at_it_accepted(tmp_path):
    path = tmp_path / "d.json"
    path.write_text("[" * 64 + "]" * 64)
    assert load_json(path) == load_json(path)  # 64 levels: the limit itself
    path.write_text("[" * 65 + "]" * 65)
    with pytest.raises(FileLimitError, match="nested deeper than 64 levels"):
        load_json(path)


def test_an_integer_of_too_many_digits_names_the_file(tmp_path):
    path = write_gz(tmp_path / "big.json.gz", '{"models": [' + "9" * 5000 + "]}")
    with pytest.raises(CorpusError, match=rf"^{path}: cannot read \(not valid JSON: Exceeds the limit"):
        load_spec(path)


def test_a_million_empty_lists_are_refused_before_parsing(tmp_path):
    path = tmp_path / "many.json"
    path.write_text("[" + "[]," * MAX_ITEMS + "[]]")
    with pytest.raises(FileLimitError, match=f"^{path}: more than {MAX_ITEMS:,} values"):
        load_json(path)


def test_a_corrupt_gzip_stream_is_a_format_error(tmp_path):
    path = tmp_path / "cut.json.gz"
    path.write_bytes(gzip.compress(b'{"models": []}')[:-12])
    with pytest.raises(FileFormatError) as e:
        load_json(path)
    assert e.value.path == str(path) and e.value.reason.startswith("not a valid gzip stream")


DEEP_TOML = "a = " + "[" * DEEP + "]" * DEEP + "\n"
DEEP_TABLES = "[" + ".".join(f"k{i}" for i in range(100)) + "]\nx = 1\n"


@pytest.mark.parametrize("text", [DEEP_TOML, DEEP_TABLES], ids=["inline-arrays", "table-headers"])
def test_deep_toml_baseline_and_profile_are_one_line(tmp_path, text):
    path = tmp_path / "deep.toml"
    path.write_text(text)
    for load in (load_baseline, lambda p: load_profile(str(p))):
        with pytest.raises(ValueError) as e:
            load(path)
        assert str(e.value) == f"{path}: nested deeper than 64 levels (the limit)"


def test_nncts_cts_with_a_deep_baseline_is_one_line_exit_2(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text(DEEP_TOML)
    proc = subprocess.run([sys.executable, "-m", "nncts.cli", "cts", "--baseline", str(path), "--report-dir",
                           str(tmp_path / "report")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr == f"nncts cts: error: --baseline: {path}: nested deeper than 64 levels (the limit)\n"


def test_a_toml_file_past_its_limit_is_refused(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text("# " + "x" * 100 + "\n")
    with pytest.raises(FileLimitError, match="more than 64 bytes"):
        load_toml(path, limit=64)


# --- the corpus schema: wrong kinds, ranges and sizes are CorpusError naming file, model, field ---

def _doc() -> dict:
    with gzip.open(CORPUS / "V1_0" / "add.json.gz", "rt") as f:
        return json.load(f)


def _op(doc):
    return doc["models"][0]["main"]["operands"][0]


SCHEMA_ATTACKS = [
    ("document is a list", lambda d: [d], "the document: must be an object, not a list"),
    ("models is an object", lambda d: d.update(models={}),
     "the document: field 'models' must be a list, not an object"),
    ("model is a list", lambda d: d["models"].__setitem__(0, []), "models[0]: must be an object, not a list"),
    ("main is a list", lambda d: d["models"][0].update(main=[]),
     "model add: field 'main' must be an object, not a list"),
    ("operands is a string", lambda d: d["models"][0]["main"].update(operands="x"),
     "model add main: field 'operands' must be a list, not a string"),
    ("operand is a list", lambda d: d["models"][0]["main"]["operands"].__setitem__(0, []),
     "model add main operand 0: must be an object, not a list"),
    ("operation is a string", lambda d: d["models"][0]["main"]["operations"].__setitem__(0, "ADD"),
     "model add main operation 0: must be an object, not a string"),
    ("referenced holds a list", lambda d: d["models"][0].update(referenced=[[]]),
     "model add referenced 0: must be an object, not a list"),
    ("dimensions is an object", lambda d: _op(d).update(dimensions={"n": 2}),
     "model add main operand 0: field 'dimensions' must be a list, not an object"),
    ("negative dimension", lambda d: _op(d).update(dimensions=[-2]),
     "model add main operand 0: field 'dimensions': element 0 is -2, outside 0..4294967295"),
    ("dimension 2**40", lambda d: _op(d).update(dimensions=[2**40]),
     "model add main operand 0: field 'dimensions': element 0 is 1099511627776, outside 0..4294967295"),
    ("dimension is a string", lambda d: _op(d).update(dimensions=["2"]),
     "model add main operand 0: field 'dimensions': element 0 is a string, not an integer"),
    ("rank 2000", lambda d: _op(d).update(dimensions=[1] * 2000),
     "model add main operand 0: field 'dimensions': rank 2,000, more than 1024 (the limit)"),
    ("scale is an object", lambda d: _op(d).update(scale={}),
     "model add main operand 0: field 'scale' must be a number, not an object"),
    ("zero point is a boolean", lambda d: _op(d).update(zero_point=True),
     "model add main operand 0: field 'zero_point' must be an integer, not a boolean"),
    ("unknown operand type", lambda d: _op(d).update(type="TENSOR_FLOAT64"),
     "model add main operand 0: field 'type': unknown OperandType 'TENSOR_FLOAT64'"),
    ("data is a list", lambda d: _op(d).update(data=[1.0, 2.0]),
     "model add main operand 0: field 'data' must be an object or null, not a list"),
    ("data of another type", lambda d: _op(d)["data"].update(dtype="int8"),
     "model add main operand 0 data: field 'dtype': 'int8' does not hold operand type TENSOR_FLOAT32"),
    ("data larger than the dimensions", lambda d: _op(d)["data"].update(b64="A" * 4_000_000),
     "model add main operand 0 data: 3,000,000 bytes of float32, but dimensions [2] of TENSOR_FLOAT32 need 8"),
    ("data for dimensions past 2**64 elements", lambda d: _op(d).update(dimensions=[2**32 - 1] * 3),
     "model add main operand 0 data: 8 bytes of float32, but dimensions [4294967295, 4294967295, 4294967295] "
     "of TENSOR_FLOAT32 need more than 2**64 elements"),
    ("data not base64", lambda d: _op(d)["data"].update(b64="!!!!!!!!!!!="),
     "model add main operand 0 data: field 'b64': not base64 (Only base64 data is allowed)"),
    ("channel_quant scales a string", lambda d: _op(d).update(channel_quant={"scales": "1", "channel_dim": 0}),
     "model add main operand 0 channel_quant: field 'scales' must be a list, not a string"),
    ("operation input a string", lambda d: d["models"][0]["main"]["operations"][0].update(inputs=[0, "1", 2]),
     "model add main operation 0: field 'inputs': element 1 is a string, not an integer"),
    ("expect_failure a string", lambda d: d["models"][0].update(expect_failure="no"),
     "model add: field 'expect_failure' must be a boolean, not a string"),
    ("unknown criteria", lambda d: d["models"][0].update(accuracy_criteria="lenient"),
     "model add: field 'accuracy_criteria': unknown criteria 'lenient' (one of strict, medium, relaxed, "
     "convolution, small graph, large graph)"),
    ("missing main", lambda d: d["models"][0].__delitem__("main"), "model add: missing field 'main'"),
]


@pytest.mark.parametrize("mutate, expected", [a[1:] for a in SCHEMA_ATTACKS], ids=[a[0] for a in SCHEMA_ATTACKS])
def test_a_schema_violation_is_a_corpus_error_naming_file_model_and_field(tmp_path, mutate, expected):
    doc = copy.deepcopy(_doc())
    doc = mutate(doc) or doc
    path = write_gz(tmp_path / "V1_0" / "add.json.gz", json.dumps(doc))
    with pytest.raises(CorpusError) as e:
        load_spec(path)
    assert str(e.value) == f"{path}: {expected}"


def test_the_untouched_document_loads(tmp_path):
    path = write_gz(tmp_path / "V1_0" / "add.json.gz", json.dumps(_doc()))
    assert [tm.name for tm in load_spec(path)] == [tm.name for tm in load_spec(CORPUS / "V1_0" / "add.json.gz")]
    assert load_spec(path)[0].main.operands[0].data.shape == (2,)


def test_a_hostile_name_is_cut_short_in_the_message(tmp_path):
    path = write_gz(tmp_path / "n.json.gz", json.dumps({"models": [{"name": "x" * 1_000_000}]}))
    with pytest.raises(CorpusError) as e:
        load_spec(path)
    assert len(str(e.value)) < 300 and str(e.value).endswith("(1,000,000 characters): missing field 'main'")


def test_pytest_over_a_bad_corpus_reports_the_file_and_field(tmp_path):
    doc = _doc()
    doc["models"][0]["main"]["operands"] = {"0": {}}
    write_gz(tmp_path / "corpus" / "V1_0" / "add.json.gz", json.dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "pytest", "cts/test_generated.py", "-q", "-p", "no:cacheprovider",
                           "--corpus", str(tmp_path / "corpus")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]  # pytest: interrupted by an error during collection
    assert (f"pytest.UsageError: corpus: {tmp_path / 'corpus' / 'V1_0' / 'add.json.gz'}: model add main: field "
            f"'operands' must be a list, not an object") in out
    assert "AttributeError" not in out and "TypeError" not in out


# --- fuzz findings: a malformed one is reported, the others replay --------------------------------

def _finding(path: Path, data: bytes) -> Path:
    return write_gz(path, json.dumps({"models": [{"name": path.name, "fuzz": {
        "input_b64": base64.b64encode(data).decode()}}]}))


MALFORMED_FINDINGS = [
    ("a list", "[]", "not a fuzz finding: no models"),
    ("models an object", '{"models": {"0": 1}}', "not a fuzz finding: no models[0]"),
    ("model a list", '{"models": [[1]]}', "not a fuzz finding: no models[0].fuzz"),
    ("input a number", '{"models": [{"fuzz": {"input_b64": 5}}]}',
     "not a fuzz finding: models[0].fuzz.input_b64 is not a string"),
    ("input not base64", '{"models": [{"fuzz": {"input_b64": "#$%"}}]}', "models[0].fuzz.input_b64 is not base64"),
    ("not JSON", "{oops", "not valid JSON"),
]


@pytest.mark.parametrize("text, expected", [m[1:] for m in MALFORMED_FINDINGS], ids=[m[0] for m in MALFORMED_FINDINGS])
def test_a_malformed_finding_is_one_line_naming_the_file(tmp_path, text, expected):
    path = write_gz(tmp_path / "bad.json.gz", text)
    with pytest.raises(ValueError) as e:
        read_finding_input(path)
    assert str(e.value).startswith(f"{path}: {expected}") and one_line(str(e.value))


def test_replay_reports_a_malformed_finding_and_replays_the_others(tmp_path):
    good1 = _finding(tmp_path / "a_good.json.gz", b"\x01\x00\x00\x00" + bytes(40))
    bad = write_gz(tmp_path / "b_bad.json.gz", '{"models": [{"name": "x"}]}')
    good2 = tmp_path / "c_good.bin"
    good2.write_bytes(b"\x01\x00\x01\x00" + bytes(40))
    proc = subprocess.run([sys.executable, "-m", "fuzz", "--driver", "sample", "--replay", str(good1), str(bad),
                           str(good2)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert lines == ["fixed a_good.json.gz", f"BAD   {bad}: not a fuzz finding: no models[0].fuzz",
                     "fixed c_good.bin", "2 replayed, 0 still open, 1 malformed (not replayed)"]
    assert "Traceback" not in proc.stderr


# --- records and shard directories ----------------------------------------------------------------

def _record(i: int) -> str:
    return json.dumps({"id": f"V1_0/add/add_{i}", "outcome": "passed", "operations": ["ADD"], "duration_s": 0.1})


def test_a_monster_or_deep_record_line_is_skipped_or_named(tmp_path):
    path = tmp_path / "outcomes.jsonl"
    path.write_text("\n".join([_record(1), "x" * (2 << 20), "[" * DEEP + "]" * DEEP, _record(2), "[1]", ""]))
    assert [r["id"] for r in read_records(path)] == ["V1_0/add/add_1", "V1_0/add/add_2"]
    lines = list(iter_json_lines(path))
    assert [(line.number, line.error is None, line.last) for line in lines] == \
        [(1, True, False), (2, False, False), (3, False, False), (4, True, False), (5, True, True)]
    assert str(lines[1].error) == f"{path}:2: longer than 1,048,576 bytes (the limit)"
    assert str(lines[2].error) == f"{path}:3: nested deeper than 64 levels (the limit)"
    with pytest.raises(ValueError) as e:
        read_records(path, strict=True)
    assert str(e.value) == f"{path}:2: not a JSON record (longer than 1,048,576 bytes (the limit))"


def test_a_truncated_last_record_still_loads_strictly(tmp_path):
    path = tmp_path / "outcomes.jsonl"
    path.write_text(_record(1) + "\n" + _record(2)[:20])
    assert [r["id"] for r in read_records(path, strict=True)] == ["V1_0/add/add_1"]


def _shard(tmp_path: Path, records: str, shard: str = '{"shard": 1, "of": 1, "driver": "sample"}') -> Path:
    d = tmp_path / "shard"
    d.mkdir(exist_ok=True)
    (d / "outcomes.jsonl").write_text(records)
    (d / "shard.json").write_text(shard)
    return d


@pytest.mark.parametrize("records, shard, expected", [
    ('{"id": "a", "outcome": "passed", "operations": "ADD"}\n', None,
     "outcomes.jsonl:1: record a: field 'operations' must be a list of strings"),
    ('{"id": "a", "outcome": "passed", "duration_s": "1s"}\n', None,
     "outcomes.jsonl:1: record a: field 'duration_s' must be a number"),
    ("", "[1, 2]", "shard.json: not a JSON object"),
    ("", "[" * DEEP + "]" * DEEP, "shard.json: not readable JSON (nested deeper than 64 levels (the limit))"),
], ids=["operations-a-string", "duration-a-string", "shard-a-list", "shard-deep"])
def test_a_malformed_shard_directory_is_one_line(tmp_path, records, shard, expected):
    d = _shard(tmp_path, records, *([shard] if shard else []))
    with pytest.raises(ValueError) as e:
        load_shard(d)
    assert str(e.value).startswith(str(d)) and str(e.value).endswith(expected) and one_line(str(e.value))


def test_resume_trusts_only_well_formed_records(tmp_path):
    """``nncts cts --resume`` over a records file holding lines that are JSON objects but not
    outcome records (no id, an id that is not a string, an unknown outcome): those lines are
    ignored (on 6eac2af the first one was a KeyError), the well-formed ones deselect their
    tests, and the rest run."""
    corpus = tmp_path / "corpus" / "V1_0"
    corpus.mkdir(parents=True)
    (corpus / "relu_float_1.json.gz").write_bytes((CORPUS / "V1_0" / "relu_float_1.json.gz").read_bytes())
    n = len(load_spec(corpus / "relu_float_1.json.gz"))
    report = tmp_path / "rep"
    cmd = [sys.executable, "-m", "nncts.cli", "cts", "--corpus", str(corpus.parent), "--report-dir", str(report),
           "--mode", "sync", "-n", "0"]  # no workers: pytest's own line then counts the deselected tests
    first = subprocess.run(cmd + ["-k", "not all_inputs_as_internal"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 0, first.stdout[-2000:]
    done = len((report / "outcomes.jsonl").read_text().splitlines())
    assert 0 < done < n
    with open(report / "outcomes.jsonl", "a") as f:
        f.write('{"outcome": "passed"}\n{"id": 5, "outcome": "passed"}\n{"id": "x", "outcome": "bogus"}\n[1]\n')
    second = subprocess.run(cmd + ["--resume"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    assert f"{n - done} passed, {done} deselected" in second.stdout
