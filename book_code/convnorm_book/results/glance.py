r"""Part IV at a glance: one row per claim of the paper, read from the stored records.

Each row names the paper's claim and its number, what was run here, our result as an
interval, whether this scale can test the claim and why, and what the row means in one
sentence. Whether the scale can test a claim is decided by rules fixed here, before any
record is read, each a property a student can check:

* the measure must be the paper's (a SimBA attack of another length counts other queries);
* the quantity must be able to reach the paper's effect: the speed-up
  :math:`S = \log_2 (I_{\mathrm{BN}} / I_{\mathrm{CN}})` is at most :math:`\log_2 e^\ast`, with
  :math:`e^\ast` the epoch at which BN first reaches its best accuracy, since ConvNorm+BN
  cannot reach that level before its first epoch;
* under label noise, the networks must reach the regime the paper's gap comes from: a
  network whose training accuracy on the noisy labels stays at or below the share of
  labels still correct has not memorized any wrong label;
* a claim about scarce data is about a number of images: our subset must hold at least
  half as many images as the paper's subset of the same fraction;
* a time is the paper's only on the kind of device it ran on, a GPU;
* otherwise the interval must be narrower than the paper's effect (its half-width below
  :math:`|d_{\mathrm{paper}}|`): were the true effect the paper's, the interval would then
  leave zero out.

Where a rule fails, the row says "cannot be tested at this scale" and why, and its
meaning says "no evidence either way". Where every rule holds, a primary endpoint gives
its Holm-corrected verdict (:mod:`~convnorm_book.results.endpoints`) and a described
comparison says where its interval lies.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from convnorm_lab.experiments.catalog import (
    ABLATION,
    ADVERSARIAL,
    CONDITIONING,
    CONVERGENCE,
    DATA_SCARCITY,
    GENERALIZATION,
    LABEL_NOISE,
    RUNTIME,
    SIMBA,
)
from convnorm_lab.experiments.presets import PRESETS
from convnorm_lab.models.normalizations import BN, CAYLEY, CONVNORM_BN

from . import endpoints, sizes
from .comparisons import Comparison, evaluate
from .quantities import SpeedUp
from .records import Records, classes, lookup, runtime_records, scale, stored, training_images
from .stats import Paired, collect
from .tables import Table
from .words import device_name, percent

NOT_TESTABLE = "cannot be tested at this scale"


@dataclass(frozen=True)
class Row:
    """One claim of the paper beside our records (see the module)."""

    experiment: str
    claim: str
    run: str
    result: str
    blocked: str | None
    meaning: str

    @property
    def testable(self) -> bool:
        return self.blocked is None


def attainable_speed_up(records: Records, paper_values: dict, group: str | None = None) -> list[float]:
    r"""Per seed, the largest :math:`S` the convergence records can give:
    :math:`\log_2 e^\ast`, with :math:`e^\ast` the first epoch at which BN reaches its best test
    accuracy within the paper's budget (:class:`~convnorm_book.results.quantities.SpeedUp`)."""
    budget, found = SpeedUp.budget(paper_values), []
    for file in records.files:
        record = lookup(file.results, records.schema.record_path(group, BN))
        history, batch = record["history"], record["batch_size"]
        within = [acc for acc, steps in zip(history["test_acc"], history["steps"]) if steps * batch <= budget]
        level = max(within or history["test_acc"])
        found.append(math.log2(1 + next(i for i, acc in enumerate(history["test_acc"]) if acc >= level)))
    return found


def _half_width(c: Paired) -> float:
    return (c.interval[1] - c.interval[0]) / 2


def _too_wide(c: Paired) -> str | None:
    """Why the interval of ``c`` cannot resolve the paper's effect, or None."""
    if c.interval is None or c.paper is None:
        return "no interval to set beside the paper's number"
    unit = f" {c.unit}" if c.unit else ""
    p = sizes.places(c)
    if _half_width(c) >= abs(c.paper):
        return (f"the interval's half-width, {_half_width(c):.{p}f}{unit}, exceeds the paper's effect, "
                f"{abs(c.paper):.{sizes.paper_places(c.paper)}f}{unit}")
    return None


def _verdict_sentence(result: endpoints.Result) -> str:
    """A primary endpoint's verdict in one sentence."""
    if result.verdict == endpoints.SUPPORTED:
        low, high = result.paired.interval
        size = ("" if low <= result.paired.paper <= high else
                ", but the effect is smaller than the paper's: the interval leaves its number out")
        return f"The test supports the paper's direction (Holm-adjusted p = {result.adjusted:.2g}){size}."
    if result.verdict == endpoints.CONTRADICTED:
        return f"The test finds the opposite direction (Holm-adjusted p = {result.adjusted:.2g})."
    return (f"The test is inconclusive (Holm-adjusted p = {result.adjusted:.2g}): no evidence either way, "
            "though the scale could have shown the paper's gap.")


def _described_sentence(c: Paired) -> str:
    """Where a described comparison's interval lies, in one sentence."""
    low, high = c.interval
    if low > 0 or high < 0:
        side = "above" if low > 0 else "below"
        holds = low <= c.paper <= high
        return (f"Our interval lies {side} zero" + (" and holds the paper's number." if holds else
                                                   ", and leaves the paper's number out."))
    return "Our interval holds zero: no evidence either way."


def _untestable(blocked: str) -> str:
    return f"The claim {NOT_TESTABLE}, so these records give no evidence either way on it."


@dataclass(frozen=True)
class Spec:
    """How one row is read: the experiment, the claim in words, the comparison it rests on
    (a primary endpoint's name, or a claim's pair and measure) and the rule particular to it."""

    experiment: str
    claim: str
    endpoint: str | None = None
    pair: str | None = None
    measure: str | None = None
    rule: Callable[[Records, dict, Paired, str | None], str | None] | None = None


def _speed_up_rule(records: Records, paper_values: dict, c: Paired, group: str | None) -> str | None:
    reach = attainable_speed_up(records, paper_values, group)
    if max(reach) <= c.paper:
        return (f"S can reach at most {min(reach):.2f} to {max(reach):.2f} doublings here (log₂ of the epoch at "
                f"which BN peaks), no more than the paper's {c.paper:.0f}")
    return None


def _memorizing_rule(records: Records, paper_values: dict, c: Paired, group: str | None) -> str | None:
    schema, settings = records.schema, records.settings
    rate = group
    share = 100 * (1 - float(rate) * (classes((rate,)) - 1) / classes((rate,)))
    final = max(collect(records, schema.record_path(rate, m) + ("summary", "final_train_acc"), 100, accuracy=True).mean
                for m in schema.method_keys(settings))
    if final <= share:
        return (f"no network fits the wrong labels (training accuracy at most {final:.0f} % with {share:.0f} % of "
                "the labels correct), the regime where the paper's gap arises")
    return None


def _images_rule(records: Records, paper_values: dict, c: Paired, group: str | None) -> str | None:
    fraction = float(group)
    ours, paper = (round(fraction * training_images(s)) for s in (records.settings, PRESETS["paper"]))
    if 2 * ours < paper:
        return f"{percent(fraction)} of the data is {ours:,} images here, {paper:,} in the paper"
    return None


SPECS = (
    Spec(GENERALIZATION.name, "ConvNorm+BN generalizes better than BN", pair="ConvNorm+BN − BN"),
    Spec(CONVERGENCE.name, "ConvNorm+BN reaches BN's accuracy in fewer images",
          endpoint="convergence speed", rule=_speed_up_rule),
    Spec(ABLATION.name, "the affine kernel adds accuracy with BN", pair="affine kernel, with BN"),
    Spec(LABEL_NOISE.name, "ConvNorm+BN resists label noise better than BN",
          endpoint="label noise 80 %", rule=_memorizing_rule),
    Spec(DATA_SCARCITY.name, "ConvNorm+BN learns better than BN from little data",
          endpoint="data scarcity 10 %", rule=_images_rule),
    Spec(CONDITIONING.name, "ConvNorm brings each channel's condition number to 1",
          endpoint="channel conditioning"),
    Spec(ADVERSARIAL.name, "ConvNorm+BN resists PGD-20 better than BN after adversarial training",
          pair="ConvNorm+BN − BN", measure="PGD-20"),
    Spec(SIMBA.name, "ConvNorm needs more SimBA queries than SN", pair="ConvNorm − SN", measure="average queries"),
)


def _comparison(spec: Spec, records: Records, paper_values: dict) -> Comparison:
    found = [c for c in evaluate(records, paper_values) if c.claim.name == spec.pair
             and spec.measure in (None, c.facet("measure"))]
    if not found:
        raise ValueError(f"no comparison {spec.pair!r} ({spec.measure}) in the {spec.experiment} records")
    return found[0]


def _row(spec: Spec, paper_values: dict, tested: dict[str, endpoints.Result], root) -> Row:
    records = stored(spec.experiment, root)
    run = f"{scale(records.settings, spec.experiment)}; {len(records.files)} seeds"
    if spec.endpoint is not None:
        result = tested[spec.endpoint]
        c, comparison, group = result.paired, None, result.endpoint.group_at(records.settings)
    else:
        comparison = _comparison(spec, records, paper_values)
        c, result, group = comparison.paired, None, comparison.group
    unit = f" {c.unit}" if c.unit else ""
    where = f" ({spec.endpoint}, a primary endpoint)" if spec.endpoint else ""
    claim = f"{spec.claim}{where}; the paper: {sizes.signed(c.paper, sizes.paper_places(c.paper))}{unit}"
    blocked = ((comparison.size_blocked if comparison is not None else None)
               or (spec.rule(records, paper_values, c, group) if spec.rule else None)
               or (None if spec.endpoint == "channel conditioning" else _too_wide(c)))
    if blocked is not None:
        meaning = _untestable(blocked)
    elif result is not None:
        meaning = _verdict_sentence(result)
    else:
        meaning = _described_sentence(c)
    return Row(spec.experiment, claim, run, sizes.effect(c), blocked, meaning)


def cost_row(paper_values: dict, root: str | Path | None = None) -> Row:
    """The paper's Table 8 beside our timings: ConvNorm+BN's time over the plain network's,
    per device timed (one timing each, so no interval)."""
    table = paper_values["tables"][RUNTIME.schema.paper_table]
    paper = dict(zip(table["columns"], table["rows"]["seconds_per_epoch"]))
    timed = runtime_records(root)
    ratios = {name: {m: collect(data, (m, "relative_to_bn")).mean for m in (CONVNORM_BN, CAYLEY)}
              for name, data in timed.items()}
    result = "; ".join(f"{ratio[CONVNORM_BN]:.2f} times on {device_name(timed[name].devices)}"
                       for name, ratio in ratios.items())
    gpus = [name for name in timed if "cpu" not in timed[name].devices.lower()]
    blocked = None if gpus else "timed on a CPU only, the paper on GPUs"
    run = "; ".join(f"{scale(data.settings, RUNTIME.name)}, {device_name(data.devices)}" for data in timed.values())
    if blocked is None:
        ordered = all(1 < ratios[name][CONVNORM_BN] < ratios[name][CAYLEY] for name in gpus)
        meaning = ("ConvNorm costs more than the plain network and less than Cayley, as in the paper." if ordered
                   else "The paper's order, plain < ConvNorm < Cayley, does not hold here.")
    else:
        meaning = _untestable(blocked)
    return Row(RUNTIME.name, f"ConvNorm costs more time than the plain network, less than Cayley; the paper: "
               f"{paper['ConvNorm'] / paper['vanilla']:.2f} times", run, result, blocked, meaning)


def rows(paper_values: dict, root: str | Path | None = None) -> list[Row]:
    """Every row of the glance table, in the order of :data:`SPECS`, then the cost."""
    tested = {result.endpoint.name: result for result in endpoints.test(paper_values, root)}
    return [_row(spec, paper_values, tested, root) for spec in SPECS] + [cost_row(paper_values, root)]


def table(found: list[Row]) -> Table:
    """The glance table of ``found`` rows."""
    return Table("Part IV at a glance",
                 ["the paper's claim", "run here", "our result", "can this scale test it?", "what it means"],
                 [[r.claim, r.run, r.result, "yes" if r.testable else f"no: {r.blocked}", r.meaning] for r in found],
                 ["Intervals are 95 % t-intervals of differences paired by seed. Primary endpoints are tested with "
                  "Holm's correction; every other row is described."])


__all__ = ["NOT_TESTABLE", "Row", "SPECS", "attainable_speed_up", "cost_row", "rows", "table"]
