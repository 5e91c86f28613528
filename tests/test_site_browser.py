"""Open the built website in headless Chromium with networking disabled and check that
the intro's widget renders and the math is typeset, from the vendored JavaScript alone.

The screenshot is saved to ``_build/screenshots/intro.png`` for a person to look at.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "_build" / "screenshots"


def chromium(page: Path, profile: Path, *mode: str) -> str:
    """Run headless Chromium on ``page`` with every network lookup failing."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.fail("Chromium is not installed (Debian: apt-get install -y chromium); .ci/run installs it")
    command = [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}",
        # No network: every host name fails to resolve and any proxy use goes nowhere.
        "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
        "--virtual-time-budget=20000", "--window-size=1200,2600", "--hide-scrollbars",
        *mode, page.as_uri(),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=True).stdout


@pytest.fixture(scope="module")
def intro_dom(built_site, tmp_path_factory):
    page = built_site / "book" / "intro.html"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    chromium(page, tmp_path_factory.mktemp("profile"), f"--screenshot={SCREENSHOTS / 'intro.png'}")
    return chromium(page, tmp_path_factory.mktemp("profile"), "--dump-dom")


def test_pages_load_scripts_from_the_site_only(built_site):
    html = (built_site / "book" / "intro.html").read_text()
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', html)
    external = [s for s in scripts if re.match(r"(https?:)?//", s)]
    assert not external, f"pages load scripts from the network: {external}"
    assert any("_vendor/mathjax" in s for s in scripts)
    assert any("_vendor/html-manager" in s for s in scripts)


def test_math_is_typeset(intro_dom):
    assert intro_dom.count("<mjx-container") >= 5, "MathJax did not typeset the page"


def test_intro_widget_renders(intro_dom):
    sliders = intro_dom.count("widget-slider")
    assert sliders >= 4, f"expected the intro's four sliders, found {sliders} slider elements"
    output = intro_dom[intro_dom.find("widget-output"):]
    assert re.search(r'<img[^>]+src="data:image/png;base64,', output), (
        "the widget's output area holds no plot"
    )


def test_screenshot_saved(intro_dom):
    shot = SCREENSHOTS / "intro.png"
    assert shot.exists() and shot.stat().st_size > 50_000
