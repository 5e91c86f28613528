"""What several chapters' explorers share beyond their page (:mod:`.page`): the values their
ε sliders step through and the condition number their readouts show."""
from __future__ import annotations

import numpy as np

#: The regularisers the ε sliders step through: 0 (chapter 2 only), then every decade up to 1.
EPS_DECADES = [10.0**e for e in range(-12, 1)]


def condition_number(values: np.ndarray) -> float:
    """``max / min`` of non-negative ``values`` (singular values), ``inf`` when the smallest is 0."""
    smallest = values.min()
    return float(values.max() / smallest) if smallest > 0 else float("inf")
