"""convnorm_book.results.claims, .comparisons and .sizes: each comparison is set beside what
the paper claims of it (its own sign, or a size: parity, non-inferiority, a slight drop,
each with its margin) and described by what its interval rules in and out. The records
here are built with known answers."""
from __future__ import annotations

import math

import pytest

from convnorm_book.results import claims, comparisons, records, sizes, studies
from convnorm_lab.experiments import EXPERIMENTS, PRESETS
from convnorm_lab.experiments.schema import HISTORY_KEYS, declared_paths
from result_files import paper_values, record, results_root, root, write  # noqa: F401 (fixtures)

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


def test_convnorm_against_vanilla_at_80_percent_noise_is_read_in_the_papers_direction(root, paper_values):
    """The paper's ConvNorm − vanilla is +1.81 at 20 % noise but −3.09 at 80 %: a difference of
    −3.5 ± 1.2 agrees in size with the paper at 80 % and has the opposite sign at 20 %."""
    data = noise(root, {"0.2": {("convnorm", "none"): (-4.0, -3.0, -3.5)},
                        "0.8": {("convnorm", "none"): (-4.0, -3.0, -3.5)}})
    found = comparisons.evaluate(data, paper_values)
    low, high = find(found, "convnorm", "none", "0.8"), find(found, "convnorm", "none", "0.2")
    assert math.isclose(low.paper, 54.11 - 57.20)
    assert (low.sign, high.sign) == (-1, +1)
    assert low.reading == "agrees in size with the paper's −3.09 and rules out zero"
    assert high.reading == "rules out zero and the paper's +1.81: ours is of the opposite sign"


def test_agree_in_size_only_when_the_interval_is_narrower_than_the_effect(root, paper_values):
    per_seed = [{"cifar10": {"convnorm+bn": 0.50 + d / 100, "bn": 0.50, "convnorm": 0.5, "none": 0.5}}
                for d in (10.0, 11.0, 9.0)]
    big = find(comparisons.evaluate(store(root, "generalization", per_seed), paper_values), "convnorm+bn", "bn")
    assert big.reading == "rules out zero and the paper's +0.13: ours is larger"
    root2 = results_root(root.parent / "second" if (root.parent / "second").mkdir() is None else None)
    wide = [{"cifar10": {"convnorm+bn": 0.50 + d / 100, "bn": 0.50, "convnorm": 0.5, "none": 0.5}}
            for d in (0.5, -0.2, 0.1)]
    near = find(comparisons.evaluate(store(root2, "generalization", wide), paper_values), "convnorm+bn", "bn")
    low, high = near.paired.interval
    assert low < 0.13 < high and high - low > 0.13 and not sizes.agrees_in_size(near.paired)
    assert near.reading.startswith("consistent with the paper's +0.13 and with zero; rules out effects below")


def test_claims_with_a_size_read_against_their_margin(root, paper_values):
    """ConvNorm+BN is 'on par' with the other baselines under data scarcity: within ±1 point,
    outside it, or cannot tell."""
    differences = {"sn+bn": (0.1, -0.1, 0.05, 0.0), "oni+bn": (2.0, -1.5, 0.5, 0.1), "ocnn+bn": (5.0, 5.2, 4.9, 5.1)}
    per_seed = []
    for s in range(4):
        methods = {"convnorm+bn": 0.6, "bn": 0.6, "convnorm": 0.6, "none": 0.6}
        methods.update({other: 0.6 - d[s] / 100 for other, d in differences.items()})
        per_seed.append({"0.3": methods})
    data = store(root, "data-scarcity", per_seed, robust_norms=ALL_NORMS, fractions=[0.3])
    found = comparisons.evaluate(data, paper_values)
    shown, unclear, beyond = (find(found, "convnorm+bn", other) for other in ("sn+bn", "oni+bn", "ocnn+bn"))
    assert {c.kind for c in (shown, unclear, beyond)} == {claims.PARITY} and shown.margin == claims.PARITY_MARGIN
    assert shown.reading.startswith("within ±1 point: on par")
    assert unclear.reading == "cannot tell whether the difference lies within ±1 point"
    assert beyond.reading == "beyond ±1 point: rules out 'on par'"


@pytest.mark.parametrize(("differences", "reading"), [
    ((-0.5, -1.0, -0.8), "a drop of at most 2 points: slightly worse, as the paper says"),
    ((-10.0, -12.0, -11.0), "a drop beyond 2 points: more than 'slightly' worse"),
    ((1.0, 2.0, 1.5), "rules out a drop"),
    ((-5.0, 1.0, -1.0), "cannot tell whether there is a drop, nor whether it stays within 2 points"),
])
def test_slightly_worse_is_a_drop_within_its_margin(tmp_path, paper_values, differences, reading):
    per_seed = [{"cifar10": {"convnorm+bn": 0.5, "bn": 0.5, "convnorm": 0.5 + d / 100, "none": 0.5}}
                for d in differences]
    slight = find(comparisons.evaluate(store(results_root(tmp_path), "generalization", per_seed), paper_values),
                  "convnorm", "bn")
    assert slight.kind == claims.SLIGHT and slight.margin == claims.SLIGHT_MARGIN
    assert slight.reading == reading


def test_maintaining_clean_accuracy_is_a_deficit_within_the_margin(root, paper_values):
    for seed, deficit in enumerate((0.1, -0.2, 0.05)):
        results = {m: {**record(0.5), "robust": {"clean": 0.4 + deficit / 100 * (m == "convnorm+bn"), "fgsm": 0.2,
                                                 "pgd10": 0.1, "pgd20": 0.1, "n_test": 500}}
                   for m in ("bn", "sn+bn", "oni+bn", "ocnn+bn", "convnorm+bn")}
        write(root, "adversarial", "cpu", seed, results)
    found = comparisons.evaluate(records.stored("adversarial", root, presets=("cpu",)), paper_values)
    clean = [c for c in found if c.facet("measure") == "clean"]
    assert {c.kind for c in clean} == {claims.NON_INFERIOR}
    assert all(c.reading.startswith("rules out a deficit beyond 1 point") for c in clean)
    assert all(c.resolution == pytest.approx(100 / 500) for c in clean)  # one attacked image: 0.2 points


def test_an_interval_wider_than_the_quantitys_range_is_not_estimable(root, paper_values):
    for seed, rate in enumerate((0.1, 0.95, 0.5)):
        results = {m: {**record(0.5), "simba": {"pixel": {"average_queries": 500.0, "success_rate": rate if m ==
                                                          "convnorm" else 0.5}}} for m in ("sn", "oni", "ocnn",
                                                                                         "convnorm")}
        write(root, "simba", "cpu", seed, results)
    found = comparisons.evaluate(records.stored("simba", root, presets=("cpu",)), paper_values)
    success = [c for c in found if c.facet("measure").startswith("success rate")]
    assert all(not c.estimable and c.reading.startswith("not estimable with 3 seeds") for c in success)
    assert all(c.effect.startswith("per seed −40, +45 and +0 points") for c in success)


def test_a_claim_reaching_only_high_noise_rates_makes_none_below(root, paper_values):
    data = noise(root, {"0.2": {("convnorm+bn", "sn+bn"): (1.0, 1.1, 0.9)},
                        "0.8": {("convnorm+bn", "sn+bn"): (1.0, 1.1, 0.9)}})
    low, high = comparisons.Chapter.of([data], paper_values)("label-noise", b="sn+bn")
    assert (low.group, low.kind, low.claimed) == ("0.2", claims.NO_CLAIM, False)
    assert high.kind == claims.DIFFERENCE and high.paper is None and high.sign == 1
    assert high.reading == "above zero, the side the paper claims"


def test_claims_about_methods_the_preset_does_not_run_are_left_out(root, paper_values):
    data = noise(root, {"0.2": {("convnorm+bn", "bn"): (1.0, 2.0)}, "0.8": {("convnorm+bn", "bn"): (1.0, 2.0)}})
    assert {(c.claim.a, c.claim.b) for c in comparisons.evaluate(data, paper_values)} == {("convnorm+bn", "bn")}


def test_a_failed_accuracy_enters_as_measured_and_a_failed_analysis_is_left_out(root, paper_values):
    per_seed = [{"cifar10": {"convnorm+bn": 0.6, "bn": bn, "convnorm": 0.5, "none": 0.5}} for bn in (0.5, None, 0.52)]
    c = find(comparisons.evaluate(store(root, "generalization", per_seed), paper_values), "convnorm+bn", "bn").paired
    assert c.n == 3 and c.failed_b == 1 and math.isclose(c.differences[1], 60 - 10)  # BN at chance, 10 %
    assert "BN failed to train in 1 of 3 seeds (entered as measured)" in sizes.effect(c)


def test_simba_sizes_are_not_compared_at_another_attack_budget(root, paper_values):
    for seed, queries in enumerate((900.0, 950.0, 1000.0)):
        results = {m: {**record(0.5), "simba": {"pixel": {"average_queries": queries + 100 * (m == "convnorm"),
                                                          "success_rate": 0.9}}} for m in ("sn", "oni", "ocnn",
                                                                                          "convnorm")}
        write(root, "simba", "cpu", seed, results)
    found = comparisons.evaluate(records.stored("simba", root, presets=("cpu",)), paper_values)
    queries = [c for c in found if c.facet("measure").startswith("average queries")]
    assert all("1,024 iterations" in c.size_blocked for c in queries)
    assert all(c.reading == "above zero, the side the paper claims" for c in queries)  # no paper's number
    assert queries[0].paired.unit == "queries"


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


@pytest.mark.parametrize("experiment", [name for name in EXPERIMENTS if name in studies.CLAIMS])
def test_every_claim_is_compared_at_the_papers_scale(tmp_path, paper_values, experiment):
    """At the paper's preset every declared claim makes a comparison at every group, and
    a difference claim has a direction wherever the claim reaches: the paper's number,
    or the sign its text states."""
    root = results_root(tmp_path)
    schema, paper = EXPERIMENTS[experiment].schema, PRESETS["paper"]
    for seed in (0, 1):
        write(root, experiment, "paper", seed, _synthetic(schema, paper))
    data = records.Records(experiment, "paper", tuple(records.load_result_files(experiment, "paper", root)))
    found = comparisons.evaluate(data, paper_values)
    for claim in studies.CLAIMS[experiment]:
        mine = [c for c in found if c.claim is claim]
        assert len(mine) >= len(schema.group_keys(paper)), claim
        for c in mine:
            assert c.claimed == (claim.kind != claims.NO_CLAIM and claim.covers(c.group)), (claim, c.group)
            if claim.kind == claims.DIFFERENCE and c.claimed:
                assert c.sign in (-1, 1)
            if claim.reason.startswith("the paper's table gives both numbers"):
                assert c.paper is not None, (claim, c.group)


def test_the_margins_rest_on_the_papers_own_numbers(paper_values):
    assert round(claims.parity_margin_basis(paper_values), 1) == claims.PARITY_MARGIN
    assert round(claims.slight_margin_basis(paper_values)) == claims.SLIGHT_MARGIN


def test_the_affine_effect_is_said_to_be_the_papers_convnorm_bn_against_bn(root, paper_values):
    per_seed = [{None: {m: 0.5 for m in EXPERIMENTS["ablation"].schema.methods}} for _ in range(2)]
    for seed, groups in enumerate(per_seed):
        write(root, "ablation", "cpu", seed, {m: record(v) for m, v in groups[None].items()})
    found = comparisons.evaluate(records.stored("ablation", root, presets=("cpu",)), paper_values)
    affine = find(found, "convnorm+bn, affine=on", "convnorm+bn, affine=off")
    assert "93.18" in affine.note and "Table 4" in affine.note and "BN alone" in affine.note
    assert all(c.note is None for c in found if c is not affine)
    assert affine.facet("pair") == "affine kernel, with BN"


def test_claims_refuse_inconsistent_declarations():
    with pytest.raises(ValueError, match="needs a margin"):
        claims.Claim("data-scarcity", "a", "b", claims.Measured("test_acc"), claims.PARITY, "x", "y")
    with pytest.raises(ValueError, match="kind must be"):
        claims.Claim("data-scarcity", "a", "b", claims.Measured("test_acc"), "better", "x", "y")
    with pytest.raises(ValueError, match="sign -1"):
        claims.Claim("generalization", "a", "b", claims.Measured("test_acc"), claims.SLIGHT, "x", "y", margin=2.0)


def test_claims_on_another_measure_keep_the_papers_direction(root, paper_values):
    """Under label noise the paper reports the maximum over the epochs; the same claims on
    the accuracy at the best noisy-validation epoch keep the paper's sign, with no paper's
    number beside ours."""
    for seed, (at_best, maximum) in enumerate(((-0.040, -0.040), (-0.030, -0.031), (-0.035, -0.036))):
        results = {rate: {"none": record(0.5, max_test_acc=0.6), "convnorm": record(0.5 + at_best * (rate == "0.8")
                                                                                   - 0.02 * (rate == "0.2"),
                                                                                   max_test_acc=0.6 + maximum)}
                   for rate in ("0.2", "0.8")}
        write(root, "label-noise", "cpu", seed, results, robust_norms=["none", "convnorm"], noise_rates=[0.2, 0.8])
    data = records.stored("label-noise", root, presets=("cpu",))
    selected = comparisons.evaluate(data, paper_values, measure="test_acc")
    assert [c.sign for c in selected] == [+1, -1]  # +1.81 at 20 %, −3.09 at 80 %
    assert all(c.paper is None for c in selected) and selected[0].facet("measure").startswith("test accuracy")
    assert [c.reading for c in selected] == ["below zero, the side opposite to the paper's claim",
                                             "below zero, the side the paper claims"]


def test_no_stored_comparison_agrees_in_size_with_an_interval_wider_than_the_effect(paper_values):
    """Over every comparison Part IV shows from the repository's records, a reading that
    says "agrees in size" stands on an interval narrower than the paper's effect."""
    for experiment in studies.CLAIMS:
        for c in comparisons.evaluate(records.stored(experiment), paper_values):
            if "agrees in size" in c.reading:
                low, high = c.paired.interval
                assert high - low < abs(c.paper), (experiment, c.paired.label)


def test_the_same_difference_in_every_seed_is_said_so_without_an_interval():
    """Differences that do not vary over the seeds (an attack that fools every image of every
    network) leave a t-interval of no width: it is no interval to read bounds from."""
    from convnorm_book.results.stats import Paired

    none = Paired("ConvNorm", "ONI", (0.0, 0.0, 0.0), unit="points")
    assert sizes.effect(none) == "+0 points in each of the 3 seeds (no spread, so no interval)"
    assert sizes.reading(none, claims.DIFFERENCE, sign=-1) == ""
    constant = Paired("ConvNorm", "OCNN", (2.0, 2.0), unit="points")
    assert sizes.effect(constant) == "+2 points in each of the 2 seeds (no spread, so no interval)"
    assert sizes.reading(constant, claims.DIFFERENCE, sign=-1) == "above zero, the side opposite to the paper's claim"
