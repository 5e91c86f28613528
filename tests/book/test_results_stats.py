"""convnorm_book.results.stats: Student's t quantiles, seed statistics with failed trainings
counted, differences paired by seed with their t-interval and p-value, and Holm's correction."""
from __future__ import annotations

import math

import numpy as np
import pytest

from convnorm_book.results import records, stats
from result_files import record, results_root, write

# two-sided 95 % and 99 % critical values of Student's t (standard tables)
T_TABLE = {(0.975, 1): 12.7062, (0.975, 2): 4.3027, (0.975, 3): 3.1824, (0.975, 4): 2.7764, (0.975, 9): 2.2622,
           (0.975, 30): 2.0423, (0.995, 2): 9.9248, (0.995, 5): 4.0321}


@pytest.mark.parametrize(("p", "df"), list(T_TABLE))
def test_t_quantile_matches_the_tables(p, df):
    assert math.isclose(stats.t_quantile(p, df), T_TABLE[p, df], abs_tol=1e-4)


def test_t_quantile_matches_scipy_where_available():
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in range(1, 25):
        for p in (0.6, 0.9, 0.975, 0.999):
            assert math.isclose(stats.t_quantile(p, df), scipy_stats.t.ppf(p, df), rel_tol=1e-9)


def test_t_quantile_rejects_bad_arguments():
    with pytest.raises(ValueError, match="p must"):
        stats.t_quantile(0.4, 3)
    with pytest.raises(ValueError, match="df must"):
        stats.t_quantile(0.975, 0)


def test_seed_stats_counts_failed_and_absent_and_uses_the_sample_deviation():
    s = stats.seed_stats([0.3, None, 0.5, float("nan"), 0.4, records.FAILED])
    assert s.n == 3 and s.absent == 2 and s.failed == 1 and s.left_out == 1 and s.seeds == 6
    assert s.failed_note == "1 of 6 seeds failed to train, left out"
    assert math.isclose(s.std, np.std([0.3, 0.5, 0.4], ddof=1)) and (s.min, s.max) == (0.3, 0.5)
    entered = stats.seed_stats([0.3, records.FailedValue(0.1), 0.5])  # a failed accuracy enters the mean
    assert entered.n == 3 and entered.failed == 1 and math.isclose(entered.mean, 0.3)
    assert entered.failed_note == "1 of 3 seeds failed to train"
    assert stats.seed_stats([2.0]).n == 1 and math.isnan(stats.seed_stats([]).mean)


def test_interval_is_the_t_interval_and_covers_at_its_level():
    d = (1.0, 2.0, 4.0)
    low, high = stats.Paired("a", "b", d).interval
    half = stats.t_quantile(0.975, 2) * np.std(d, ddof=1) / math.sqrt(3)
    assert math.isclose(low, np.mean(d) - half) and math.isclose(high, np.mean(d) + half)
    rng = np.random.default_rng(0)
    covered = [stats.Paired("a", "b", tuple(rng.normal(1.0, 3.0, size=4))).interval for _ in range(4000)]
    assert abs(np.mean([lo <= 1.0 <= hi for lo, hi in covered]) - 0.95) < 0.015
    assert stats.Paired("a", "b", (1.0,)).interval is None


def test_paired_pairs_by_seed_and_enters_or_leaves_out_failed_trainings(tmp_path):
    root = results_root(tmp_path)
    values = {0: (0.50, 0.40), 1: (0.60, None), 2: (0.55, 0.52)}
    for seed, (a, b) in values.items():
        # a diverged run whose record still holds a summary of its partial history: at chance for an accuracy
        write(root, "ablation", "cpu", seed, {"a": record(a), "b": record(b or 0.9, diverged=b is None)})
    data = records.stored("ablation", root, presets=("cpu",))
    paths = ("a", "summary", "test_acc_at_best_val"), ("b", "summary", "test_acc_at_best_val")
    entered = stats.paired(data, *paths, "A", "B", scale=100, accuracy=True)
    assert np.allclose(entered.differences, [10.0, 50.0, 3.0]) and entered.failed_b == 1 and not entered.left_out
    assert entered.failed_note == "B failed to train in 1 of 3 seeds (entered as measured)"
    left_out = stats.paired(data, *paths, "A", "B", scale=100)
    assert np.allclose(left_out.differences, [10.0, 3.0]) and left_out.left_out == 1
    assert left_out.failed_note == "B failed to train in 1 of 3 seeds (left out)"
    assert left_out.failed_short == "failed to train: B 1 of 3 (left out)"


def test_curve_band():
    h = [{"steps": [1, 2, 3], "acc": [0.1, 0.2, 0.3]}, {"steps": [1, 2], "acc": [0.3, 0.0]}]
    band = stats.curve_band(h, "acc", scale=100)
    assert np.allclose(band.x, [1, 2]) and np.allclose(band.mean, [20, 10]) and band.n == 2
    assert np.allclose(band.low, [10, 0]) and np.allclose(band.high, [30, 20])
    with pytest.raises(ValueError, match="lacks"):
        stats.curve_band(h, "loss")
    with pytest.raises(ValueError, match="empty"):
        stats.curve_band([], "acc")


def test_t_upper_tail_matches_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 7, 20):
        for t in (-5.0, -1.0, 0.0, 0.3, 2.5, 40.0):
            assert math.isclose(stats.t_upper_tail(t, df), scipy_stats.t.sf(t, df), rel_tol=1e-9, abs_tol=1e-15)
    assert stats.t_upper_tail(math.inf, 3) == 0.0 and stats.t_upper_tail(-math.inf, 3) == 1.0


@pytest.mark.parametrize("d", [(1.0, 2.0, 4.0), (-0.3, 0.1, -0.2, 0.05), (2.0, 2.1, 1.9)])
def test_p_value_is_the_paired_t_test_and_agrees_with_the_interval(d):
    scipy_stats = pytest.importorskip("scipy.stats")
    c = stats.Paired("a", "b", d)
    assert math.isclose(c.p_value, scipy_stats.ttest_1samp(d, 0.0).pvalue, rel_tol=1e-9)
    low, high = c.interval
    assert (c.p_value < stats.ALPHA) == (low > 0 or high < 0)


def test_holm_adjusts_in_the_given_order():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> running maximum 0.06 for the last
    assert np.allclose(stats.holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == [1.0, 1.0] and stats.holm([]) == []
    assert stats.holm([0.01]) == [0.01]  # one comparison: nothing to correct


def test_curve_band_leaves_out_diverged_histories_and_counts_them():
    h = [{"steps": [1, 2], "acc": [0.1, 0.2]}, records.FAILED, {"steps": [1, 2], "acc": [0.3, 0.4]}]
    band = stats.curve_band(h, "acc", failed=1)  # one shown curve failed to train, one diverged
    assert band.n == 2 and band.failed == 2 and band.left_out == 1 and np.allclose(band.mean, [0.2, 0.3])
    assert band.failed_note == "2 of 3 seeds failed to train (1 diverged, left out)"
    with pytest.raises(ValueError, match="every history diverged"):
        stats.curve_band([records.FAILED], "acc")
