"""Headless Chromium: screenshot a report or dump its DOM, for checks that a page really renders.

Chromium is an optional system program (Debian ``chromium``, ``chromium-browser`` or
``google-chrome``); nothing here is needed to *write* reports. Every call uses a fresh temporary
profile and flags that stop Chromium from contacting the network on its own.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from biaslab.errors import BiaslabError

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)

# Lines Chromium (and Debian's /usr/bin/chromium shell wrapper) print even on success.
_NOISE = ("unexpected operator", "dbus", "Fontconfig", "bytes written to file")


def find_chromium() -> str | None:
    """Locate a Chromium-family browser on ``PATH``.

    Returns:
        The full path of the first of ``chromium``, ``chromium-browser``, ``google-chrome``
        found, or ``None`` if there is none.
    """
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _last_error_line(stderr: str) -> str:
    """The last stderr line that is not known harmless noise (or a generic note)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not any(n in ln for n in _NOISE)]
    return (useful or lines or ["no error output"])[-1][:300]


def _run_chromium(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Run Chromium with the standard flags, a fresh profile and ``args``; kill it on timeout.

    Args:
        args: extra arguments (window size, ``--screenshot=...``/``--dump-dom``, the URL).
        timeout: seconds before the whole process group is killed.

    Returns:
        The completed process (stdout and stderr as text).

    Raises:
        BiaslabError: if Chromium is not installed, times out or exits with an error.
    """
    exe = find_chromium()
    if exe is None:
        raise BiaslabError(
            "headless Chromium not found: install the 'chromium' package "
            f"(looked for {', '.join(CANDIDATES)} on PATH)"
        )
    with tempfile.TemporaryDirectory(prefix="biaslab-chromium-", ignore_cleanup_errors=True) as profile:
        cmd = [exe, *_FLAGS, f"--user-data-dir={profile}", *args]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the group Chromium's helpers live in
            proc.communicate()
            raise BiaslabError(f"Chromium did not finish within {timeout} s") from None
    if proc.returncode != 0:
        raise BiaslabError(f"Chromium failed (exit status {proc.returncode}): {_last_error_line(err)}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _file_url(html_path) -> str:
    """A ``file://`` URL for an existing HTML file."""
    path = Path(html_path).resolve()
    if not path.is_file():
        raise BiaslabError(f"{html_path}: file not found")
    return path.as_uri()


def screenshot(html_path, png_path, width: int = 1280, height: int = 4000, timeout: float = 60) -> Path:
    """Render ``html_path`` in headless Chromium and save a PNG of the window.

    The screenshot is exactly ``width`` x ``height`` pixels at device scale factor 1, so images
    on the page appear at their natural pixel size; the page is cut off below ``height``.

    Args:
        html_path: the HTML file to open.
        png_path: where to write the screenshot (parent folders are created).
        width: window width in CSS pixels.
        height: window height in CSS pixels.
        timeout: seconds to wait for Chromium.

    Returns:
        The path of the written PNG.

    Raises:
        BiaslabError: if Chromium is missing, fails, times out or writes no screenshot.
    """
    url = _file_url(html_path)
    png = Path(png_path).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    proc = _run_chromium([f"--window-size={width},{height}", f"--screenshot={png}", url], timeout)
    if not png.is_file() or png.stat().st_size == 0:
        raise BiaslabError(f"Chromium wrote no screenshot to {png}: {_last_error_line(proc.stderr)}")
    return png


def dump_dom(html_path, timeout: float = 60, width: int = 1280, height: int = 900) -> str:
    """Load ``html_path`` in headless Chromium and return the serialised DOM after loading.

    Args:
        html_path: the HTML file to open.
        timeout: seconds to wait for Chromium.
        width, height: the window, in CSS pixels (the page's layout depends on its width).

    Returns:
        The DOM as HTML text (what the browser parsed, not the file's bytes).

    Raises:
        BiaslabError: if Chromium is missing, fails, times out or prints nothing.
    """
    proc = _run_chromium([f"--window-size={width},{height}", "--dump-dom", _file_url(html_path)], timeout)
    if not proc.stdout.strip():
        raise BiaslabError(f"Chromium printed no DOM for {html_path}: {_last_error_line(proc.stderr)}")
    return proc.stdout


_RESULT_ID = "biaslab-evaluated"


def evaluate(html_path, expression: str, width: int = 1280, height: int = 900, timeout: float = 60):
    """The value of a JavaScript ``expression`` in ``html_path`` as Chromium lays it out in a
    ``width`` x ``height`` window, after the page's own scripts ran: element positions
    (``getBoundingClientRect``), the effect of a click, ...

    The page is copied to a temporary folder with a script appended that evaluates
    ``expression`` and writes its JSON into the DOM, which :func:`dump_dom` then reads; the
    file itself is left as it is. For tests: the expression is trusted code.

    Returns:
        The expression's value, decoded from JSON.

    Raises:
        BiaslabError: as :func:`dump_dom`, or if the expression's value did not come back.
    """
    page = Path(html_path).read_text(encoding="utf-8")
    probe = (
        f'<script>(function () {{ var out = document.createElement("pre"); out.id = "{_RESULT_ID}"; '
        f"out.textContent = JSON.stringify({expression}); document.body.appendChild(out); }})();</script>"
    )
    with tempfile.TemporaryDirectory(prefix="biaslab-evaluate-") as folder:
        copy = Path(folder) / Path(html_path).name
        copy.write_text(page + probe, encoding="utf-8")
        dom = dump_dom(copy, timeout, width, height)
    found = re.search(rf'<pre id="{_RESULT_ID}">(.*?)</pre>', dom, re.DOTALL)
    if found is None:
        raise BiaslabError(f"the expression left no value in {html_path} (a script error?)")
    return json.loads(html.unescape(found.group(1)))
