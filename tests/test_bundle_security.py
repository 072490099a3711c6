"""``nncts verify`` on hostile bundles, and signed bundles (``nncts keygen``, ``certify
--sign-key``, ``verify --public-key``).

Each attack is a regression test: a symlinked ``verdict.json`` printing a forged verdict with
terminal escapes, an extra symlink to ``/etc``, special files and hard links, an archive with
two roots, absolute or ``..`` names, a 1 GiB member (verify must refuse it without reading it:
peak RSS of the verify process is measured), oversized tar headers and too many files; control
characters in a verdict or a file name reach the terminal escaped. The bundles are small ones
made with the project's own functions (:func:`nncts.signing.seal`), not a certification run
(``tests/test_certify.py`` signs a real quick certification).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from nncts import bundle as bundle_module
from nncts import signing
from nncts.bundle import NotABundle, parse_manifest, printable, write_archive, write_manifest
from nncts.cli import main

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30
#: The most a verify process may hold (peak RSS) on an archive with a 1 GiB member.
MAX_VERIFY_RSS = 200 * 1024 * 1024
ESC = "\x1b"


def _bundle(tmp_path: Path, verdict: dict | None = None, key=None, name: str = "bundle") -> Path:
    """A small sealed bundle directory: a result file, driver.json, verdict.json (certified
    unless ``verdict`` is given), the manifest and, with ``key``, SIGNER and the signature."""
    b = tmp_path / name
    (b / "results" / "cts").mkdir(parents=True)
    (b / "results" / "cts" / "outcomes.jsonl").write_text('{"id": "V1_0/add", "outcome": "passed"}\n')
    (b / "driver.json").write_text(json.dumps({"name": "fake", "version": "1.0"}))
    (b / "verdict.json").write_text(json.dumps(verdict or {"certified": True, "verdict": "certified",
                                                           "reasons": []}))
    signing.seal(b, key)
    return b


def _verify(capsys, *args) -> tuple[int, str, str]:
    """``nncts verify ARGS`` in process: (exit code, stdout, stderr)."""
    try:
        code = main(["verify", *map(str, args)])
    except SystemExit as e:
        code = e.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _no_escape_codes(text: str) -> None:
    assert not any(c in text for c in (ESC, "\x07", "\x9b", "\x08", "\r")), repr(text)


class _Zeros(io.RawIOBase):
    """``size`` zero bytes, made as they are read (a member's content without holding it)."""

    def __init__(self, size: int):
        super().__init__()
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n


def _archive(path: Path, bundle: Path | None, extra=(), level: int = 6) -> Path:
    """A ``.tar.gz`` at ``path``: the bundle directory's files under its name (when given),
    then the ``extra`` members, each a TarInfo or (TarInfo, binary stream)."""
    with tarfile.open(path, "w:gz", compresslevel=level) as tar:
        if bundle is not None:
            tar.add(bundle, arcname=bundle.name)
        for member in extra:
            info, stream = member if isinstance(member, tuple) else (member, None)
            tar.addfile(info, stream)
    return path


def _member(name: str, type_=tarfile.REGTYPE, size: int = 0, linkname: str = "", pax=None) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname, info.mode = type_, size, linkname, 0o644
    info.pax_headers = pax or {}
    return info


#: Runs ``nncts verify`` and reports the process's own peak resident memory (VmHWM of its
#: address space). Not the parent's ``ru_maxrss`` of the child: after fork (or vfork) and exec
#: that starts at the forking pytest worker's size, hundreds of MB late in a CI run.
_VERIFY_WITH_PEAK = """import sys
from nncts.cli import main
try:
    rc = main(["verify", sys.argv[1]])
finally:
    peak = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
    sys.stdout.flush()
    sys.stderr.write("NNCTS-PEAK-KB " + peak.split()[1] + "\\n")
sys.exit(rc)
"""


def _verify_process(path: Path) -> tuple[int, str, int]:
    """``nncts verify PATH`` in a subprocess: (exit code, output, peak RSS in bytes)."""
    proc = subprocess.run([sys.executable, "-c", _VERIFY_WITH_PEAK, str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    lines = proc.stderr.splitlines()
    peak_kb = int(next(ln for ln in lines if ln.startswith("NNCTS-PEAK-KB ")).split()[1])
    err = "".join(ln + "\n" for ln in lines if not ln.startswith("NNCTS-PEAK-KB "))
    return proc.returncode, proc.stdout + err, peak_kb * 1024


# --- directories: only regular files and directories, nothing followed ------------------------

def test_a_symlinked_verdict_is_refused_and_nothing_of_it_printed(tmp_path, capsys):
    b = _bundle(tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"certified": True, "verdict": f"{ESC}[31mCERTIFIED{ESC}[0m"}))
    (b / "verdict.json").unlink()
    (b / "verdict.json").symlink_to(outside)
    write_manifest(b)        # as a forger would: the manifest lists every regular file
    code, out, err = _verify(capsys, b)
    assert code == 1, out + err
    assert f"refused: verdict.json: a symbolic link (to {str(outside)!r}); a bundle holds only regular files" in out
    assert "CERTIFIED" not in out + err and "bundle OK" not in out
    _no_escape_codes(out + err)


def test_an_extra_symlink_to_etc_is_refused_and_named(tmp_path, capsys):
    b = _bundle(tmp_path)
    (b / "results" / "etclink").symlink_to("/etc")
    write_manifest(b)
    code, out, _ = _verify(capsys, b)
    assert code == 1
    assert out.splitlines()[0] == ("refused: results/etclink: a symbolic link (to '/etc'); a bundle holds only "
                                   "regular files and directories")
    assert out.splitlines()[-1].startswith("bundle NOT OK: 0 altered, 0 missing, 0 unlisted, 1 refused")


@pytest.mark.parametrize("make, rule", [
    (lambda b: os.mkfifo(b / "results" / "pipe"), "results/pipe: a FIFO"),
    (lambda b: os.link(b / "driver.json", b / "results" / "driver-again.json"),
     "results/driver-again.json: a hard link (one of 2 names of one file)"),
])
def test_special_files_and_hard_links_are_refused(tmp_path, capsys, make, rule):
    b = _bundle(tmp_path)
    make(b)
    write_manifest(b)
    code, out, _ = _verify(capsys, b)
    assert code == 1 and f"refused: {rule}; a bundle holds only regular files and directories" in out, out


def test_control_characters_from_the_bundle_are_escaped(tmp_path, capsys):
    b = _bundle(tmp_path, {"certified": False, "verdict": f"not certified{ESC}[2J",
                           "reasons": [f"cts: failed: {ESC}]0;owned\x07 \u202eevil \x9b31m"]})
    code, out, err = _verify(capsys, b)
    assert code == 0, out + err
    assert out.splitlines()[:2] == ["bundle OK: 3 files, verdict not certified\\x1b[2J",
                                    "  cts: failed: \\x1b]0;owned\\x07 \\u202eevil \\x9b31m"]
    _no_escape_codes(out + err)
    (b / "results" / f"{ESC}[31mforged\r").write_text("x")
    code, out, err = _verify(capsys, b)
    assert code == 1 and "unlisted: results/\\x1b[31mforged\\x0d" in out.splitlines()
    _no_escape_codes(out + err)


def test_a_verdict_nested_past_the_recursion_limit_is_unknown_not_a_traceback(tmp_path, capsys):
    """verdict.json nested 100,000 deep (manifest-covered, so it is parsed): json raises
    RecursionError, not ValueError; verify says the verdict is unknown."""
    b = _bundle(tmp_path)
    (b / "verdict.json").write_text("[" * 100_000 + "]" * 100_000)
    signing.seal(b)
    code, out, err = _verify(capsys, b)
    assert code == 0, out + err
    assert out.splitlines()[0].endswith("verdict unknown (verdict.json is not a JSON object)"), out
    assert "Traceback" not in out + err


def test_printable_escapes_controls_only():
    assert printable("caf\u00e9 ok") == "caf\u00e9 ok"
    assert printable(f"a{ESC}b\x00c\x7f\x85\u2028\\") == "a\\x1bb\\x00c\\x7f\\x85\\u2028\\\\"


# --- archives: one root, streamed, bounded ---------------------------------------------------

def test_a_two_root_archive_is_refused(tmp_path, capsys):
    b = _bundle(tmp_path)
    forged = json.dumps({"certified": True, "verdict": "certified"}).encode()
    archive = tmp_path / "two-roots.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:     # evil/ first, then the real bundle
        tar.addfile(_member("evil/verdict.json", size=len(forged)), io.BytesIO(forged))
        tar.add(b, arcname=b.name)
    code, out, _ = _verify(capsys, archive)
    assert code == 1, out
    assert "refused: bundle: outside the top directory 'evil' (a second root); an archive bundle holds one " \
           "top directory" in out
    assert "bundle OK" not in out


@pytest.mark.parametrize("member, rule", [
    (_member("/etc/cron.d/x", size=1), "/etc/cron.d/x: an absolute path"),
    (_member("bundle/../../x", size=1), "bundle/../../x: a '..' component"),
    (_member("bundle/results/etclink", tarfile.SYMTYPE, linkname="/etc"),
     "results/etclink: a symbolic link (to '/etc')"),
    (_member("bundle/results/h", tarfile.LNKTYPE, linkname="bundle/driver.json"),
     "results/h: a hard link (to 'bundle/driver.json')"),
    (_member("bundle/results/dev", tarfile.CHRTYPE), "results/dev: a character device"),
    (_member("bundle/results/fifo", tarfile.FIFOTYPE), "results/fifo: a FIFO"),
])
def test_archive_members_outside_the_rules_are_refused_and_named(tmp_path, capsys, member, rule):
    b = _bundle(tmp_path)
    extra = (member, io.BytesIO(b"x")) if member.size else member
    code, out, _ = _verify(capsys, _archive(tmp_path / "b.tar.gz", b, [extra]))
    assert code == 1 and f"refused: {rule}" in out, out


@pytest.fixture(scope="session")
def big_archives(tmp_path_factory):
    """Two archives of a small bundle plus one member of zeros, made once per session in about
    5 s (gzip level 1: 4.7 MB and 0.9 MB): ``huge`` has a 1 GiB member the manifest does not
    list, ``large`` a 200 MiB member it lists (under the per-file limit: the bundle is OK)."""
    tmp = tmp_path_factory.mktemp("big-archives")
    huge = _archive(tmp / "huge.tar.gz", _bundle(tmp, name="huge"),
                    [(_member("huge/results/zeros.bin", size=GIB), _Zeros(GIB))], level=1)
    large_size = 200 << 20
    b = _bundle(tmp, name="large")
    with open(b / "MANIFEST.sha256", "a") as f:
        f.write(f"{hashlib.sha256(bytes(large_size)).hexdigest()}  results/zeros.bin\n")
    large = _archive(tmp / "large.tar.gz", b, [(_member("large/results/zeros.bin", size=large_size),
                                                _Zeros(large_size))], level=1)
    return huge, large


def test_a_1_gib_member_is_refused_unread_with_bounded_memory(big_archives):
    huge, _ = big_archives
    assert huge.stat().st_size < 8 << 20
    code, out, rss = _verify_process(huge)
    assert code == 1, out
    assert "refused: results/zeros.bin: 1,073,741,824 bytes, more than 268,435,456 (the limit for one " \
           "file); not read" in out
    assert rss < MAX_VERIFY_RSS, f"peak RSS {rss / 2**20:.0f} MiB"


def test_a_large_listed_member_is_hashed_streaming(big_archives):
    _, large = big_archives
    code, out, rss = _verify_process(large)
    assert code == 0 and out.startswith("bundle OK: 4 files, verdict certified"), out
    assert rss < MAX_VERIFY_RSS, f"peak RSS {rss / 2**20:.0f} MiB"


def test_archive_inflation_and_header_limits(tmp_path, capsys, monkeypatch):
    b = _bundle(tmp_path)
    monkeypatch.setattr(bundle_module, "MAX_BUNDLE_BYTES", 64 * 1024)
    padded = _archive(tmp_path / "padded.tar.gz", b, [(_member("bundle/results/pad.bin", size=100_000),
                                                        _Zeros(100_000))])
    code, out, _ = _verify(capsys, padded)
    assert code == 1 and "more than 65,536 (the limit for a bundle)" in out, out
    assert out.splitlines()[-1].endswith("the files were not compared with MANIFEST.sha256")
    monkeypatch.setattr(bundle_module, "MAX_BUNDLE_BYTES", 1 << 30)
    monkeypatch.setattr(bundle_module, "MAX_HEADER_BYTES", 4096)
    pax = _archive(tmp_path / "pax.tar.gz", b, [(_member("bundle/results/x", size=1, pax={"comment": "x" * 200_000}),
                                                 io.BytesIO(b"x"))])
    code, out, _ = _verify(capsys, pax)
    assert code == 1 and "tar headers of the member after" in out and "(the limit)" in out, out


def test_file_count_and_manifest_line_limits(tmp_path, capsys, monkeypatch):
    b = _bundle(tmp_path)
    monkeypatch.setattr(bundle_module, "MAX_ENTRIES", 4)
    code, out, _ = _verify(capsys, b)
    assert code == 1 and "more than 4 files and directories (the limit)" in out, out
    with pytest.raises(NotABundle, match="5 lines, more than 4 "):
        parse_manifest(f"{'0' * 64}  a\n" * 5, "m")


# --- keys and signatures ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Two key pairs: ``(private key, public key path)`` each."""
    out = []
    for name in ("signer", "other"):
        private, public, _ = signing.keygen(tmp_path_factory.mktemp(name))
        out.append((signing.load_private_key(private), public))
    return out


def test_keygen_writes_a_0600_key_and_refuses_to_overwrite(tmp_path, capsys):
    old = os.umask(0)         # even with an empty umask the private key is never readable by others
    try:
        assert main(["keygen", str(tmp_path / "keys")]) == 0
    finally:
        os.umask(old)
    out = capsys.readouterr().out
    private, public = tmp_path / "keys" / "nncts-signing.key", tmp_path / "keys" / "nncts-signing.pub"
    assert private.stat().st_mode & 0o777 == 0o600
    assert private.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    assert public.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    fingerprint = signing.fingerprint(signing.load_public_key(public))
    assert fingerprint == signing.fingerprint(signing.load_private_key(private).public_key())
    assert f"fingerprint: {fingerprint}\n" in out and len(fingerprint) == len("SHA256:") + 43
    before = private.read_bytes()
    with pytest.raises(SystemExit) as e:
        main(["keygen", str(tmp_path / "keys")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "nncts-signing.key: exists" in err
    assert private.read_bytes() == before


@pytest.mark.parametrize("packed", [False, True], ids=["directory", "archive"])
def test_a_signed_bundle_verifies_with_its_public_key(tmp_path, capsys, keys, packed):
    (key, public), _ = keys
    b = _bundle(tmp_path, key=key)
    target = write_archive(b) if packed else b
    fingerprint = signing.fingerprint(key.public_key())
    code, out, _ = _verify(capsys, target, "--public-key", public)
    assert code == 0 and out == (f"bundle OK: 4 files, verdict certified\n"
                                 f"signature: good, signed by {fingerprint} (--public-key {public})\n"), out
    code, out, _ = _verify(capsys, target)
    assert code == 0 and out.splitlines()[-1] == f"signature: signed by {fingerprint} (not checked: pass --public-key)"


@pytest.mark.parametrize("packed", [False, True], ids=["directory", "archive"])
def test_a_remanifested_forgery_does_not_match_the_signature(tmp_path, capsys, keys, packed):
    (key, public), _ = keys
    b = _bundle(tmp_path, {"certified": False, "verdict": "not certified", "reasons": ["cts: failed: 3 failing"]},
                key=key)
    (b / "verdict.json").write_text(json.dumps({"certified": True, "verdict": "certified", "reasons": []}))
    write_manifest(b)            # the forger's manifest is consistent: only the signature can tell
    target = write_archive(b) if packed else b
    code, out, _ = _verify(capsys, target)
    assert code == 0 and "signed by SHA256:" in out      # integrity alone cannot tell
    code, out, _ = _verify(capsys, target, "--public-key", public)
    assert code == 1 and out.startswith("signature does not match: MANIFEST.sha256.sig is not the signature of "
                                        "this MANIFEST.sha256 by the key SHA256:"), out
    assert out.splitlines()[-1].endswith("; signature does not match") and "verdict certified" not in out


def test_another_key_or_a_swapped_signer_does_not_match(tmp_path, capsys, keys):
    (key, _), (other, other_public) = keys
    b = _bundle(tmp_path, key=key)
    code, out, _ = _verify(capsys, b, "--public-key", other_public)
    assert code == 1 and "signature does not match" in out
    (b / "SIGNER").write_text(signing.fingerprint(other.public_key()) + "\n")   # claim the other signer
    write_manifest(b)
    code, out, _ = _verify(capsys, b, "--public-key", other_public)
    assert code == 1 and "signature does not match" in out


def test_an_unsigned_bundle_with_a_public_key_fails(tmp_path, capsys, keys):
    (_, public), _ = keys
    b = _bundle(tmp_path)
    code, out, _ = _verify(capsys, b)
    assert code == 0 and out.splitlines()[-1] == "signature: none (the bundle is unsigned)"
    code, out, _ = _verify(capsys, b, "--public-key", public)
    assert code == 1 and out.startswith("bundle is unsigned: no MANIFEST.sha256.sig"), out


def test_a_bad_public_or_signing_key_is_one_line_and_exit_2(tmp_path, capsys, keys):
    (_, public), _ = keys
    b = _bundle(tmp_path)
    code, _, err = _verify(capsys, b, "--public-key", b / "driver.json")
    assert code == 2 and err.count("\n") == 1 and "driver.json: not a PEM Ed25519 public key" in err
    for key, message in ((tmp_path / "none.key", "none.key: cannot read it"),
                         (public, "nncts-signing.pub: not an unencrypted PEM Ed25519 private key")):
        with pytest.raises(SystemExit) as e:
            main(["certify", "--driver", "sample", "--out", str(tmp_path / "out"), "--sign-key", str(key)])
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1 and "--sign-key: " in err and message in err, err
    assert not (tmp_path / "out").exists()      # caught before any suite started
