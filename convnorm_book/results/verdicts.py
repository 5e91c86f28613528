"""The paper's claims (:mod:`~convnorm_book.results.claims`) tested on stored records.

:func:`evaluate` turns every claim of an experiment into one :class:`Verdict` per
concrete comparison (each group of the preset, each attack): our paired differences,
the paper's difference beside them, the test the claim calls for, and whether the two
effects agree in size. A :class:`Chapter` gathers the verdicts of all the experiments a
chapter shows and corrects them together with Holm's method
(:func:`~convnorm_book.results.stats.holm`): a chapter makes dozens of comparisons, and
a verdict stands only if it survives them all.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .claims import CLAIMS, DIFFERENCE, NO_CLAIM, PARITY, Claim
from .quantities import Measured
from .records import Records
from .stats import ALPHA, CONTRADICTED, INCONCLUSIVE, SUPPORTED, Paired, holm, paired_values
from .words import group_name, listing, method_label, scale_name

#: how the sizes of our effect and the paper's compare (:attr:`Verdict.size`)
AGREE, LARGER, SMALLER, OPPOSITE, UNKNOWN = "agree", "larger", "smaller", "opposite", "unknown"


@dataclass(frozen=True)
class Verdict:
    """One comparison tested against the paper's claim.

    ``comparison``: our per-seed differences (with the paper's difference and the claimed
    sign); ``kind``: the claim's kind here (``NO_CLAIM`` where the claim does not reach
    this group or the paper states no direction); ``facets``: (name, value) pairs that
    say where it was measured, for tables and figures (``pair``, ``group``,
    ``measure``); ``scale``: the scale of the records in words; ``size_blocked``: why
    our size cannot be set against the paper's (``None`` where it can); ``note``: the
    claim's remark on the paper's own number; ``adjusted``: Holm's p-value once a
    :class:`Chapter` corrected it (``None`` before).
    """

    claim: Claim
    group: str | None
    comparison: Paired
    kind: str
    facets: tuple[tuple[str, str], ...]
    scale: str
    size_blocked: str | None = None
    note: str | None = None
    adjusted: float | None = None

    @property
    def tested(self) -> bool:
        return self.kind != NO_CLAIM

    @property
    def paper(self) -> float | None:
        return self.comparison.paper

    @property
    def margin(self) -> float | None:
        return self.claim.margin if self.kind == PARITY else None

    def facet(self, name: str) -> str:
        return dict(self.facets).get(name, "")

    @property
    def p_value(self) -> float | None:
        """The p-value of the test that would decide the verdict: the paired t-test for a
        difference; for parity the smaller of the equivalence test's and the test of a
        difference beyond the margin (at most one of them can fall below 0.05); 1 where
        fewer than two seeds leave nothing to test; ``None`` without a claim."""
        if not self.tested:
            return None
        if self.kind == PARITY:
            tests = self.comparison.parity_p_values(self.margin)
            return 1.0 if tests is None else min(tests)
        p = self.comparison.p_value
        return 1.0 if p is None else p

    @property
    def outcome(self) -> str:
        """The verdict of this comparison tested alone: ``SUPPORTED`` (for parity:
        shown), ``CONTRADICTED`` or ``INCONCLUSIVE`` (see :mod:`~convnorm_book.results.stats`)."""
        if self.kind == DIFFERENCE:
            return self.comparison.verdict
        if self.kind == PARITY:
            tests = self.comparison.parity_p_values(self.margin)
            if tests is not None and tests[0] < ALPHA:
                return SUPPORTED
            if tests is not None and tests[1] < ALPHA:
                return CONTRADICTED
        return INCONCLUSIVE

    @property
    def final(self) -> str:
        """The verdict after Holm's correction: an outcome whose adjusted p-value is not
        below 0.05 becomes ``INCONCLUSIVE`` (the outcome itself before any correction)."""
        if self.adjusted is not None and self.adjusted >= ALPHA:
            return INCONCLUSIVE
        return self.outcome

    @property
    def size(self) -> str:
        """How our effect and the paper's compare in size: ``AGREE`` (the paper's value
        lies in our 95 % interval), ``LARGER`` or ``SMALLER`` (ours, of the same sign, is
        larger or smaller than the paper's, which lies outside our interval),
        ``OPPOSITE`` (of the other sign, outside the interval), ``UNKNOWN`` (no paper's
        number, no interval, or sizes that cannot be compared: :attr:`size_blocked`)."""
        c = self.comparison
        if c.paper is None or c.interval is None or self.size_blocked:
            return UNKNOWN
        if c.paper_inside:
            return AGREE
        if c.mean * c.paper <= 0:
            return OPPOSITE
        return LARGER if abs(c.mean) > abs(c.paper) else SMALLER

    @property
    def ratio(self) -> float | None:
        """Our mean difference over the paper's (``None`` without a paper's number)."""
        paper = self.comparison.paper
        return None if not paper else self.comparison.mean / paper


def _facets(claim: Claim, records: Records, group: str | None, quantity, several_groups: bool):
    facets = [("pair", claim.name)]
    if group is not None and several_groups:
        facets.append(("group", group_name(records.schema, group)))
    return tuple(facets) + quantity.facets(records)


def evaluate(records: Records, reference: dict | None, claims: Sequence[Claim] | None = None,
             measure: str | None = None) -> list[Verdict]:
    """One :class:`Verdict` per claim of ``records``' experiment (default: all of
    :data:`~convnorm_book.results.claims.CLAIMS`), group of its preset and concrete
    measure, uncorrected; claims about a method the preset does not run are left out.

    ``measure`` tests the claims on another measure of the schema than the paper's (the
    test accuracy at the best noisy-validation epoch beside the paper's maximum over the
    epochs), in the direction the paper's number gives on its own measure; no paper's
    number is set beside ours, since the paper measured something else.
    """
    schema, settings = records.schema, records.settings
    methods, groups = schema.method_keys(settings), schema.group_keys(settings)
    chosen = CLAIMS.get(records.experiment, ()) if claims is None else claims
    found = []
    for claim in chosen:
        if claim.experiment != records.experiment:
            raise ValueError(f"a claim about {claim.experiment!r} cannot be tested on {records.experiment!r} records")
        if claim.a not in methods or claim.b not in methods:
            continue
        for group in groups:
            for quantity in claim.quantity.expand(records):
                paper = quantity.paper(reference, records, group, claim.a, claim.b)
                sign = (paper > 0) - (paper < 0) if paper else claim.sign
                kind = claim.kind if claim.covers(group) and (claim.kind == PARITY or sign) else NO_CLAIM
                if measure is not None:
                    quantity, paper = Measured(measure, getattr(quantity, "unit", "")), None
                facets = _facets(claim, records, group, quantity, len(groups) > 1)
                comparison = paired_values(quantity.values(records, group, claim.a),
                                           quantity.values(records, group, claim.b), method_label(claim.a),
                                           method_label(claim.b), paper=paper,
                                           claim=sign if kind == DIFFERENCE else None, unit=quantity.unit_of(records),
                                           context=", ".join(value for name, value in facets if name != "pair"))
                found.append(Verdict(claim, group, comparison, kind, facets, scale_name(records),
                                     claim.size_check(records.settings) if claim.size_check else None,
                                     claim.note(reference) if claim.note and reference is not None else None))
    return found


def varying(verdicts: Sequence[Verdict]) -> list[str]:
    """The facet names whose values differ among ``verdicts``, in facet order."""
    names = dict.fromkeys(name for v in verdicts for name, _ in v.facets)
    return [name for name in names if len({v.facet(name) for v in verdicts}) > 1]


def short_facets(verdicts: Sequence[Verdict]) -> list[dict[str, str]]:
    """Per verdict, the facets that vary among ``verdicts`` in few words: the pair as
    ``"vs SN+BN"`` where every comparison is of the same method against others."""
    names = varying(verdicts) or ["pair"]
    one_a = len({v.claim.a for v in verdicts}) == 1 and not any(v.claim.label for v in verdicts)
    return [{name: f"vs {method_label(v.claim.b)}" if name == "pair" and one_a else v.facet(name) for name in names}
            for v in verdicts]


def short_labels(verdicts: Sequence[Verdict]) -> list[str]:
    """A label per verdict naming only what differs among them (``"vs SN+BN, PGD-10"``
    where every comparison is of ConvNorm+BN): short enough for a figure at a phone's
    width. What they share is :func:`shared_label`."""
    return [", ".join(facets.values()) for facets in short_facets(verdicts)]


def shared_label(verdicts: Sequence[Verdict]) -> str:
    """What ``verdicts`` share (``"ConvNorm+BN against each, maximum test accuracy"``): a
    title for :func:`short_labels`."""
    names, changing = [name for name, _ in verdicts[0].facets], varying(verdicts)
    parts = [verdicts[0].facet(name) for name in names if name not in changing]
    if "pair" in changing and len({v.claim.a for v in verdicts}) == 1 and not any(v.claim.label for v in verdicts):
        parts.insert(0, f"{method_label(verdicts[0].claim.a)} against each")
    return ", ".join(parts)


def corrected(verdicts: Sequence[Verdict]) -> list[Verdict]:
    """``verdicts`` with Holm's adjusted p-values over those that test a claim."""
    tested = [i for i, v in enumerate(verdicts) if v.tested]
    adjusted = dict(zip(tested, holm([verdicts[i].p_value for i in tested])))
    return [replace(v, adjusted=adjusted[i]) if i in adjusted else v for i, v in enumerate(verdicts)]


@dataclass(frozen=True)
class Chapter:
    """The verdicts of every experiment a chapter shows, corrected together (Holm)."""

    verdicts: tuple[Verdict, ...]

    @classmethod
    def of(cls, records: Iterable[Records], reference: dict | None) -> Chapter:
        """Every claim tested on each of ``records`` (one :class:`Records` per experiment)."""
        return cls(tuple(corrected([v for data in records for v in evaluate(data, reference)])))

    def __call__(self, experiment: str, *, a: str | None = None, b: str | None = None) -> list[Verdict]:
        """The verdicts of ``experiment`` (those comparing method ``a`` with ``b`` when given)."""
        return [v for v in self.verdicts if v.claim.experiment == experiment
                and a in (None, v.claim.a) and b in (None, v.claim.b)]

    @property
    def tested(self) -> list[Verdict]:
        """The comparisons that test a claim (those Holm's correction counts)."""
        return [v for v in self.verdicts if v.tested]


@dataclass(frozen=True)
class NotRun:
    """What of the paper's claims about ``experiment`` the records cannot test, because
    their preset does not run it: the comparisons (``"A − B"``) of claims about methods it
    does not train, and the groups (data sets, rates, fractions; the paper's names) of the
    paper's table it does not run."""

    experiment: str
    comparisons: tuple[str, ...]
    groups: tuple[str, ...]


def not_run(records: Records, reference: dict | None) -> NotRun:
    """The paper's claims about ``records``' experiment that its preset cannot test
    (:class:`NotRun`): claims about a method the preset does not train, and the groups of
    the paper's table (``reference``) the preset does not run."""
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
    if reference is not None and schema.group is not None and schema.reference is not None \
            and "group" in schema.layout:
        table = reference["tables"][schema.reference]
        paper = list(table["rows"]) if schema.layout[0] == "group" else list(table["columns"])
        ours = {schema.group.paper_name(g) for g in schema.group_keys(settings)}
        groups = tuple(group_name(schema, g) if not schema.group.percent else g for g in paper if g not in ours)
    return NotRun(records.experiment, comparisons, groups)
