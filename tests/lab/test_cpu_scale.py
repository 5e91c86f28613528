"""The rule that chooses the cpu scale from its measured table (``convnorm_lab.experiments.cpu_scale``)."""
from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

from convnorm_lab.experiments.cpu_scale import (
    MAX_MINUTES,
    MIN_ACCURACY,
    ROUNDS,
    SCALE_SEED,
    TIE,
    choose,
    choose_accurate,
)
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
    every = [candidate for number in ROUNDS for candidate in ROUNDS[number]]
    assert len(set(every)) == len(every)  # no candidate is measured twice


def test_round_two_takes_the_fastest_row_that_reaches_the_accuracy_whatever_its_minutes():
    rows = [row(16, 25_000, 16, 0.84, 9.0),  # too inaccurate, however fast
            row(32, 25_000, 12, 0.88, 20.0),
            row(24, 25_000, 12, MIN_ACCURACY, 14.0)]  # the bound reaches it
    assert choose_accurate(rows) is rows[2]
    assert choose_accurate(rows[:1]) is None


def _script():
    path = Path(__file__).resolve().parents[2] / "scripts" / "measure_cpu_scale.py"
    spec = importlib.util.spec_from_file_location("measure_cpu_scale", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_parts_of_a_round_share_its_candidates_without_overlap_and_bad_parts_are_refused():
    script = _script()
    for n in (1, 2, 3):
        shares = [ROUNDS[2][k::n] for k, _ in (script.part(f"{k}/{n}") for k in range(n))]
        assert sorted(ROUNDS[2].index(c) for share in shares for c in share) == list(range(len(ROUNDS[2])))
    for bad in ("2/2", "-1/2", "1", "a/b"):
        with pytest.raises(argparse.ArgumentTypeError, match="--part"):
            script.part(bad)
