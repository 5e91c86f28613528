"""The explorers' Python side: the reference views state the chapters' identities, the
constructors refuse bad settings by name, and an explorer's HTML output carries its code and
data safely (the browser side is tested in test_explorers_parity.py and test_site_browser.py)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from convnorm_book.explorers import chapters, views
from convnorm_book.explorers.page import LIBRARY, Explorer, encode_bytes, source
from convnorm_book.figures_onedim import KERNEL_PRESETS


@pytest.mark.parametrize("n", [15, 16])
def test_allpass_view_is_all_pass_with_the_kernels_phase(rng, n):
    a = rng.standard_normal(4)
    view = views.allpass_view(a, n)
    np.testing.assert_allclose(np.abs(view["g_hat"]), 1)
    np.testing.assert_allclose(np.angle(view["g_hat"]), np.angle(view["a_hat"]))
    np.testing.assert_allclose(np.fft.rfft(view["g"]), view["g_hat"], atol=1e-12)
    np.testing.assert_allclose(np.fft.rfft(view["v"]).real, view["v_hat"])
    assert view["kappa_q"] == pytest.approx(1)
    assert view["kappa_a"] == pytest.approx(np.linalg.cond(np.stack([np.roll(view["a"], j) for j in range(n)])))


def test_allpass_view_of_a_singular_kernel():
    view = views.allpass_view(KERNEL_PRESETS["edge detector"], 16, eps=1e-6)
    assert view["kappa_a"] == view["kappa_q"] == np.inf  # |a^_0| = 0 stays 0 whatever eps is


@pytest.mark.parametrize("n", [8, 9])
def test_padding_stride_view_separates_circular_from_zero_padding(n):
    weight = chapters.padding_weights()[3]
    for stride in (1, 2):
        circular = views.padding_stride_view(weight, n, 1, stride, "circular")
        np.testing.assert_allclose(circular["eigenvalues"], 1)
        assert circular["distances"].max() < 1e-12
        zero = views.padding_stride_view(weight, n, 1, stride)
        assert zero["eigenvalues"].shape == (2, (n + 2 - 3) // stride + 1)
        assert zero["distances"].min() > 1e-2
        np.testing.assert_allclose(zero["distances"], np.abs(zero["eigenvalues"] - 1).max(1))


def test_channel_singular_value_pair_is_the_figure_of_chapter_3():
    sigma_a, sigma_q = views.channel_singular_value_pair(3, 3, 32, seed=0)
    assert np.all(np.diff(sigma_a) <= 0) and sigma_a.shape == (32,)
    np.testing.assert_allclose(sigma_q, 1)


def test_kernel_filter_view_of_the_identity_kernel(rng):
    photo = torch.from_numpy(rng.random((1, 7, 8)))
    identity = [0, 0, 0, 0, 1, 0, 0, 0, 0]
    view = views.kernel_filter_view(identity, photo, eps=0.0)
    np.testing.assert_allclose(view["magnitude"], 1)
    np.testing.assert_allclose(view["filtered"], photo[0].numpy())
    np.testing.assert_allclose(view["normed"], photo[0].numpy())


@pytest.mark.parametrize("call, argument", [
    (lambda: views.kernel_filter_view([1, 2, 3], torch.zeros(1, 8, 8)), "kernel"),
    (lambda: views.kernel_filter_view([0] * 9, torch.zeros(8, 8)), "photo"),
    (lambda: views.padding_stride_view(torch.zeros(2, 3), 8, 0, 1), "weight"),
    (lambda: views.kernel_spectrum_view([1.0, np.nan], 8), "kernel"),
    (lambda: chapters.kernel_spectrum_explorer(kernel=(1, 2)), "kernel"),
    (lambda: chapters.allpass_explorer(preset="nope"), "preset"),
    (lambda: chapters.allpass_explorer(eps=0.5), "eps"),
    (lambda: chapters.singular_value_explorer(c_in=9), "c_in"),
    (lambda: chapters.padding_stride_explorer(padding=3), "padding"),
    (lambda: chapters.kernel_filter_explorer(torch.zeros(3, 8, 8)), "photo"),
    (lambda: encode_bytes([0, 256]), "values"),
])
def test_bad_settings_are_refused_by_name(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()


def test_explorer_html_carries_its_code_and_data():
    explorer = chapters.allpass_explorer()
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
