"""``--shard I/N``, ``nncts merge`` and runs on pytest-xdist's execnet socket gateways
(harness.sharding, nncts.merge, nncts.gateways).

One corpus subset (V1_0, sync mode, ``-k "add or mul or relu"``: 182 tests) against a driver
with a planted fault (quantized ADD two quanta high), so outcomes are a mix of passed and
failed: the two shards, the unsharded run and the run on two loopback socket gateways are
started once per module, concurrently.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from nncts import cli
from nncts.gateways import map_path, remote_args
from harness.sharding import parse_shard, split
from harness.records import read_records

ROOT = Path(__file__).resolve().parents[1]
SELECTION = ["--driver", "tests.broken_drivers:OffByTwoQuantaAdd", "--corpus", "cts/corpus/V1_0",
             "--mode", "sync", "-k", "add or mul or relu"]


def _nncts(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nncts.cli", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _socket_server(workdir: Path) -> tuple[subprocess.Popen, int, Path]:
    """An execnet socket server on a free loopback port (cwd ``workdir``), once it listens."""
    workdir.mkdir()
    port, log = _free_port(), workdir / "server.log"
    proc = subprocess.Popen([sys.executable, "-u", "-m", "execnet.script.socketserver", f"127.0.0.1:{port}"],
                            cwd=workdir, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while "Entering Accept loop" not in log.read_text() and time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        time.sleep(0.05)
    return proc, port, log


def _outcomes(report: Path) -> dict[str, str]:
    return {r["id"]: r["outcome"] for r in read_records(report / "outcomes.jsonl")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Report dirs of shard 1/2, shard 2/2, the unsharded run and shard 1/2 on two socket
    gateways (``--dist load``), and the two servers' logs."""
    base = tmp_path_factory.mktemp("shards")
    servers = [_socket_server(base / f"server{i}") for i in (1, 2)]
    dirs = {name: base / name for name in ("s1", "s2", "all", "gw")}
    try:
        gateways = [a for _, port, _ in servers for a in ("--tx", f"socket=127.0.0.1:{port}")]
        procs = {"s1": _nncts("cts", *SELECTION, "--shard", "1/2", "--report-dir", str(dirs["s1"])),
                 "s2": _nncts("cts", *SELECTION, "--shard", "2/2", "--report-dir", str(dirs["s2"])),
                 "all": _nncts("cts", *SELECTION, "--report-dir", str(dirs["all"])),
                 "gw": _nncts("cts", *SELECTION, "--shard", "1/2", "--report-dir", str(dirs["gw"]),
                              "--dist", "load", *gateways)}
        output = {name: p.communicate(timeout=300)[0] for name, p in procs.items()}
        codes = {name: p.returncode for name, p in procs.items()}
    finally:
        for proc, _, _ in servers:
            proc.kill()
            proc.wait()
    for name in dirs:  # the planted fault fails tests: exit 1, never a usage or internal error
        assert codes[name] == 1, output[name][-3000:]
    return SimpleNamespace(base=base, output=output, logs=[log.read_text() for _, _, log in servers], **dirs)


@pytest.mark.parametrize("text, expected", [("1/1", (1, 1)), ("2/3", (2, 3)), (" 3/3 ", (3, 3))])
def test_parse_shard(text, expected):
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/b", "1/0", "2", "", "1/2/3", "-1/2"])
def test_parse_shard_rejects(text):
    with pytest.raises(ValueError) as e:
        parse_shard(text)
    assert "\n" not in str(e.value) and repr(text) in str(e.value)


def test_split_is_balanced_and_independent_of_order():
    items = [SimpleNamespace(nodeid=f"x/test_m.py::test_f[{i:03d}]", name=f"test_f[{i:03d}]",
                             module=SimpleNamespace(__name__="pkg.test_m"), path=Path("x/test_m.py"))
             for i in range(11)]
    shards = [split(items, i, 3)[0] for i in (1, 2, 3)]
    assert [len(s) for s in shards] == [4, 4, 3]
    # dealt round-robin over the sorted ids: 000, 003, 006, 009 to shard 1
    assert [it.name for it in shards[0]] == ["test_f[000]", "test_f[003]", "test_f[006]", "test_f[009]"]
    shuffled = random.Random(7).sample(items, len(items))
    assert [{it.name for it in split(shuffled, i, 3)[0]} for i in (1, 2, 3)] == \
        [{it.name for it in s} for s in shards]
    # a collection from another directory (another rootdir) splits the same way
    moved = [SimpleNamespace(**dict(vars(it), nodeid="elsewhere/" + it.nodeid)) for it in items]
    assert [it.name for it in split(moved, 1, 3)[0]] == [it.name for it in shards[0]]


def test_shards_partition_the_run(runs):
    one, two, every = _outcomes(runs.s1), _outcomes(runs.s2), _outcomes(runs.all)
    assert len(every) == 182
    assert not set(one) & set(two)
    assert set(one) | set(two) == set(every)
    assert abs(len(one) - len(two)) <= 1
    meta = json.loads((runs.s2 / "shard.json").read_text())
    assert (meta["shard"], meta["of"], meta["selected"]) == (2, 2, len(two))
    assert meta["driver"] == "tests.broken_drivers:OffByTwoQuantaAdd"
    assert not (runs.all / "shard.json").exists()


def test_merged_shards_equal_the_unsharded_run(runs, capsys):
    out = runs.base / "merged"
    assert cli.main(["merge", str(runs.s1), str(runs.s2), "--out", str(out)]) == 0
    merged, every = _outcomes(out), _outcomes(runs.all)
    assert merged == every
    assert {"passed", "failed"} <= set(merged.values())
    assert len(read_records(out / "outcomes.jsonl")) == len(every)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["meta"]["shards"] == "1/2, 2/2" and summary["meta"]["duplicates"] == 0
    assert summary["totals"]["failed"] == list(every.values()).count("failed")
    junit = (out / "junit.xml").read_text()
    assert f'tests="{len(every)}"' in junit and f'failures="{summary["totals"]["failed"]}"' in junit
    assert (out / "index.html").is_file()
    assert capsys.readouterr().err == ""


def test_socket_gateways_run_like_a_local_run(runs):
    local = {r["id"]: r for r in read_records(runs.s1 / "outcomes.jsonl")}
    remote = {r["id"]: r for r in read_records(runs.gw / "outcomes.jsonl")}
    assert {k: r["outcome"] for k, r in remote.items()} == {k: r["outcome"] for k, r in local.items()}
    # same node ids as the local run (replay commands work), the worker's rootdir mapped
    assert {r["nodeid"] for r in remote.values()} == {r["nodeid"] for r in local.values()}
    # both gateways took part, each with the controller's command line rewritten
    for log in runs.logs:
        assert "got new connection" in log
    assert json.loads((runs.gw / "shard.json").read_text())["selected"] == len(local)


def _merge_error(capsys, *args) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main(["merge", *map(str, args)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and err.startswith("nncts merge: error: "), err
    return err


def _copy(runs, name: str, new: str) -> Path:
    target = runs.base / new
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(getattr(runs, name), target)
    return target


def test_merge_rejects_bad_shards(runs, capsys):
    out = runs.base / "bad-out"
    assert "no such directory" in _merge_error(capsys, runs.s1, runs.base / "nope", "--out", out)
    assert "no shard.json" in _merge_error(capsys, runs.s1, runs.all, "--out", out)
    malformed = _copy(runs, "s2", "malformed")
    lines = (malformed / "outcomes.jsonl").read_text().splitlines()
    (malformed / "outcomes.jsonl").write_text("\n".join(["{oops", *lines]) + "\n")
    assert "outcomes.jsonl:1: not a JSON record" in _merge_error(capsys, runs.s1, malformed, "--out", out)
    (malformed / "outcomes.jsonl").write_text('{"id": "x", "outcome": "maybe"}\n')
    assert "not an outcome record" in _merge_error(capsys, runs.s1, malformed, "--out", out)
    other_n = _copy(runs, "s2", "other-n")
    (other_n / "shard.json").write_text(json.dumps({"shard": 2, "of": 3, "driver": "tests.broken_drivers:"
                                                                                  "OffByTwoQuantaAdd"}))
    assert "different N" in _merge_error(capsys, runs.s1, other_n, "--out", out)
    other_driver = _copy(runs, "s2", "other-driver")
    (other_driver / "shard.json").write_text(json.dumps({"shard": 2, "of": 2, "driver": "sample"}))
    assert "different drivers" in _merge_error(capsys, runs.s1, other_driver, "--out", out)
    conflict = _copy(runs, "s2", "conflict")
    records = read_records(runs.s1 / "outcomes.jsonl")
    flipped = dict(records[0], outcome="failed" if records[0]["outcome"] == "passed" else "passed")
    with open(conflict / "outcomes.jsonl", "a") as f:
        f.write(json.dumps(flipped) + "\n")
    err = _merge_error(capsys, runs.s1, conflict, "--out", out)
    assert records[0]["id"] in err and "different outcomes" in err
    assert "one of the shard directories" in _merge_error(capsys, runs.s1, runs.s2, "--out", runs.s2)
    assert "required: --out" in _merge_error(capsys, runs.s1)
    assert not out.exists()


def test_merge_counts_duplicates_and_warns_of_missing_shards(runs, capsys):
    twice = _copy(runs, "s1", "twice")
    out = runs.base / "dup-out"
    assert cli.main(["merge", str(runs.s1), str(twice), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    n = len(_outcomes(runs.s1))
    assert f"{n} duplicate test(s)" in captured.out
    assert "missing shard(s) 2/2" in captured.err and "shard 1/2 given twice" in captured.err
    meta = json.loads((out / "summary.json").read_text())["meta"]
    assert meta["duplicates"] == n and any("missing shard(s) 2/2" in w for w in meta["warnings"])
    assert _outcomes(out) == _outcomes(runs.s1)


@pytest.mark.parametrize("value", ["0/2", "3/2", "a/b", "1/0"])
def test_bad_shard_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["cts", "--corpus", "cts/corpus/V1_0", "--report-dir", "/tmp/unused-nncts-shard",
                  "--shard", value])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "--shard: " in err and repr(value) in err


def test_remote_args_name_modules_and_absolute_paths():
    positional = ["cts/test_generated.py::test_generated[V1_0/add/add]"]
    option = argparse.Namespace(corpus=["cts/corpus/V1_0"], file_or_dir=positional, plugins=["harness.plugin"])
    args = remote_args([*positional, "-p", "harness.plugin", "--corpus", "cts/corpus/V1_0", "-k", "add",
                        "--nncts-report=cts/corpus"], ROOT, positional, option)
    assert args == ["--pyargs", "cts.test_generated::test_generated[V1_0/add/add]", "-p", "harness.plugin",
                    f"--corpus={ROOT}/cts/corpus/V1_0", "-k", "add", f"--nncts-report={ROOT}/cts/corpus"]
    assert remote_args([str(ROOT / "vts")], ROOT, [str(ROOT / "vts")], option) == ["--pyargs", "vts"]
    with pytest.raises(pytest.UsageError, match="not inside an importable package"):
        remote_args(["cts/corpus/V1_0"], ROOT, ["cts/corpus/V1_0"], option)


def test_map_path_moves_only_paths_in_the_controllers_tree():
    assert map_path("/a/nncts/cts/corpus/V1_0", "/a/nncts", Path("/opt/nn")) == "/opt/nn/cts/corpus/V1_0"
    assert map_path("/a/nncts", "/a/nncts", Path("/opt/nn")) == "/opt/nn"
    assert map_path("/a/nncts2/x", "/a/nncts", Path("/opt/nn")) == "/a/nncts2/x"
    assert map_path("sample", "/a/nncts", Path("/opt/nn")) == "sample"
