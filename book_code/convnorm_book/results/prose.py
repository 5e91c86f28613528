"""What the records do not run, in a sentence for the Markdown of a page.

Nothing here writes a conclusion: each chapter's "What we can conclude" is written by a
person, with the numbers glued in from the records."""
from __future__ import annotations

from collections.abc import Sequence

from .comparisons import not_run
from .records import Records
from .studies import STUDIES
from .words import listing, scale_name


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
