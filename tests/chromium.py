"""Headless Chromium for the tests: print a page to PDF as a browser does, and list the requests the
page itself made (from Chromium's net log), so that a test can say "self-contained" of what a browser
really fetched, not of what a regular expression found in the HTML.

Chromium is a system package (Debian ``chromium``, installed by ``make system-deps``); on a machine
without it these tests skip with the hint, and CI (``CI`` set) fails instead, so a green CI has run them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

#: Chromium's own background traffic (updates, the clock, accounts) is switched off where a flag allows,
#: and told apart from the page's requests by its initiator ("not an origin"): a page opened from a
#: file has the opaque origin "null".
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync",
         "--disable-component-update", "--disable-default-apps", "--disable-extensions", "--no-first-run",
         "--no-pdf-header-footer")


def chromium() -> str:
    """The Chromium binary; skips the test without one (fails it under CI)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "headless Chromium is not installed (Debian: apt-get install chromium; `make system-deps`)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def print_pdf(page: Path, pdf: Path, *, timeout: int = 120) -> list[str]:
    """Print ``page`` (an HTML file) to ``pdf`` with headless Chromium (A4 from the page's ``@page``,
    else Letter), and return the URLs the page requested that are not ``file:`` or ``data:`` ones.

    Raises
    ------
    AssertionError
        Chromium exited non-zero or wrote no PDF.
    """
    with tempfile.TemporaryDirectory(prefix="chromium-") as home:
        log = Path(home) / "net.json"
        proc = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={home}/profile", f"--log-net-log={log}",
                               f"--print-to-pdf={pdf}", page.resolve().as_uri()],
                              capture_output=True, text=True, timeout=timeout, env=dict(os.environ, HOME=home))
        assert proc.returncode == 0 and pdf.exists(), proc.stderr[-2000:]
        return page_requests(json.loads(log.read_text()))


def page_requests(net_log: dict) -> list[str]:
    """The URLs of the requests a page made (``URL_REQUEST_START_JOB`` events whose initiator is an
    origin), other than ``file:`` and ``data:`` ones, in a Chromium net log."""
    types = {v: k for k, v in net_log["constants"]["logEventTypes"].items()}
    urls = []
    for event in net_log["events"]:
        params = event.get("params") or {}
        if types.get(event["type"]) != "URL_REQUEST_START_JOB" or "url" not in params:
            continue
        if params.get("initiator") == "not an origin":  # the browser's own traffic
            continue
        if not params["url"].startswith(("file:", "data:")):
            urls.append(params["url"])
    return urls


def pdf_pages(pdf: Path) -> tuple[int, str]:
    """The page count and the first page's size (``pdfinfo``: "594.96 x 841.92 pts (A4)")."""
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return int(fields["Pages"]), fields["Page size"].strip()
