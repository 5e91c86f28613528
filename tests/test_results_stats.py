"""convnorm_book.results.stats: Student's t quantiles, seed statistics, differences paired
by seed with their t-interval, and the verdict the interval allows."""
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


def test_seed_stats_counts_diverged_and_absent_and_uses_the_sample_deviation():
    s = stats.seed_stats([0.3, None, 0.5, float("nan"), 0.4, records.DIVERGED])
    assert s.n == 3 and s.absent == 2 and s.diverged == 1 and s.seeds == 6
    assert s.diverged_note == "1 of 6 seeds diverged"
    assert math.isclose(s.std, np.std([0.3, 0.5, 0.4], ddof=1)) and (s.min, s.max) == (0.3, 0.5)
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


@pytest.mark.parametrize(("differences", "paper", "claim", "verdict"), [
    ((1.0, 1.2, 0.9), 0.5, None, stats.SUPPORTED),        # interval above zero, paper positive
    ((-1.0, -1.2, -0.9), 0.5, None, stats.CONTRADICTED),  # below zero
    ((-1.0, 2.0, 0.5), 0.5, None, stats.INCONCLUSIVE),    # contains zero
    ((1.0, 1.2, 0.9), None, -1, stats.CONTRADICTED),      # a claimed sign without a number
    ((1.0,), 0.5, None, stats.INCONCLUSIVE),              # one seed: no interval
    ((1.0, 1.2, 0.9), 0.0, None, stats.INCONCLUSIVE),     # the paper's difference has no sign
])
def test_verdicts(differences, paper, claim, verdict):
    assert stats.Paired("a", "b", differences, paper=paper, claim=claim).verdict == verdict


def test_sentence_states_mean_interval_paper_and_verdict():
    c = stats.Paired("ConvNorm", "BN", (1.0, 1.2, 0.9), paper=0.5, context="20%")
    text = c.sentence()
    assert text.startswith("ConvNorm − BN, 20%: +1.03 points (95 % interval")
    assert "3 seeds); the paper: +0.50 points. Supported at this scale." in text
    assert stats.Paired("a", "b", ()).sentence() == "a − b: no finished pair of runs."
    assert c.paper_inside is False and stats.Paired("a", "b", (0.0, 1.0), paper=0.5).paper_inside


def test_paired_pairs_by_seed_and_leaves_out_diverged_runs(tmp_path):
    root = results_root(tmp_path)
    values = {0: (0.50, 0.40), 1: (0.60, None), 2: (0.55, 0.52)}
    for seed, (a, b) in values.items():
        # a diverged run whose record still holds a summary of its partial history: left out all the same
        write(root, "ablation", "cpu", seed, {"a": record(a), "b": record(b or 0.9, diverged=b is None)})
    data = records.stored("ablation", root, presets=("cpu",))
    c = stats.paired(data, ("a", "summary", "test_acc_at_best_val"), ("b", "summary", "test_acc_at_best_val"),
                     "A", "B", scale=100)
    assert np.allclose(c.differences, [10.0, 3.0]) and c.diverged == 1
    assert "2 seeds; 1 of 3 seeds diverged)" in c.effect()


def test_curve_band_and_first_reach():
    h = [{"steps": [1, 2, 3], "acc": [0.1, 0.2, 0.3]}, {"steps": [1, 2], "acc": [0.3, 0.0]}]
    band = stats.curve_band(h, "acc", scale=100)
    assert np.allclose(band.x, [1, 2]) and np.allclose(band.mean, [20, 10]) and band.n == 2
    assert np.allclose(band.low, [10, 0]) and np.allclose(band.high, [30, 20])
    assert stats.first_reach(band, 15) == 1 and stats.first_reach(band, 25) is None
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


@pytest.mark.parametrize("d", [(0.2, -0.1, 0.3, 0.0), (0.5, 1.8, -0.7), (3.0, 3.2, 2.9), (-2.0, -2.2, -1.6, -2.1)])
def test_parity_p_values_are_two_one_sided_tests(d):
    """TOST: equivalence below 5 % exactly when the 90 % interval lies inside ±m; a
    difference beyond the margin below 5 % exactly when the 95 % interval lies beyond it."""
    scipy_stats = pytest.importorskip("scipy.stats")
    margin, c = 1.0, stats.Paired("a", "b", d)
    equivalence, beyond = c.parity_p_values(margin)
    lower = scipy_stats.ttest_1samp(d, -margin, alternative="greater").pvalue
    upper = scipy_stats.ttest_1samp(d, margin, alternative="less").pvalue
    assert math.isclose(equivalence, max(lower, upper), rel_tol=1e-9)
    low90, high90 = c.interval_at(0.90)
    assert (equivalence < 0.05) == (-margin < low90 and high90 < margin)
    low, high = c.interval
    assert (beyond < 0.05) == (low > margin or high < -margin)
    assert stats.Paired("a", "b", (0.1,)).parity_p_values(margin) is None


def test_holm_adjusts_in_the_given_order():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> running maximum 0.06 for the last
    assert np.allclose(stats.holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == [1.0, 1.0] and stats.holm([]) == []
    assert stats.holm([0.01]) == [0.01]  # one comparison: nothing to correct


def test_curve_band_leaves_out_diverged_histories_and_counts_them():
    h = [{"steps": [1, 2], "acc": [0.1, 0.2]}, records.DIVERGED, {"steps": [1, 2], "acc": [0.3, 0.4]}]
    band = stats.curve_band(h, "acc")
    assert band.n == 2 and band.diverged == 1 and np.allclose(band.mean, [0.2, 0.3])
    assert band.diverged_note == "1 of 3 seeds diverged"
    with pytest.raises(ValueError, match="every history diverged"):
        stats.curve_band([records.DIVERGED], "acc")
