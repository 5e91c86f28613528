"""convnorm_book.chapters.all_pass_filters: the numbers of Chapter 2's figure and explorer state the
chapter's identities, and the explorer refuses bad settings by name."""
from __future__ import annotations

import numpy as np
import pytest

from convnorm_book.chapters.all_pass_filters import KERNEL_PRESETS, allpass_explorer, allpass_view


@pytest.mark.parametrize("n", [15, 16])
def test_allpass_view_is_all_pass_with_the_kernels_phase(rng, n):
    a = rng.standard_normal(4)
    view = allpass_view(a, n)
    np.testing.assert_allclose(np.abs(view["g_hat"]), 1)
    np.testing.assert_allclose(np.angle(view["g_hat"]), np.angle(view["a_hat"]))
    np.testing.assert_allclose(np.fft.rfft(view["g"]), view["g_hat"], atol=1e-12)
    np.testing.assert_allclose(np.fft.rfft(view["v"]).real, view["v_hat"])
    assert view["kappa_q"] == pytest.approx(1)
    assert view["kappa_a"] == pytest.approx(np.linalg.cond(np.stack([np.roll(view["a"], j) for j in range(n)])))


def test_allpass_view_of_a_singular_kernel():
    view = allpass_view(KERNEL_PRESETS["edge detector"], 16, eps=1e-6)
    assert view["kappa_a"] == view["kappa_q"] == np.inf  # |a^_0| = 0 stays 0 whatever eps is


@pytest.mark.parametrize("call, argument", [
    (lambda: allpass_explorer(preset="nope"), "preset"),
    (lambda: allpass_explorer(eps=0.5), "eps"),
])
def test_bad_settings_are_refused_by_name(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()
