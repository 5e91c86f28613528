"""convnorm_book.results.glance: the numbers each row of Part IV's glance table states,
recomputed from the stored records without the module's own path, and its rules on small
cases with known answers."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats as scipy_stats

from convnorm_book.results import comparisons, endpoints, glance, paper_values, records, sizes
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
    data = records.stored("convergence")
    group = next(e for e in endpoints.PRIMARY if e.name == "convergence speed").group_at(data.settings)
    peaks = []
    for file in data.files:
        accuracy = records.lookup(file.results, data.schema.record_path(group, "bn"))["history"]["test_acc"]
        peaks.append(math.log2(int(np.argmax(accuracy)) + 1))  # argmax: the first epoch at the maximum
    assert glance.attainable_speed_up(data, values, group) == pytest.approx(peaks)
    row = rows["convergence"]
    paper = endpoints.PRIMARY[0].paper_effect(values)
    assert paper == pytest.approx(3)  # 8,000 against 1,000 iterations
    if max(peaks) <= paper:
        assert not row.testable and f"{min(peaks):.2f} to {max(peaks):.2f} doublings" in row.blocked


def test_the_width_rule_sets_the_half_width_against_the_papers_effect():
    narrow = Paired("A", "B", (1.0, 1.2, 0.8), paper=2.0)
    assert glance._too_wide(narrow) is None  # half-width 0.50 points < 2
    wide = Paired("A", "B", (1.0, 1.2, 0.8), paper=0.13)
    half = (t_interval(wide.differences)[1] - t_interval(wide.differences)[0]) / 2
    stated = [as_float(n) for n in NUMBER.findall(glance._too_wide(wide))]
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
