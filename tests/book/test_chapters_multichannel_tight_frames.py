"""convnorm_book.chapters.multichannel_tight_frames: the singular values of Chapter 3's figure and explorer."""
from __future__ import annotations

import numpy as np
import pytest

from convnorm_book.chapters.multichannel_tight_frames import channel_singular_value_pair, singular_value_explorer


def test_channel_singular_value_pair_is_the_figure_of_chapter_3():
    sigma_a, sigma_q = channel_singular_value_pair(3, 3, 32, seed=0)
    assert np.all(np.diff(sigma_a) <= 0) and sigma_a.shape == (32,)
    np.testing.assert_allclose(sigma_q, 1)


def test_bad_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="c_in"):
        singular_value_explorer(c_in=9)
