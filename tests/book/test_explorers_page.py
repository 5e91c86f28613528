"""convnorm_book.explorers.page: an explorer's HTML output carries its code and data safely (the
browser side is tested in test_explorers_parity.py and test_site_browser.py)."""
from __future__ import annotations

import json
import re

import pytest

from convnorm_book.chapters.all_pass_filters import allpass_explorer
from convnorm_book.explorers.page import LIBRARY, Explorer, encode_bytes, source


def test_explorer_html_carries_its_code_and_data():
    explorer = allpass_explorer()
    html = explorer.html()
    for name in (*LIBRARY, "allpass.js", "explorer.css"):
        assert source(name) in html
    config = json.loads(re.search(r"\.mount\(root, (\{.*\})\); \}", html).group(1))
    assert config["presets"]["box blur"] == [1 / 3] * 3 and config["eps"] == 0.0
    assert explorer._repr_html_().count('class="cx-explorer"') == 1
    ids = set(re.findall(r'id="(cx-allpass-[0-9a-f]+)"', html + explorer.html()))
    assert len(ids) == 2, "two displays of an explorer need two element ids"


def test_explorer_html_cannot_be_closed_by_its_data():
    html = Explorer("allpass", "allpass.js", "</script><script>alert(1)</script>", {}).html()
    assert html.count("</script>") == 1
    assert html.count("<script>") == 1


@pytest.mark.parametrize("call, argument", [
    (lambda: encode_bytes([0, 256]), "values"),
    (lambda: Explorer("allpass", "missing.js", "title", {}), "script"),
])
def test_bad_settings_are_refused_by_name(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()
