"""convnorm_book.results.claims and .verdicts: each comparison is tested for what the paper
claims of it (its own sign, or parity within a margin), beside the paper's effect and in
size, and a chapter's comparisons are corrected together. The records here are built
with known answers."""
from __future__ import annotations

import math

import pytest

from convnorm.experiments import EXPERIMENTS, PRESETS
from convnorm.experiments.schema import HISTORY_KEYS, declared_paths
from convnorm_book.results import claims, records, stats, verdicts
from result_files import record, reference, results_root, root, write  # noqa: F401 (fixtures)

ALL_NORMS = ["none", "bn", "convnorm", "convnorm+bn", "sn+bn", "oni+bn", "ocnn+bn"]


def store(root, experiment, per_seed, summary_key="test_acc", **settings):
    """Records of ``experiment`` at the cpu preset: ``per_seed[seed][group][method]`` is
    the accuracy (a fraction) stored as ``summary_key``, the test accuracy at the best
    validation epoch or the maximum (``None``: the run diverged)."""
    for seed, groups in enumerate(per_seed):
        results = {group: {method: record(**{"test_acc": 0.5, summary_key: value}) if value is not None else
                           record(0.9, diverged=True, diverged_at_epoch=2, reason="loss is NaN")
                           for method, value in methods.items()} for group, methods in groups.items()}
        write(root, experiment, "cpu", seed, results, **settings)
    return records.stored(experiment, root, presets=("cpu",))


def lead(base, differences):
    """Per seed ``{a: base + d, b: base}`` as fractions, from differences in points."""
    return [(base + d / 100, base) for d in differences]


def noise(root, pairs_at):
    """Label-noise records: ``pairs_at[rate][(a, b)]`` lists per-seed differences (points)."""
    seeds = len(next(iter(next(iter(pairs_at.values())).values())))
    per_seed = [{rate: {} for rate in pairs_at} for _ in range(seeds)]
    for rate, pairs in pairs_at.items():
        for (a, b), differences in pairs.items():
            for seed, (x, y) in enumerate(lead(0.5, differences)):
                per_seed[seed][rate].update({a: x, b: y})
    norms = sorted({m for groups in per_seed for methods in groups.values() for m in methods})
    return store(root, "label-noise", per_seed, "max_test_acc", robust_norms=norms, noise_rates=[0.2, 0.8])


def find(found, a, b, group=None):
    (only,) = [v for v in found if v.claim.a == a and v.claim.b == b and group in (None, v.group)]
    return only


def test_convnorm_against_vanilla_at_80_percent_noise_is_tested_as_the_paper_has_it(root, reference):
    """The paper's ConvNorm − vanilla is +1.81 at 20 % noise but −3.09 at 80 %: a negative
    difference supports the claim at 80 % and contradicts it at 20 %."""
    data = noise(root, {"0.2": {("convnorm", "none"): (-4.0, -3.0, -3.5)},
                        "0.8": {("convnorm", "none"): (-4.0, -3.0, -3.5)}})
    found = verdicts.evaluate(data, reference)
    low, high = find(found, "convnorm", "none", "0.8"), find(found, "convnorm", "none", "0.2")
    assert math.isclose(low.paper, 54.11 - 57.20)
    assert low.comparison.claimed_sign == -1 and low.outcome == stats.SUPPORTED
    assert high.comparison.claimed_sign == +1 and high.outcome == stats.CONTRADICTED
    assert low.size == verdicts.AGREE  # −3.09 lies in −3.5 ± 1.24
    assert high.size == verdicts.OPPOSITE


def test_difference_supported_contradicted_inconclusive(root, reference):
    per_seed = [{"cifar10": {"convnorm+bn": 0.60 + d, "bn": 0.50, "convnorm": 0.40 + e, "none": 0.45 + f}}
                for d, e, f in ((0.10, 0.05, 0.10), (0.11, 0.06, -0.12), (0.09, 0.04, 0.02))]
    found = verdicts.evaluate(store(root, "generalization", per_seed), reference)
    assert find(found, "convnorm+bn", "bn").outcome == stats.SUPPORTED  # +20 points, paper +0.13
    assert find(found, "convnorm", "bn").outcome == stats.SUPPORTED  # −5 points, the paper's −1.06
    mixed = find(found, "convnorm", "none")  # −10, +13, −3 points
    assert mixed.outcome == stats.INCONCLUSIVE
    assert mixed.comparison.interval[0] < 0 < mixed.comparison.interval[1]


def test_size_larger_and_agreeing(root, reference):
    per_seed = [{"cifar10": {"convnorm+bn": 0.50 + d / 100, "bn": 0.50, "convnorm": 0.5, "none": 0.5}}
                for d in (10.0, 11.0, 9.0)]
    found = verdicts.evaluate(store(root, "generalization", per_seed), reference)
    big = find(found, "convnorm+bn", "bn")
    assert big.size == verdicts.LARGER and math.isclose(big.ratio, 10.0 / (93.31 - 93.18), rel_tol=1e-9)
    root2 = root.parent / "second"
    root2.mkdir()
    small = [{"cifar10": {"convnorm+bn": 0.50 + d / 100, "bn": 0.50, "convnorm": 0.5, "none": 0.5}}
             for d in (0.5, -0.2, 0.1)]
    near = find(verdicts.evaluate(store(results_root(root2), "generalization", small), reference), "convnorm+bn", "bn")
    assert near.size == verdicts.AGREE and near.outcome == stats.INCONCLUSIVE


def test_parity_shown_not_shown_and_a_difference_beyond_the_margin(root, reference):
    """ConvNorm+BN is 'on par' with the other baselines under data scarcity: tested as
    equivalence within ±1 point."""
    differences = {"sn+bn": (0.1, -0.1, 0.05, 0.0), "oni+bn": (2.0, -1.5, 0.5, 0.1), "ocnn+bn": (5.0, 5.2, 4.9, 5.1)}
    per_seed = []
    for s in range(4):
        methods = {"convnorm+bn": 0.6, "bn": 0.6, "convnorm": 0.6, "none": 0.6}
        methods.update({other: 0.6 - d[s] / 100 for other, d in differences.items()})
        per_seed.append({"0.3": methods})
    data = store(root, "data-scarcity", per_seed, robust_norms=ALL_NORMS, fractions=[0.3])
    found = verdicts.evaluate(data, reference)
    shown, unclear, beyond = (find(found, "convnorm+bn", other) for other in ("sn+bn", "oni+bn", "ocnn+bn"))
    assert {v.kind for v in (shown, unclear, beyond)} == {claims.PARITY}
    assert shown.margin == claims.PARITY_MARGIN
    assert (shown.outcome, unclear.outcome, beyond.outcome) == (stats.SUPPORTED, stats.INCONCLUSIVE,
                                                                stats.CONTRADICTED)
    assert shown.p_value < 0.05 and unclear.p_value >= 0.05 and beyond.p_value < 0.05


def test_holm_turns_a_verdict_that_holds_alone_into_inconclusive(root, reference):
    """+1.0, +1.3, +0.8 points: p ≈ 0.02 alone, supported; among several comparisons
    Holm's correction leaves it inconclusive, while one with p ≈ 1e-5 stands."""
    data = noise(root, {"0.2": {("convnorm+bn", "bn"): (1.0, 1.3, 0.8), ("convnorm", "none"): (0.1, -0.3, 0.4)},
                        "0.8": {("convnorm+bn", "bn"): (5.0, 5.01, 4.99), ("convnorm", "none"): (-0.2, 0.5, 0.1)}})
    chapter = verdicts.Chapter.of([data], reference)
    weak, strong = chapter("label-noise", a="convnorm+bn")
    assert len(chapter.tested) == 4
    assert weak.outcome == stats.SUPPORTED and 0.01 < weak.p_value < 0.05
    assert weak.adjusted >= 0.05 and weak.final == stats.INCONCLUSIVE
    assert strong.final == stats.SUPPORTED and strong.adjusted < 0.05
    alone = verdicts.evaluate(data, reference)
    assert all(v.adjusted is None and v.final == v.outcome for v in alone)  # before any correction


def test_a_claim_reaching_only_high_noise_rates_is_not_tested_below(root, reference):
    data = noise(root, {"0.2": {("convnorm+bn", "sn+bn"): (1.0, 2.0, 3.0)},
                        "0.8": {("convnorm+bn", "sn+bn"): (1.0, 2.0, 3.0)}})
    chapter = verdicts.Chapter.of([data], reference)
    low, high = chapter("label-noise", b="sn+bn")
    assert (low.group, low.kind, low.p_value) == ("0.2", claims.NO_CLAIM, None)
    assert high.kind == claims.DIFFERENCE and high.comparison.paper is None and high.comparison.claimed_sign == 1
    assert chapter.tested == [high]


def test_claims_about_methods_the_preset_does_not_run_are_left_out(root, reference):
    data = noise(root, {"0.2": {("convnorm+bn", "bn"): (1.0, 2.0)}, "0.8": {("convnorm+bn", "bn"): (1.0, 2.0)}})
    assert {(v.claim.a, v.claim.b) for v in verdicts.evaluate(data, reference)} == {("convnorm+bn", "bn")}


def test_diverged_seeds_are_left_out_of_the_difference_and_counted(root, reference):
    per_seed = [{"cifar10": {"convnorm+bn": 0.6, "bn": bn, "convnorm": 0.5, "none": 0.5}} for bn in (0.5, None, 0.52)]
    found = verdicts.evaluate(store(root, "generalization", per_seed), reference)
    c = find(found, "convnorm+bn", "bn").comparison
    assert c.n == 2 and c.diverged == 1 and "1 of 3 seeds diverged" in c.effect()


def test_simba_sizes_are_not_compared_at_another_attack_budget(root, reference):
    for seed, queries in enumerate((900.0, 950.0, 1000.0)):
        results = {m: {**record(0.5), "simba": {"pixel": {"average_queries": queries + 100 * (m == "convnorm"),
                                                          "success_rate": 0.9}}} for m in ("sn", "oni", "ocnn",
                                                                                          "convnorm")}
        write(root, "simba", "cpu", seed, results)
    found = verdicts.evaluate(records.stored("simba", root, presets=("cpu",)), reference)
    queries = [v for v in found if v.facet("measure").startswith("average queries")]
    assert all(v.outcome == stats.SUPPORTED for v in queries)  # +100 queries on every seed
    assert all(v.size == verdicts.UNKNOWN and "1,024 iterations" in v.size_blocked for v in queries)
    assert queries[0].comparison.unit == "queries"


def _synthetic(schema, preset):
    """Results holding every path the schema declares at ``preset`` (numbers 0.5)."""
    results = {}
    for path in declared_paths(schema, preset):
        node = results
        for key, following in zip(path[:-1], path[1:]):
            default = [{}] if isinstance(following, int) else {}
            node = node.setdefault(key, default) if isinstance(node, dict) else node[key]
        last = path[-1]
        value = [0.5] * preset.epochs if path[-2] == "history" and last in HISTORY_KEYS else 0.5
        if isinstance(node, list):
            node[last] = value
        else:
            node[last] = False if last == "diverged" else value
    return results


@pytest.mark.parametrize("experiment", [name for name in EXPERIMENTS if name in claims.CLAIMS])
def test_every_claim_is_tested_at_the_papers_scale(tmp_path, reference, experiment):
    """At the paper's preset every declared claim makes a comparison at every group, and
    a difference claim has a direction wherever the claim reaches: the paper's number,
    or the sign its text states."""
    root = results_root(tmp_path)
    schema, paper = EXPERIMENTS[experiment].schema, PRESETS["paper"]
    for seed in (0, 1):
        write(root, experiment, "paper", seed, _synthetic(schema, paper))
    data = records.Records(experiment, "paper", tuple(records.load_runs(experiment, "paper", root)))
    found = verdicts.evaluate(data, reference)
    for claim in claims.CLAIMS[experiment]:
        mine = [v for v in found if v.claim is claim]
        assert len(mine) >= len(schema.group_keys(paper)), claim
        for v in mine:
            assert v.tested == (claim.kind != claims.NO_CLAIM and claim.covers(v.group)), (claim, v.group)
            if claim.kind == claims.DIFFERENCE and v.tested:
                assert v.comparison.claimed_sign in (-1, 1)
            if claim.reason.startswith("the paper's table gives both numbers"):
                assert v.paper is not None, (claim, v.group)


def test_the_parity_margin_rests_on_the_papers_own_spread(reference):
    assert round(claims.parity_margin_basis(reference), 1) == claims.PARITY_MARGIN


def test_the_affine_effect_is_said_to_be_the_papers_convnorm_bn_against_bn(root, reference):
    per_seed = [{None: {m: 0.5 for m in EXPERIMENTS["ablation"].schema.methods}} for _ in range(2)]
    for seed, groups in enumerate(per_seed):
        write(root, "ablation", "cpu", seed, {m: record(v) for m, v in groups[None].items()})
    found = verdicts.evaluate(records.stored("ablation", root, presets=("cpu",)), reference)
    affine = find(found, "convnorm+bn, affine=on", "convnorm+bn, affine=off")
    assert "93.18" in affine.note and "Table 4" in affine.note and "BN alone" in affine.note
    assert all(v.note is None for v in found if v is not affine)
    assert affine.facet("pair") == "affine kernel, with BN"


def test_claims_refuse_inconsistent_declarations():
    with pytest.raises(ValueError, match="needs a margin"):
        claims.Claim("data-scarcity", "a", "b", claims.Measured("test_acc"), claims.PARITY, "x", "y")
    with pytest.raises(ValueError, match="kind must be"):
        claims.Claim("data-scarcity", "a", "b", claims.Measured("test_acc"), "better", "x", "y")


def test_claims_tested_on_another_measure_keep_the_papers_direction(root, reference):
    """Under label noise the paper reports the maximum over the epochs; the same claims
    tested on the accuracy at the best noisy-validation epoch keep the paper's sign, with
    no paper's number beside ours."""
    from convnorm_book.results import prose

    for seed, (at_best, maximum) in enumerate(((-0.040, -0.040), (-0.030, -0.031), (-0.035, -0.036))):
        results = {rate: {"none": record(0.5, max_test_acc=0.6), "convnorm": record(0.5 + at_best * (rate == "0.8")
                                                                                   - 0.02 * (rate == "0.2"),
                                                                                   max_test_acc=0.6 + maximum)}
                   for rate in ("0.2", "0.8")}
        write(root, "label-noise", "cpu", seed, results, robust_norms=["none", "convnorm"], noise_rates=[0.2, 0.8])
    data = records.stored("label-noise", root, presets=("cpu",))
    paper_metric, selected = verdicts.evaluate(data, reference), verdicts.evaluate(data, reference, measure="test_acc")
    assert [v.comparison.claimed_sign for v in selected] == [+1, -1]  # +1.81 at 20 %, −3.09 at 80 %
    assert all(v.paper is None for v in selected) and selected[0].facet("measure").startswith("test accuracy")
    assert [v.outcome for v in paper_metric] == [stats.CONTRADICTED, stats.SUPPORTED]
    assert [v.outcome for v in selected] == [stats.CONTRADICTED, stats.SUPPORTED]
    assert prose.same_verdicts(paper_metric, selected, "selecting the model on the noisy validation set") == (
        "Selecting the model on the noisy validation set instead gives the same verdict, each comparison tested "
        "alone, in two of the two comparisons.")
