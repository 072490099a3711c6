"""``nncts certify`` and ``nncts verify``: a quick certification of the sample driver (every
suite passes; a quick run is labelled, never certified) makes a bundle that verifies
(also with ``sha256sum -c``); one flipped byte, a deleted file, an added
file, a rewritten archive member are each named; the bundle is signed (``--sign-key``) and a
forgery whose manifest was regenerated does not match the signature; a driver with a planted
fault is not certified; misuse is one line and exit 2.

Two quick certifications (the sample driver's, and OffByTwoQuantaAdd's without the MLTS;
about 30 s each) are shared by the tests of this module and of tests/test_certify_verdict.py,
also across pytest-xdist workers (each made once under a file lock in the session's shared
temp directory); tests change copies of them only.
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from nncts import signing
from nncts.bundle import write_archive, write_manifest
from nncts.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _certify(out: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nncts.cli", "certify", "--quick", "--out", str(out), *options],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)


def _shared_certify(tmp_path_factory, worker_id, name: str, options) -> tuple[Path, subprocess.CompletedProcess]:
    """(bundle, completed process) of ``nncts certify --quick --out <bundle> *options(keys)``
    made once per test session under the name ``name`` (a file lock in the session's shared
    temp directory; ``options`` takes the directory for its keys)."""
    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    out, log = shared / f"certify-{name}", shared / f"certify-{name}.json"
    with open(shared / f"certify-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not log.exists():
            proc = _certify(out, *options(shared / f"certify-{name}-keys"))
            log.write_text(json.dumps([proc.returncode, proc.stdout, proc.stderr]))
    code, stdout, stderr = json.loads(log.read_text())
    return out, subprocess.CompletedProcess([], code, stdout, stderr)


@pytest.fixture(scope="module")
def certified(tmp_path_factory, worker_id):
    """(bundle directory, certify's completed process, public key path) of ``nncts certify
    --driver sample --quick --archive --sign-key KEY`` (KEY from ``nncts keygen``), made once
    per test session."""
    def options(keys: Path) -> list[str]:
        return ["--driver", "sample", "--archive", "--sign-key", str(signing.keygen(keys)[0])]
    out, proc = _shared_certify(tmp_path_factory, worker_id, "sample", options)
    return out, proc, out.with_name("certify-sample-keys") / signing.PUBLIC_KEY


@pytest.fixture(scope="module")
def broken(tmp_path_factory, worker_id):
    """(bundle directory, certify's completed process) of ``nncts certify --quick --driver
    tests.broken_drivers:OffByTwoQuantaAdd --skip mlts`` (quantized ADD two quanta high),
    made once per test session."""
    return _shared_certify(tmp_path_factory, worker_id, "broken",
                           lambda keys: ["--driver", "tests.broken_drivers:OffByTwoQuantaAdd", "--skip", "mlts"])


def _verify(path, capsys, *options) -> tuple[int, str, str]:
    code = main(["verify", str(path), *map(str, options)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _copy(bundle: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(bundle, tmp_path / "bundle"))


def test_quick_certification_of_the_sample_driver(certified, capsys):
    bundle, proc, public = certified
    assert proc.returncode == 0, proc.stdout + proc.stderr   # a quick run that passed
    for suite in ("cts", "vts", "random-graph", "precision", "relations", "fuzz", "mlts"):
        assert f"certify: {suite}: passed in " in proc.stdout   # one progress line per suite
    assert "certify: verdict: NOT CERTIFIED (QUICK RUN)" in proc.stdout
    verdict = json.loads((bundle / "verdict.json").read_text())
    assert (verdict["certified"], verdict["passed"], verdict["scope"]) == (False, True, "quick")
    assert verdict["failures"] == [] and verdict["verdict"] == "not certified (quick run)"
    assert verdict["reasons"] == verdict["scope_reasons"] and verdict["reasons"][0].startswith("quick run: ")
    assert [s["suite"] for s in verdict["suites"]] == ["cts", "vts", "random-graph", "precision", "relations", "fuzz",
                                                       "mlts"]
    assert [s["suite"] for s in verdict["suites"] if not s["required"]] == ["precision", "relations"]  # unless a profile says
    assert (bundle / "results" / "precision" / "precision.html").is_file()
    for suite in ("cts", "vts", "random-graph"):
        assert (bundle / "results" / suite / "outcomes.jsonl").stat().st_size > 0
        assert (bundle / "results" / suite / "junit.xml").is_file()
    assert (bundle / "results" / "mlts" / "mlts.json").is_file()
    assert (bundle / "results" / "fuzz" / "findings").is_dir()
    assert (bundle / "results" / "fuzz" / "index.html").is_file()
    driver = json.loads((bundle / "driver.json").read_text())
    assert (driver["name"], driver["feature_level"], driver["cache_files"]) == ("nncts-sample", 7, [1, 1])
    env = json.loads((bundle / "environment.json").read_text())
    assert env["command_line"][1:3] == ["certify", "--quick"] and env["packages"]["numpy"] != "not installed"
    report = json.loads((bundle / "report" / "report.json").read_text())
    assert {row["suite"] for row in report["per_suite"]} == {"cts", "vts", "random_graph", "precision", "relations"}
    assert report["precision"]["sweeps"] > 0 and (bundle / "report" / "precision.html").is_file()
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    fingerprint = signing.fingerprint(signing.load_public_key(public))
    assert f"(signed by {fingerprint}; check it with: " in proc.stdout
    assert (bundle / "SIGNER").read_text() == fingerprint + "\n"
    code, out, _ = _verify(bundle, capsys)     # every file but the manifest and its signature listed
    assert code == 0 and out == (f"bundle OK: {len(files) - 2} files, verdict not certified (quick run)\n"
                                 f"  {verdict['reasons'][0]}\n"
                                 f"signature: signed by {fingerprint} (not checked: pass --public-key)\n")
    if shutil.which("sha256sum"):   # the manifest is sha256sum's format
        check = subprocess.run(["sha256sum", "--check", "--strict", "--quiet", "MANIFEST.sha256"], cwd=bundle,
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


def test_the_signed_bundle_and_a_remanifested_forgery(certified, tmp_path, capsys):
    bundle, _, public = certified
    for target in (bundle, bundle.with_name(bundle.name + ".tar.gz")):
        code, out, _ = _verify(target, capsys, "--public-key", public)
        assert code == 0 and out.splitlines()[-1].startswith("signature: good, signed by SHA256:"), out
    forged = _copy(bundle, tmp_path)
    verdict = json.loads((forged / "verdict.json").read_text())
    verdict["driver"] = "someone-else"
    (forged / "verdict.json").write_text(json.dumps(verdict))
    write_manifest(forged)        # integrity holds again: only the signature tells
    assert _verify(forged, capsys)[0] == 0
    for target in (forged, write_archive(forged)):
        code, out, _ = _verify(target, capsys, "--public-key", public)
        assert code == 1 and out.startswith("signature does not match: "), out


def test_checksums_of_the_specs_tree(certified):
    bundle, *_ = certified
    sums = json.loads((bundle / "checksums.json").read_text())
    root = ROOT / "cts" / "specs" / "built"
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    lines = "".join(f"{hashlib.sha256((root / f).read_bytes()).hexdigest()}  {f}\n" for f in files)
    assert sums["specs"] == {"path": "cts/specs/built", "files": len(files),
                             "sha256": hashlib.sha256(lines.encode()).hexdigest()}
    assert sums["corpus"]["files"] == sum(1 for p in (ROOT / "cts" / "corpus").rglob("*") if p.is_file())


def test_a_flipped_byte_is_named(certified, tmp_path, capsys):
    bundle = _copy(certified[0], tmp_path)
    target = bundle / "results" / "cts" / "outcomes.jsonl"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    code, out, _ = _verify(bundle, capsys)
    assert code == 1
    assert out.splitlines()[0] == "altered: results/cts/outcomes.jsonl"
    assert out.splitlines()[1].startswith("bundle NOT OK: 1 altered, 0 missing, 0 unlisted")


def test_a_deleted_and_an_added_file_are_named(certified, tmp_path, capsys):
    bundle = _copy(certified[0], tmp_path)
    (bundle / "driver.json").unlink()
    (bundle / "results" / "vts" / "extra.txt").write_text("not from the run\n")
    code, out, _ = _verify(bundle, capsys)
    assert code == 1
    assert out.splitlines()[:2] == ["missing: driver.json", "unlisted: results/vts/extra.txt"]


def test_the_archive_verifies_and_a_rewritten_member_is_named(certified, tmp_path, capsys):
    bundle = certified[0]
    archive = bundle.with_name(bundle.name + ".tar.gz")
    code, out, _ = _verify(archive, capsys)
    assert code == 0 and out.startswith("bundle OK: ")
    assert out.splitlines()[0].endswith("verdict not certified (quick run)")
    forged = tmp_path / "forged.tar.gz"
    with tarfile.open(archive) as src, tarfile.open(forged, "w:gz") as dst:
        for member in src:
            data = src.extractfile(member).read() if member.isfile() else None
            if member.name.endswith("/verdict.json"):
                data = data.replace(b'"passed": true', b'"passed": false')
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
    code, out, _ = _verify(forged, capsys)
    assert code == 1 and out.splitlines()[0] == "altered: verdict.json"


def test_not_a_bundle_is_one_line_and_exit_2(certified, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        _verify(tmp_path, capsys)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "no MANIFEST.sha256" in err
    bundle = _copy(certified[0], tmp_path)
    with open(bundle / "MANIFEST.sha256", "a") as f:
        f.write("not a digest  ../outside\n")
    with pytest.raises(SystemExit) as e:
        _verify(bundle, capsys)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "line" in err


@pytest.mark.parametrize("options, message", [
    (["--driver", "no-such-driver"], "no driver named 'no-such-driver'"),
    (["--driver", "sample", "--fuzz-seconds", "0"], "--fuzz-seconds: must be at least 1"),
    (["--driver", "sample", "--profile", "no-such-profile.toml"], "--profile: no-such-profile.toml"),
    (["--driver", "sample", "--skip", "nothing"], "argument --skip: invalid choice"),
])
def test_certify_misuse_is_one_line_and_exit_2(options, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(["certify", *options])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and message in err, err


def test_certify_refuses_a_nonempty_out(tmp_path, capsys):
    (tmp_path / "old.txt").write_text("x")
    with pytest.raises(SystemExit) as e:
        main(["certify", "--driver", "sample", "--out", str(tmp_path)])
    assert e.value.code == 2 and "is not an empty directory" in capsys.readouterr().err


def test_a_planted_fault_is_not_certified(broken, capsys):
    out, proc = broken
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "certify: verdict: NOT CERTIFIED" in proc.stdout and "certify: cts: failed in " in proc.stdout
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["certified"] is False
    failing = {(f["suite"], f["id"]) for f in verdict["failures"]}
    assert ("cts", "V1_0/add_quant8/add_quant8") in failing
    assert ("cts", "V1_0/add_broadcast_quant8/add_broadcast_quant8@async") in failing
    # only models with a quantized ADD fail (the *_all_inputs_as_internal variants add ADDs)
    assert not [i for _, i in failing if "conv_float" in i or ("conv_quant8" in i and "as_internal" not in i)]
    code, stdout, _ = _verify(out, capsys)
    lines = stdout.splitlines()
    assert code == 0 and lines[0].endswith("verdict not certified (quick run)") and lines[1].startswith("  quick run: ")
    assert "  partial run: mlts left out with --skip" in lines
    assert any(line.startswith("  cts: failed: ") for line in lines)
    assert lines[-1] == "signature: none (the bundle is unsigned)"
