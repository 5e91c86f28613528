"""Comparisons in a list a reader can follow, for the Markdown of a page (its symbols
typeset as math: show it with the cell's ``render_markdown_format`` set to ``myst``).

Nothing here writes a conclusion: each chapter's "What we can conclude" is written by a
person, with the numbers glued in from the records. What is generated is a list, one
line per comparison, with our effect, its interval and what that interval rules in and
out against the paper's claim (:mod:`~convnorm_book.results.sizes`), and the notes the
comparisons carry; and a sentence naming what the records do not run."""
from __future__ import annotations

from collections.abc import Sequence

from .comparisons import Comparison, not_run, short_labels
from .records import Records
from .studies import STUDIES
from .words import listing, scale_name, typeset


def comparison_line(c: Comparison, label: str | None = None) -> str:
    """One comparison: ``"label: effect; reading."`` (the label defaults to the pair and
    where it was measured)."""
    reading = c.reading
    return typeset(f"{label or c.paired.label}: {c.effect}" + (f"; {reading}" if reading else "") + ".")


def describe(comparisons: Sequence[Comparison], shared: str = "") -> str:
    """The comparisons of one claim as a Markdown list, each line labelled by what differs
    among them, then the notes they carry: how failed trainings entered, the claims'
    remarks on the paper's own numbers, and why some sizes are not set side by side.
    ``shared`` opens the list (what the lines share)."""
    if not comparisons:
        return "No comparison of this claim can be made on these records."
    lines = [f"- {comparison_line(c, label)}" for c, label in zip(comparisons, short_labels(comparisons))]
    notes = list(dict.fromkeys(f"{c.failure_rule[0].upper()}{c.failure_rule[1:]}."
                               for c in comparisons if c.paired.failed_a or c.paired.failed_b))
    notes += dict.fromkeys(c.note for c in comparisons if c.note)
    notes += dict.fromkeys(f"Sizes are not set side by side where {c.size_blocked}."
                           for c in comparisons if c.size_blocked and c.paper is not None)
    head = f"{shared}:\n\n" if shared else ""
    return head + "\n".join(lines) + ("\n\n" + typeset(" ".join(notes)) if notes else "")


def not_tested(records: Sequence[Records], paper_values: dict | None) -> str:
    """A sentence naming what of the paper's claims the records' presets do not run at
    all (:func:`~convnorm_book.results.comparisons.not_run`): comparisons with networks
    they do not train, the paper's data sets, rates or fractions they leave out. Empty
    when they run everything the paper's tables hold."""
    parts = []
    for data in records:
        missing = not_run(data, paper_values)
        what = []
        if missing.comparisons:
            what.append(f"{listing(missing.comparisons)} (networks this scale does not train)")
        if missing.groups:
            label = data.schema.group.label
            what.append(f"the paper's {label}{'s' if len(missing.groups) > 1 else ''} {listing(missing.groups)}")
        if what:
            parts.append(f"{STUDIES[data.experiment].where}, {listing(what)}")
    if not parts:
        return ""
    return f"Not run at the {scale_name(records[0])}, and so not compared: " + "; ".join(parts) + "."
