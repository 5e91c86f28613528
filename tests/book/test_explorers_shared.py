"""convnorm_book.explorers.shared: the ε values of the explorers' sliders and the condition number of
their readouts."""
from __future__ import annotations

import numpy as np

from convnorm_book.explorers.shared import EPS_DECADES, condition_number


def test_the_eps_sliders_step_through_every_decade_up_to_one():
    assert EPS_DECADES[0] == 1e-12 and EPS_DECADES[-1] == 1.0
    np.testing.assert_allclose(np.diff(np.log10(EPS_DECADES)), 1)


def test_the_condition_number_is_the_largest_over_the_smallest_and_infinite_at_zero():
    assert condition_number(np.array([4.0, 2.0, 0.5])) == 8.0
    assert condition_number(np.array([1.0, 0.0])) == np.inf
