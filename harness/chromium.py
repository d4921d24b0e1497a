"""Make Debian's Chromium and a Chinese font available for the tests, or say how to.

``python -m harness.chromium`` (run by ``make test`` before pytest): when
/usr/bin/chromium or the CJK font is missing and we are root on a system with apt-get, it
installs the ``chromium`` and ``fonts-noto-cjk`` packages quietly (the Chinese lessons' figures
and canvases draw with that font; tests/core/test_language.py fails without it). Otherwise it
prints how to enable the browser tests. It never fails the run: without Chromium the browser
tests are skipped with the same message.
Playwright drives this system Chromium; ``playwright install`` (a download) is never used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CJK_FONT = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")  # fonts-noto-cjk

HOW_TO_ENABLE = (
    f"browser tests need Chromium at {CHROMIUM} and the Python package playwright; "
    "on Debian/Ubuntu run `sudo apt-get install chromium` (then `make test` again), "
    "and `pip install playwright` if it is missing (never `playwright install`)"
)


def playwright_missing() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return True
    return False


def unavailable_reason() -> str | None:
    """Return why the browser tests cannot run here, or None when they can."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found: {HOW_TO_ENABLE}"
    if playwright_missing():
        return f"playwright is not importable: {HOW_TO_ENABLE}"
    return None


def _run_quiet(command: list[str]) -> bool:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-5:])
        print(f"chromium: `{' '.join(command)}` failed ({result.returncode}):\n{tail}")
    return result.returncode == 0


def install_chromium() -> bool:
    """Install Debian's chromium and fonts-noto-cjk with apt-get (root only); True if present."""
    apt_get = shutil.which("apt-get")
    if apt_get is None or getattr(os, "geteuid", lambda: -1)() != 0:
        return False
    packages = [
        p for p, f in (("chromium", CHROMIUM), ("fonts-noto-cjk", CJK_FONT)) if not f.exists()
    ]
    print(f"chromium: installing {' '.join(packages)} with apt-get (about 60 s) ...", flush=True)
    if not _run_quiet([apt_get, "update", "-qq"]):
        return False
    _run_quiet([apt_get, "install", "-y", "-qq", *packages])
    return CHROMIUM.exists()


def main() -> int:
    if not CHROMIUM.exists() or not CJK_FONT.exists():
        install_chromium()
    if not CJK_FONT.exists():
        print(f"chromium: no Chinese font at {CJK_FONT}: apt-get install fonts-noto-cjk")
    reason = unavailable_reason()
    if reason is None:
        print(f"chromium: browser tests enabled ({CHROMIUM})")
    else:
        print(f"chromium: browser tests will be SKIPPED: {reason}")
    return 0  # never fail the run: pytest skips the browser tests with the reason above


if __name__ == "__main__":
    sys.exit(main())
