"""Pages the project writes, seen as a person sees them: rendered by headless Chromium
(Debian's ``chromium`` package, which ``.ci/run`` installs). Tests that render skip, with that
reason, only when ``/usr/bin/chromium`` is missing."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")

#: Mark for tests that need Chromium.
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason="/usr/bin/chromium missing (Debian package chromium)")


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """Run headless Chromium with a fresh profile under ``tmp_path`` and no network chatter
    (``args``: e.g. ``--dump-dom URL`` or ``--screenshot=PNG URL``)."""
    return subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                           *args], capture_output=True, text=True, timeout=180)


def rendered_dom(tmp_path: Path, page: Path) -> str:
    """The DOM of ``page`` after Chromium rendered it (assert on what is shown)."""
    r = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def screenshot(tmp_path: Path, page: Path, size: str = "1200,2400") -> Path:
    """A PNG of ``page`` as Chromium draws it in a window of ``size`` pixels."""
    shot = tmp_path / (page.stem + ".png")
    r = chromium(tmp_path, f"--screenshot={shot}", f"--window-size={size}", page.as_uri())
    assert r.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", r.stderr[-2000:]
    return shot
