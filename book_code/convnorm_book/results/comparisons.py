"""The paper's claims (:mod:`~convnorm_book.results.claims`) set beside stored records.

:func:`evaluate` turns every claim of an experiment into one :class:`Comparison` per
concrete comparison (each group of the preset, each attack): our paired differences,
the paper's difference beside them, the claim's direction and size, and what our
interval can say of them (:mod:`~convnorm_book.results.sizes`). None of these is tested:
a chapter makes dozens of comparisons, and with a few seeds a test of each, corrected
for all of them, could decide none; only the primary endpoints, declared before the data
with the seeds they need, are tested (:mod:`~convnorm_book.results.endpoints`). A
:class:`Chapter` gathers the comparisons of all the experiments a chapter shows.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from . import sizes
from .claims import DIFFERENCE, NO_CLAIM, SIZED, Claim
from .quantities import Measured
from .records import Records
from .stats import Paired, paired_values
from .studies import CLAIMS
from .words import group_name, listing, method_label, scale_name


@dataclass(frozen=True)
class Comparison:
    """One comparison set beside the paper's claim.

    ``claim``: what the paper claims; ``paired``: our per-seed differences (with the
    paper's difference); ``kind``: the claim's kind here (``NO_CLAIM`` where the claim
    does not reach this group or the paper states no direction); ``sign``: the claimed
    direction; ``facets``: (name, value) pairs that say where it was measured, for tables
    and figures (``pair``, ``group``, ``measure``); ``scale``: the scale of the records in
    words; ``size_blocked``: why our size cannot be set against the paper's (``None``
    where it can); ``note``: the claim's remark on the paper's own number; ``resolution``
    and ``span``: one image of the data in the quantity's unit and the range the quantity
    spans (``None``: unknown or unbounded); ``failure_rule``: how a failed training enters.
    """

    claim: Claim
    group: str | None
    paired: Paired
    kind: str
    sign: int | None
    facets: tuple[tuple[str, str], ...]
    scale: str
    size_blocked: str | None = None
    note: str | None = None
    resolution: float | None = None
    span: float | None = None
    failure_rule: str = ""

    @property
    def claimed(self) -> bool:
        return self.kind != NO_CLAIM

    @property
    def paper(self) -> float | None:
        return self.paired.paper

    @property
    def margin(self) -> float | None:
        return self.claim.margin if self.kind in SIZED else None

    def facet(self, name: str) -> str:
        return dict(self.facets).get(name, "")

    @property
    def effect(self) -> str:
        """Our effect in words (:func:`~convnorm_book.results.sizes.effect`)."""
        return sizes.effect(self.paired, self.resolution, self.span)

    @property
    def reading(self) -> str:
        """What our interval rules in and out against the claim
        (:func:`~convnorm_book.results.sizes.reading`); sizes are not set side by side where
        :attr:`size_blocked` says why."""
        c = self.paired if not self.size_blocked else replace(self.paired, paper=None)
        return sizes.reading(c, self.kind, self.sign, self.margin, self.resolution, self.span)

    @property
    def estimable(self) -> bool:
        return sizes.estimable(self.paired, self.span)


def _facets(claim: Claim, records: Records, group: str | None, quantity, several_groups: bool):
    facets = [("pair", claim.name)]
    if group is not None and several_groups:
        facets.append(("group", group_name(records.schema, group)))
    return tuple(facets) + quantity.facets(records)


def evaluate(records: Records, paper_values: dict | None, claims: Sequence[Claim] | None = None,
             measure: str | None = None) -> list[Comparison]:
    """One :class:`Comparison` per claim of ``records``' experiment (default: all of
    :data:`~convnorm_book.results.studies.CLAIMS`), group of its preset and concrete
    measure; claims about a method the preset does not run are left out.

    ``measure`` compares on another measure of the schema than the paper's (the test
    accuracy at the best noisy-validation epoch beside the paper's maximum over the
    epochs), in the direction the paper's number gives on its own measure; no paper's
    number is set beside ours, since the paper measured something else.
    """
    schema, settings = records.schema, records.settings
    methods, groups = schema.method_keys(settings), schema.group_keys(settings)
    chosen = CLAIMS.get(records.experiment, ()) if claims is None else claims
    found = []
    for claim in chosen:
        if claim.experiment != records.experiment:
            raise ValueError(f"a claim about {claim.experiment!r} cannot be set beside {records.experiment!r} records")
        if claim.a not in methods or claim.b not in methods:
            continue
        for group in groups:
            for quantity in claim.quantity.expand(records):
                paper = quantity.paper(paper_values, records, group, claim.a, claim.b)
                sign = (paper > 0) - (paper < 0) if paper and claim.kind == DIFFERENCE else claim.sign
                kind = claim.kind if claim.covers(group) and (claim.kind in SIZED or sign) else NO_CLAIM
                if measure is not None:
                    quantity, paper = Measured(measure, getattr(quantity, "unit", "")), None
                facets = _facets(claim, records, group, quantity, len(groups) > 1)
                comparison = paired_values(quantity.values(records, group, claim.a),
                                           quantity.values(records, group, claim.b), method_label(claim.a),
                                           method_label(claim.b), paper=paper, unit=quantity.unit_of(records),
                                           context=", ".join(value for name, value in facets if name != "pair"))
                found.append(Comparison(
                    claim, group, comparison, kind, sign if kind != NO_CLAIM else None, facets, scale_name(records),
                    claim.size_check(records.settings) if claim.size_check else None,
                    claim.note(paper_values) if claim.note and paper_values is not None else None,
                    quantity.resolution(records, group, claim.a), quantity.range_of(records),
                    quantity.failure_rule(records.experiment)))
    return found


def varying(comparisons: Sequence[Comparison]) -> list[str]:
    """The facet names whose values differ among ``comparisons``, in facet order."""
    names = dict.fromkeys(name for c in comparisons for name, _ in c.facets)
    return [name for name in names if len({c.facet(name) for c in comparisons}) > 1]


def short_facets(comparisons: Sequence[Comparison]) -> list[dict[str, str]]:
    """Per comparison, the facets that vary among ``comparisons`` in few words: the pair as
    ``"vs SN+BN"`` where every comparison is of the same method against others."""
    names = varying(comparisons) or ["pair"]
    one_a = len({c.claim.a for c in comparisons}) == 1 and not any(c.claim.label for c in comparisons)
    return [{name: f"vs {method_label(c.claim.b)}" if name == "pair" and one_a else c.facet(name) for name in names}
            for c in comparisons]


def short_labels(comparisons: Sequence[Comparison]) -> list[str]:
    """A label per comparison naming only what differs among them (``"vs SN+BN, PGD-10"``
    where every comparison is of ConvNorm+BN): short enough for a figure at a phone's
    width. What they share is :func:`shared_label`."""
    return [", ".join(facets.values()) for facets in short_facets(comparisons)]


def shared_label(comparisons: Sequence[Comparison]) -> str:
    """What ``comparisons`` share (``"ConvNorm+BN against each, maximum test accuracy"``): a
    title for :func:`short_labels`."""
    names, changing = [name for name, _ in comparisons[0].facets], varying(comparisons)
    parts = [comparisons[0].facet(name) for name in names if name not in changing]
    one_a = len({c.claim.a for c in comparisons}) == 1 and not any(c.claim.label for c in comparisons)
    if "pair" in changing and one_a:
        parts.insert(0, f"{method_label(comparisons[0].claim.a)} against each")
    return ", ".join(parts)


@dataclass(frozen=True)
class Chapter:
    """The comparisons of every experiment a chapter shows."""

    comparisons: tuple[Comparison, ...]

    @classmethod
    def of(cls, records: Iterable[Records], paper_values: dict | None) -> Chapter:
        """Every claim set beside each of ``records`` (one :class:`Records` per experiment)."""
        return cls(tuple(c for data in records for c in evaluate(data, paper_values)))

    def __call__(self, experiment: str, *, a: str | None = None, b: str | None = None) -> list[Comparison]:
        """The comparisons of ``experiment`` (those of method ``a`` with ``b`` when given)."""
        return [c for c in self.comparisons if c.claim.experiment == experiment
                and a in (None, c.claim.a) and b in (None, c.claim.b)]


@dataclass(frozen=True)
class NotRun:
    """What of the paper's claims about ``experiment`` the records cannot test, because
    their preset does not run it: the comparisons (``"A − B"``) of claims about methods it
    does not train, and the groups (data sets, rates, fractions; the paper's names) of the
    paper's table it does not run."""

    experiment: str
    comparisons: tuple[str, ...]
    groups: tuple[str, ...]


def not_run(records: Records, paper_values: dict | None) -> NotRun:
    """The paper's claims about ``records``' experiment that its preset cannot test
    (:class:`NotRun`): claims about a method the preset does not train, and the groups of
    the paper's table (``paper_values``) the preset does not run."""
    schema, settings = records.schema, records.settings
    methods = set(schema.method_keys(settings))
    missing = [claim for claim in CLAIMS.get(records.experiment, ()) if not {claim.a, claim.b} <= methods]
    firsts = {claim.a for claim in missing}
    if len(firsts) == 1 and not any(claim.label for claim in missing):
        others = dict.fromkeys(method_label(claim.b) for claim in missing)
        comparisons = (f"{method_label(firsts.pop())} against {listing(others)}",)
    else:
        comparisons = tuple(dict.fromkeys(claim.name for claim in missing))
    groups: tuple[str, ...] = ()
    if paper_values is not None and schema.group is not None and schema.paper_table is not None \
            and "group" in schema.layout:
        table = paper_values["tables"][schema.paper_table]
        paper = list(table["rows"]) if schema.layout[0] == "group" else list(table["columns"])
        ours = {schema.group.paper_name(g) for g in schema.group_keys(settings)}
        groups = tuple(group_name(schema, g) if not schema.group.percent else g for g in paper if g not in ours)
    return NotRun(records.experiment, comparisons, groups)
