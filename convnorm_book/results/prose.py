"""Verdicts in sentences a reader can follow: one comparison (:func:`verdict_sentence`),
the comparisons of one claim (:func:`summary`), and how a chapter corrects for making
many comparisons (:func:`multiplicity`). Every number is read from the verdicts, which
are computed from the records and the paper's values."""
from __future__ import annotations

from collections.abc import Sequence

from .claims import DIFFERENCE, PARITY
from .records import Records
from .stats import ALPHA, CONTRADICTED, INCONCLUSIVE, SUPPORTED
from .verdicts import AGREE, LARGER, OPPOSITE, SMALLER, UNKNOWN, Chapter, Verdict, not_run, short_labels
from .words import NUMBER_WORDS as _WORDS
from .words import listing, number, percent, scale_name, signed, spelled

_OUTCOME_WORDS = {DIFFERENCE: {SUPPORTED: "supported", CONTRADICTED: "contradicted", INCONCLUSIVE: "inconclusive"},
                  PARITY: {SUPPORTED: "parity shown", CONTRADICTED: "a difference beyond the margin",
                           INCONCLUSIVE: "parity not shown"}}



def count(n: int, noun: str, plural: str | None = None) -> str:
    """``"no comparison"``, ``"one comparison"``, ``"12 comparisons"``."""
    text = _WORDS[n] if n < len(_WORDS) else f"{n:,}"
    return f"{text} {noun if n == 1 else plural or noun + 's'}"


def _unit(v: Verdict) -> str:
    return f" {v.comparison.unit}" if v.comparison.unit else ""


def size_phrase(v: Verdict) -> str:
    """How our effect compares in size with the paper's, in words (empty without a
    paper's number)."""
    c = v.comparison
    if c.paper is None:
        return ""
    paper = f"the paper's {signed(c.paper)}{_unit(v)}"
    if v.size_blocked:
        return f"sizes cannot be set side by side: {v.size_blocked}"
    if v.size == UNKNOWN:
        return f"with fewer than two seeds there is no interval to set {paper} against"
    if v.size == AGREE:
        return f"{paper} lies inside our interval: the two agree in size"
    if v.size == OPPOSITE:
        return f"{paper} lies outside our interval, and ours has the opposite sign"
    return f"{paper} lies outside our interval: ours is {_times(v.ratio)} its size"


def _times(ratio: float) -> str:
    """``"17 times"``, ``"1.4 times"``, or below one ``"4 % of"``."""
    ratio = abs(ratio)
    if ratio < 1:
        return f"{ratio * 100:.0f} % of"
    return f"{ratio:.0f} times" if ratio >= 2 else f"{ratio:.1f} times"


def verdict_sentence(v: Verdict, chapter_size: int | None = None) -> str:
    """One comparison in full: our effect with its interval, the paper's beside it, how
    they compare in size, and the verdict (before and after the chapter's correction,
    over ``chapter_size`` comparisons, where it changes)."""
    c = v.comparison
    where = ", ".join(value for name, value in v.facets if name != "pair")
    text = f"{v.facet('pair')}" + (f" ({where})" if where else "") + f": {c.effect()}"
    size = size_phrase(v)
    if size:
        text += f"; {size}"
    if not v.tested:
        return text + ". The paper makes no claim here."
    words = _OUTCOME_WORDS[v.kind]
    if v.kind == PARITY:
        text += f". Tested as parity within ±{number(v.margin)}{_unit(v)}"
    if v.final == v.outcome:
        return text + f". {words[v.final].capitalize()} at the {v.scale}."
    many = count(chapter_size, "comparison") if chapter_size else "the chapter's comparisons"
    return (text + f". {words[v.outcome].capitalize()} tested alone (p = {v.p_value:.2g}), but not after "
            f"correcting for {many} (adjusted p = {v.adjusted:.2g}): {words[v.final]} at the {v.scale}.")


def summary(verdicts: Sequence[Verdict], chapter: Chapter | None = None) -> str:
    """A paragraph on the comparisons of one claim: how many are tested and how, which
    verdicts hold tested alone and after the chapter's correction, how our effects
    compare in size with the paper's, what our intervals can resolve, the diverged runs,
    and the notes the claims carry (e.g. on the paper's own numbers)."""
    if not verdicts:
        return "No comparison of this claim can be made on these records."
    labels = dict(zip(map(id, verdicts), short_labels(verdicts)))
    tested = [v for v in verdicts if v.tested]
    sentences = [_how_tested(verdicts, tested)]
    if tested:
        sentences.append(_outcomes(tested, labels, chapter))
    sentences += filter(None, [_sizes(verdicts, labels), _resolution(verdicts), _diverged(verdicts)])
    sentences += dict.fromkeys(v.note for v in verdicts if v.note)
    blocked = dict.fromkeys(v.size_blocked for v in verdicts if v.size_blocked and v.paper is not None)
    sentences += [f"Sizes are not compared where {reason}." for reason in blocked]
    return " ".join(sentences)


def _how_tested(verdicts: Sequence[Verdict], tested: Sequence[Verdict]) -> str:
    untested = len(verdicts) - len(tested)
    kinds = frozenset(v.kind for v in tested)
    if kinds == {PARITY}:
        how = f"as parity within ±{number(tested[0].margin)}{_unit(tested[0])}"
    elif kinds == {DIFFERENCE}:
        how = "as a difference in the paper's direction"
    else:
        how = "as a difference in the paper's direction or as parity within a margin, as the paper claims"
    text = f"At the {verdicts[0].scale}, we make {count(len(verdicts), 'comparison')} here"
    if tested:
        text += f" and test {'each' if not untested else f'{spelled(len(tested))} of them'} {how}"
    if untested:
        text += ("; the paper makes no claim on " + (f"the other {spelled(untested)}" if tested else "any of them"))
    return text + "."


def _outcomes(tested: Sequence[Verdict], labels: dict, chapter: Chapter | None) -> str:
    def listed(chosen, outcome):
        kinds = {v.kind for v in chosen}
        word = _OUTCOME_WORDS[kinds.pop()][outcome] if len(kinds) == 1 else outcome
        names = _named([labels[id(v)] for v in chosen])
        return f"{spelled(len(chosen))} {'is' if len(chosen) == 1 else 'are'} {word} ({names})"

    alone = [listed(chosen, o) for o in (SUPPORTED, CONTRADICTED) if (chosen := [v for v in tested if v.outcome == o])]
    if not alone:
        return "Tested alone, none is supported or contradicted."
    text = "Tested alone, " + " and ".join(alone)
    if chapter is None or any(v.adjusted is None for v in tested):
        return text + "."
    stand = [v for v in tested if v.final != INCONCLUSIVE]
    after = (f"{count(len(stand), 'verdict')} {'stands' if len(stand) == 1 else 'stand'} "
             f"({_named([labels[id(v)] for v in stand])})" if stand else "none stands")
    return f"{text}; after Holm's correction for the chapter's {count(len(chapter.tested), 'comparison')}, {after}."


def _named(labels: Sequence[str], most: int = 3) -> str:
    """:func:`~convnorm_book.results.words.listing` of at most ``most`` labels, separated
    by semicolons where a label holds a comma ("vs ONI, PGD-10; vs ONI, PGD-20")."""
    if not any("," in label for label in labels):
        return listing(labels, most=most)
    shown = list(labels[:most]) + ([f"{len(labels) - most} more"] if len(labels) > most else [])
    return "; ".join(shown)


def _sizes(verdicts: Sequence[Verdict], labels: dict) -> str:
    with_paper = [v for v in verdicts if v.size != UNKNOWN]
    if not with_paper:
        return ""
    agree = [v for v in with_paper if v.size == AGREE]
    text = f"The paper's difference lies inside our interval in {spelled(len(agree))} of {spelled(len(with_paper))}"
    larger = [v for v in with_paper if v.size == LARGER]
    smaller = [v for v in with_paper if v.size == SMALLER]
    opposite = [v for v in with_paper if v.size == OPPOSITE]
    others = []
    if larger:
        biggest = max(larger, key=lambda v: abs(v.ratio))
        others.append(f"larger in {spelled(len(larger))}, up to {_times(biggest.ratio)} the paper's "
                      f"({labels[id(biggest)]})")
    if smaller:
        others.append(f"smaller in {spelled(len(smaller))}")
    if opposite:
        others.append(f"of the opposite sign in {spelled(len(opposite))} ({_named([labels[id(v)] for v in opposite])})")
    return text + ("; ours is " + ", ".join(others) if others else "") + "."


def _resolution(verdicts: Sequence[Verdict]) -> str:
    """Our interval widths beside the paper's differences, per unit."""
    sentences = []
    for unit in dict.fromkeys(v.comparison.unit for v in verdicts):
        rows = [v for v in verdicts if v.comparison.unit == unit]
        widths = [v.comparison.interval[1] - v.comparison.interval[0] for v in rows if v.comparison.interval]
        paper = [abs(v.paper) for v in rows if v.paper is not None]
        if not widths or not paper:
            continue
        suffix = f" {unit}" if unit else ""
        sentences.append(f"Our intervals are {_span(widths)}{suffix} wide, the paper's differences "
                         f"{_span(paper)}{suffix} in size"
                         + (": a difference of the paper's size cannot be told from zero here."
                            if min(widths) > 2 * max(paper) else "."))
    return " ".join(sentences)


def _span(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    return number(low) if low == high else f"{number(low)} to {number(high)}"


def _diverged(verdicts: Sequence[Verdict]) -> str:
    notes = dict.fromkeys(f"{v.facet('pair')}: {v.comparison.over_seeds.diverged_note}" for v in verdicts
                          if v.comparison.diverged)
    if not notes:
        return ""
    return "Runs that diverged are left out of the differences (" + "; ".join(notes) + ")."


def _tally(supported: int, contradicted: int) -> str:
    """``"two are supported and none contradicted"``, ``"none is supported or contradicted"``."""
    if not supported and not contradicted:
        return "none is supported or contradicted"
    verb = "is" if supported == 1 or (not supported and contradicted == 1) else "are"
    return f"{spelled(supported) if supported else 'none'} {verb} supported and " \
           f"{spelled(contradicted) if contradicted else 'none'} contradicted"


def same_verdicts(verdicts: Sequence[Verdict], others: Sequence[Verdict], instead: str) -> str:
    """How many comparisons keep their verdict, tested alone, when measured otherwise
    (``others``: the same claims from :func:`~convnorm_book.results.verdicts.evaluate`
    with ``measure=``); ``instead`` says how, e.g. "selecting the model on the noisy
    validation set"."""
    pairs = [(v, w) for v, w in zip(verdicts, others, strict=True) if v.tested]
    same = sum(v.outcome == w.outcome for v, w in pairs)
    return (f"{instead[0].upper()}{instead[1:]} instead gives the same verdict, each comparison tested alone, in "
            f"{spelled(same)} of the {spelled(len(pairs))} comparisons.")


def multiplicity(chapter: Chapter) -> str:
    """How many comparisons the chapter tests, how many verdicts chance alone would
    give, and how Holm's correction keeps them in check, with the counts before and
    after it."""
    tested = chapter.tested
    m = len(tested)
    if not m:
        return "This chapter tests none of the paper's claims on the records shown."
    expected = m * ALPHA
    before = _tally(sum(v.outcome == SUPPORTED for v in tested), sum(v.outcome == CONTRADICTED for v in tested))
    after = _tally(sum(v.final == SUPPORTED for v in tested), sum(v.final == CONTRADICTED for v in tested))
    return (f"This chapter tests {count(m, 'comparison')} against the paper's claims. Tested one by one at "
            f"{percent(ALPHA)}, about {expected:.1f} of them would come out supported or contradicted by chance alone "
            "even if no method differed from another, so each verdict here is corrected for all of them by Holm's "
            "method, which keeps the chance of even one false verdict below "
            f"{percent(ALPHA)} whatever the dependence between comparisons that share runs. Tested one by one, "
            f"{before}; after the correction, {after}.")


#: where a claim is made, in a reader's words, per experiment
EXPERIMENT_WORDS = {"convergence": "in the convergence study", "generalization": "under the standard protocol",
                    "ablation": "in the ablation", "adversarial": "after adversarial training",
                    "simba": "under SimBA", "label-noise": "under label noise", "data-scarcity": "with scarce data",
                    "conditioning": "in the conditioning study", "runtime": "in the timing"}


def not_tested(records: Sequence[Records], reference: dict | None) -> str:
    """A sentence naming what of the paper's claims the records' presets do not run at
    all (:func:`~convnorm_book.results.verdicts.not_run`): comparisons with networks they
    do not train, the paper's data sets, rates or fractions they leave out. Empty when
    they run everything the paper's tables hold."""
    parts = []
    for data in records:
        missing = not_run(data, reference)
        what = []
        if missing.comparisons:
            what.append(f"{listing(missing.comparisons)} (networks this scale does not train)")
        if missing.groups:
            label = data.schema.group.label
            what.append(f"the paper's {label}{'s' if len(missing.groups) > 1 else ''} {listing(missing.groups)}")
        if what:
            parts.append(f"{EXPERIMENT_WORDS[data.experiment]}, {listing(what)}")
    if not parts:
        return ""
    return f"Not run at the {scale_name(records[0])}, and so not tested: " + "; ".join(parts) + "."
