r"""Part IV at a glance: one row per claim of the paper, read from the stored records.

Each row names the paper's claim and its number, what was run here, our result as an
interval, whether this scale can test the claim and why, and what the row means in one
sentence. Whether the scale can test a claim is the rule of
:mod:`~convnorm_book.results.scope`, the same the plan and the chapters read: the measure
must be the paper's, the scale must let the paper's effect show (the speed-up's attainable
range, the absolute number of training images, a network that fits wrong labels), the
interval must be narrower than the paper's effect, and a time must come from a GPU.

Where the rule fails, the row says "cannot be tested at this scale" and why, and its
meaning says "no evidence either way". Where it holds, a primary endpoint gives its
Holm-corrected verdict (:mod:`~convnorm_book.results.endpoints`) and a described
comparison says where its interval lies.
"""
from __future__ import annotations

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
from convnorm_lab.models.normalizations import CAYLEY, CONVNORM_BN

from . import endpoints, scope, sizes
from .comparisons import Comparison, evaluate
from .records import Records, runtime_records, scale, stored
from .scope import NOT_TESTABLE, Scope
from .stats import Paired, collect
from .tables import Table
from .words import device_name


@dataclass(frozen=True)
class Row:
    """One claim of the paper beside our records (see the module); ``scope``: whether this
    scale can test it and why (:mod:`~convnorm_book.results.scope`)."""

    experiment: str
    claim: str
    run: str
    result: str
    scope: Scope
    meaning: str

    @property
    def testable(self) -> bool:
        return self.scope.testable is True

    @property
    def blocked(self) -> str | None:
        """Why this scale cannot test the claim, or ``None`` where it can."""
        return None if self.testable else self.scope.reason


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


def _untestable() -> str:
    return f"The claim {NOT_TESTABLE}, so these records give no evidence either way on it."


@dataclass(frozen=True)
class Spec:
    """How one row is read: the experiment, the claim in words, and the comparison it rests
    on (a primary endpoint's name, or a claim's pair and measure)."""

    experiment: str
    claim: str
    endpoint: str | None = None
    pair: str | None = None
    measure: str | None = None


SPECS = (
    Spec(GENERALIZATION.name, "ConvNorm+BN generalizes better than BN", pair="ConvNorm+BN − BN"),
    Spec(CONVERGENCE.name, "ConvNorm+BN reaches BN's accuracy in fewer images",
          endpoint="convergence speed"),
    Spec(ABLATION.name, "the affine kernel adds accuracy with BN", pair="affine kernel, with BN"),
    Spec(LABEL_NOISE.name, "ConvNorm+BN resists label noise better than BN",
          endpoint="label noise 80 %"),
    Spec(DATA_SCARCITY.name, "ConvNorm+BN learns better than BN from little data",
          endpoint="data scarcity 10 %"),
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
        c, comparison = result.paired, None
    else:
        comparison = _comparison(spec, records, paper_values)
        c, result = comparison.paired, None
    unit = f" {c.unit}" if c.unit else ""
    where = f" ({spec.endpoint}, a primary endpoint)" if spec.endpoint else ""
    claim = f"{spec.claim}{where}; the paper: {sizes.signed(c.paper, sizes.paper_places(c.paper))}{unit}"
    limit = None if result is None else scope.scope(result.endpoint, records.preset, paper_values, root)
    found = scope.of_records(c, limit, comparison.size_blocked if comparison is not None else None)
    if not found.testable:
        meaning = _untestable()
    elif result is not None:
        meaning = _verdict_sentence(result)
    else:
        meaning = _described_sentence(c)
    return Row(spec.experiment, claim, run, sizes.effect(c), found, meaning)


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
    found = scope.timing(data.devices for data in timed.values())
    gpus = [name for name, data in timed.items() if scope.timing([data.devices]).testable]
    run = "; ".join(f"{scale(data.settings, RUNTIME.name)}, {device_name(data.devices)}" for data in timed.values())
    if found.testable:
        ordered = all(1 < ratios[name][CONVNORM_BN] < ratios[name][CAYLEY] for name in gpus)
        meaning = ("ConvNorm costs more than the plain network and less than Cayley, as in the paper." if ordered
                   else "The paper's order, plain < ConvNorm < Cayley, does not hold here.")
    else:
        meaning = _untestable()
    return Row(RUNTIME.name, f"ConvNorm costs more time than the plain network, less than Cayley; the paper: "
               f"{paper['ConvNorm'] / paper['vanilla']:.2f} times", run, result, found, meaning)


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


__all__ = ["NOT_TESTABLE", "Row", "SPECS", "cost_row", "rows", "table"]
