"""The HTML report: one self-contained page, rendered by headless Chromium (Debian `chromium`)."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Iterable
from pathlib import Path

import pytest
from testsupport import PUBLISHED_DATA, REPO_ROOT

from leaderboard.report import Z95, build_report, wilson_interval

PUBLISHED = str(PUBLISHED_DATA / "*__results__*.json")
SAMPLE = str(REPO_ROOT / "leaderboard" / "results")


def test_wilson_interval_closed_forms() -> None:
    z2 = Z95 * Z95
    low, high = wilson_interval(0, 5)
    assert low == 0.0 and high == pytest.approx(z2 / (5 + z2))
    low, high = wilson_interval(7, 7)
    assert low == pytest.approx(7 / (7 + z2)) and high == 1.0
    low, high = wilson_interval(1, 7)
    assert (round(low, 4), round(high, 4)) == (0.0257, 0.5131)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def _row_count(paths: Iterable[Path]) -> int:
    total = 0
    for path in paths:
        document = json.loads(path.read_text())
        total += sum(len(envelope["results"]) for envelope in document["results"])
    return total


def test_page_is_self_contained() -> None:
    html = build_report([PUBLISHED, SAMPLE])
    assert html.startswith("<!DOCTYPE html>")
    for forbidden in ("<script", "<link", "src=", "@import", "url("):
        assert forbidden not in html
    # The only URL is the SVG namespace.
    assert set(re.findall(r"https?://[^\s\"'<]+", html)) == {"http://www.w3.org/2000/svg"}
    assert html.count("<svg") == 2
    assert html.count('data-query="') == 3
    # Per-task rows: every public row of the inputs.
    tasks = html.split('data-table="tasks"')[1]
    assert tasks.count("<tr class=") == _row_count(PUBLISHED_DATA.glob("*__results__*.json")) + (
        _row_count(Path(SAMPLE).glob("*.json"))
    )
    # Infra failures of sample agent b show up with their categories.
    infra = html.split('data-table="infra"')[1].split("</table>")[0]
    assert "019e5a00-0000-7000-8000-00000000000b" in infra


def test_values_are_escaped(tmp_path: Path) -> None:
    html = build_report([PUBLISHED], title="<b>board</b>")
    assert "<title>&lt;b&gt;board&lt;/b&gt;</title>" in html


def _png_size_and_variety(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct scanline bytes (a blank page has very few)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat, pos = b"", 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return width, height, len(set(zlib.decompress(idat)))


def test_chromium_renders_the_page(tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("headless Chromium is not installed (Debian package `chromium`)")
    page = tmp_path / "leaderboard.html"
    page.write_text(build_report([PUBLISHED, SAMPLE]), encoding="utf-8")
    common = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-extensions",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    for expected in (
        "019e5799-ca68-7b33-b1a5-c97b92b6fda1",
        "940.6",
        "2.6 – 51.3",
        "Pass rate by category",
        "office-white-collar",
        "Per-task results",
    ):
        assert expected in dom.stdout
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [
            *common,
            "--hide-scrollbars",
            "--window-size=1280,1600",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    width, height, variety = _png_size_and_variety(shot)
    assert (width, height) == (1280, 1600)
    assert variety > 50
