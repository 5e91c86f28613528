"""convnorm_book.chapters.two_dimensions: the numbers of Chapter 5's kernel figure and explorer, and bad
settings refused by name."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from convnorm_book.chapters.two_dimensions import kernel_filter_explorer, kernel_filter_view


def test_kernel_filter_view_of_the_identity_kernel(rng):
    photo = torch.from_numpy(rng.random((1, 7, 8)))
    identity = [0, 0, 0, 0, 1, 0, 0, 0, 0]
    view = kernel_filter_view(identity, photo, eps=0.0)
    np.testing.assert_allclose(view["magnitude"], 1)
    np.testing.assert_allclose(view["filtered"], photo[0].numpy())
    np.testing.assert_allclose(view["normed"], photo[0].numpy())


@pytest.mark.parametrize("call, argument", [
    (lambda: kernel_filter_view([1, 2, 3], torch.zeros(1, 8, 8)), "kernel"),
    (lambda: kernel_filter_view([0] * 9, torch.zeros(8, 8)), "photo"),
    (lambda: kernel_filter_explorer(torch.zeros(3, 8, 8)), "photo"),
])
def test_bad_settings_are_refused_by_name(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()
