"""convnorm_book.results.glance: the numbers each row of Part IV's glance table states,
recomputed from the stored records without the module's own path, and its rules on small
cases with known answers."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats as scipy_stats

from convnorm_book.results import comparisons, endpoints, glance, paper_values, records, scope, sizes
from convnorm_book.results.quantities import SpeedUp
from convnorm_book.results.stats import Paired

EXPERIMENTS = {"generalization", "convergence", "ablation", "label-noise", "data-scarcity", "conditioning",
               "adversarial", "simba", "runtime"}
NUMBER = re.compile(r"[+−-]?\d[\d,]*(?:\.\d+)?")


def as_float(text: str) -> float:
    return float(text.replace("−", "-").replace(",", ""))


@pytest.fixture(scope="module")
def values():
    return paper_values.load_paper_values()


@pytest.fixture(scope="module")
def rows(values):
    return {row.experiment: row for row in glance.rows(values)}


def t_interval(differences) -> tuple[float, float]:
    d = np.asarray(differences, dtype=float)
    half = scipy_stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean() - half, d.mean() + half


def printed_interval(result: str) -> tuple[str, str]:
    low, high = re.search(r"95 % interval (\S+) to (\S+),", result).groups()
    return low, high


def assert_prints(text: str, value: float) -> None:
    """``text`` is ``value`` rounded to the decimals it shows, with the sign of ``value``."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    assert abs(as_float(text) - value) <= 0.5 * 10 ** -decimals + 1e-9, (text, value)
    assert (as_float(text) < 0) == (value < 0) or as_float(text) == 0 == round(value, decimals), (text, value)


def test_every_experiment_of_the_paper_has_a_row(rows):
    assert set(rows) == EXPERIMENTS


def test_each_interval_is_the_t_interval_of_the_per_seed_differences(rows, values):
    tested = {r.endpoint.name: r.paired for r in endpoints.test(values)}
    for spec in glance.SPECS:
        if spec.endpoint is not None:
            paired = tested[spec.endpoint]
        else:
            data = records.stored(spec.experiment)
            paired, = [c.paired for c in comparisons.evaluate(data, values) if c.claim.name == spec.pair
                       and spec.measure in (None, c.facet("measure"))][:1]
        low, high = printed_interval(rows[spec.experiment].result)
        expected = t_interval(paired.differences)
        assert_prints(low, expected[0])
        assert_prints(high, expected[1])
        assert f"{len(paired.differences)} seeds" in rows[spec.experiment].result


def test_an_untestable_row_says_so_and_gives_no_verdict(rows):
    for row in rows.values():
        if not row.testable:
            assert glance.NOT_TESTABLE in row.meaning and "no evidence either way" in row.meaning
            assert not re.search(r"rules? out|supports?|contradict", row.meaning)


def test_the_speed_up_cannot_exceed_log2_of_the_epoch_bn_peaks(rows, values):
    """Each seed's bound is log₂ of the epoch at which BN first reaches its best (epochs of equal images)."""
    data = records.stored("convergence")
    endpoint = next(e for e in endpoints.PRIMARY if e.name == "convergence speed")
    group = endpoint.group_at(data.settings)
    peaks = []
    for file in data.files:
        accuracy = records.lookup(file.results, data.schema.record_path(group, "bn"))["history"]["test_acc"]
        peaks.append(math.log2(int(np.argmax(accuracy)) + 1))  # argmax: the first epoch at the maximum
    assert scope.speed_up_bounds(endpoint, data, SpeedUp.budget(values)) == pytest.approx(peaks)
    row = rows["convergence"]
    paper = endpoint.paper_effect(values)
    assert paper == pytest.approx(3)  # 8,000 against 1,000 iterations
    if np.mean(peaks) <= paper:  # the mean of S, which the test reads, cannot reach the paper's
        assert not row.testable and f"{min(peaks):.2f} to {max(peaks):.2f} doublings" in row.blocked


def test_the_width_rule_sets_the_half_width_against_the_papers_effect():
    narrow = Paired("A", "B", (1.0, 1.2, 0.8), paper=2.0)
    assert scope.precision(narrow).testable  # half-width 0.50 points < 2
    wide = Paired("A", "B", (1.0, 1.2, 0.8), paper=0.13)
    half = (t_interval(wide.differences)[1] - t_interval(wide.differences)[0]) / 2
    assert scope.precision(wide).testable is False
    stated = [as_float(n) for n in NUMBER.findall(scope.precision(wide).reason)]
    assert stated[0] == pytest.approx(half, abs=0.005) and stated[1] == pytest.approx(0.13)


def test_a_described_interval_is_read_by_where_it_lies():
    def read(differences, paper):
        return glance._described_sentence(Paired("A", "B", differences, paper=paper))

    assert read((1.0, 1.2, 0.8), 1.0).endswith("holds the paper's number.")
    assert "leaves the paper's number out" in read((1.0, 1.2, 0.8), 5.0)
    assert "no evidence either way" in read((1.0, -1.2, 0.8), 5.0)


def test_a_supported_endpoint_says_whether_its_interval_holds_the_papers_number(rows, values):
    row = rows["conditioning"]
    result = next(r for r in endpoints.test(values) if r.endpoint.name == "channel conditioning")
    low, high = result.paired.interval
    if result.verdict == endpoints.SUPPORTED:
        assert ("leaves its number out" in row.meaning) == (not low <= result.paired.paper <= high)


def test_the_cost_row_prints_each_devices_ratio(rows):
    row = rows["runtime"]
    for data in records.runtime_records().values():
        ratio = np.mean([file.results["convnorm+bn"]["relative_to_bn"] for file in data.files])
        assert f"{ratio:.2f} times" in row.result


def test_a_bound_keeps_its_side_of_zero():
    assert sizes.signed(-0.04, 1) == "−0.04" and sizes.signed(0.04, 1) == "+0.04"
    assert sizes.signed(0.0, 1) == "+0.0" and sizes.signed(-1.26, 1) == "−1.3"


def test_the_glance_table_and_the_plan_read_one_rule_of_scale(rows, values):
    """For every primary endpoint with a row, the row's answer is the scale's answer of
    :func:`~convnorm_book.results.scope.scope` at the records' preset, the very object, where
    the scale cannot test it; where the scale can, the row may only add the records' own limits
    (the measure, the interval's width). The chapters read these rows."""
    by_name = {e.name: e for e in endpoints.PRIMARY}
    for spec in glance.SPECS:
        if spec.endpoint is None:
            continue
        data = records.stored(spec.experiment)
        limit = scope.scope(by_name[spec.endpoint], data.preset, values)
        row = rows[spec.experiment]
        assert limit.testable is not None  # records of the preset exist
        if limit.testable is False:
            assert row.scope == limit and not row.testable and row.blocked == limit.reason
        else:
            assert row.testable == scope.precision(
                next(r for r in endpoints.test(values) if r.endpoint.name == spec.endpoint).paired).testable


def test_every_row_answers_with_the_scope_rule(rows):
    for row in rows.values():
        assert isinstance(row.scope, scope.Scope) and row.testable == (row.scope.testable is True)
        assert (row.blocked is None) == row.testable
        assert row.testable or glance.NOT_TESTABLE in row.meaning
