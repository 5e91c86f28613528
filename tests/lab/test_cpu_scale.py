"""The rule that chooses the cpu scale from its measured table (``convnorm_lab.experiments.cpu_scale``)."""
from __future__ import annotations

from convnorm_lab.experiments.cpu_scale import CANDIDATES, MAX_MINUTES, MIN_ACCURACY, SCALE_SEED, TIE, choose
from convnorm_lab.experiments.learning_rate import DECLARED


def row(width, images, epochs, accuracy, minutes):
    return {"width": width, "images": images, "epochs": epochs, "test_acc": accuracy, "cpu_s": 60 * minutes}


def test_the_most_accurate_qualifying_row_is_chosen_and_a_tie_goes_to_the_fastest():
    rows = [row(16, 10_000, 10, 0.84, 1.0),  # too inaccurate
            row(32, 25_000, 10, 0.91, 6.0),  # too slow
            row(16, 20_000, 10, 0.872, 2.5),
            row(16, 25_000, 10, 0.8725, 2.9),  # within the tie of the row above, and slower
            row(16, 15_000, 10, 0.86, 2.0)]
    assert choose(rows) is rows[2]
    assert choose(rows[:2]) is None
    assert choose([row(16, 1, 1, MIN_ACCURACY, MAX_MINUTES)]) is not None  # the bounds qualify
    assert choose([row(16, 1, 1, MIN_ACCURACY - TIE, MAX_MINUTES)]) is None


def test_the_measurements_use_a_seed_no_record_reports_nor_the_rule_chooses_with():
    assert SCALE_SEED not in range(10) and SCALE_SEED != DECLARED.trial_seed
    assert len(set(CANDIDATES)) == len(CANDIDATES)
