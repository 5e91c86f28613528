"""The paper's values, transcribed table by table in ``paper_reference_values.json`` of
the results folder, and where each experiment's schema finds a number in them (its
``paper_table``).

A table has ``label`` (the paper's table or figure), ``setting``, ``columns`` and
``rows``; a cell is ``[mean, std]``, a number, or one of the paper's marks as it prints
them (:data:`MARKS`): ``"/"`` for a training that failed, ``"-"`` for a number not
reported.
"""
from __future__ import annotations

import json
from pathlib import Path

from convnorm_lab.experiments import EXPERIMENTS
from convnorm_lab.experiments.schema import Measure

from .records import PAPER_VALUES_FILE, results_dir


def load_paper_values(root: str | Path | None = None) -> dict:
    """The paper's values: ``{"source", "note", "tables": {name: table}}``."""
    path = results_dir(root) / PAPER_VALUES_FILE
    data = json.loads(path.read_text())
    if "tables" not in data or "source" not in data:
        raise ValueError(f"{str(path)!r} is not a file of the paper's values (needs 'source' and 'tables')")
    return data


#: the paper's marks in its tables, and what each means
MARKS = {"/": "failed training", "-": "not reported"}


def paper_mean(cell) -> float | None:
    """The mean of a cell of the paper's (``[mean, std]`` or a number), ``None`` for a mark
    (:data:`MARKS`) or an absent cell."""
    value = cell[0] if isinstance(cell, (list, tuple)) else cell
    return None if value is None or value in MARKS else float(value)


def table_cell(table: dict, row: str, column: str):
    """The paper's cell at ``row``/``column`` of one of its tables.

    Raises:
        ValueError: if the row or the column is not in the table.
    """
    if row not in table["rows"]:
        raise ValueError(f"row {row!r} not in the paper's {table['label']!r} (rows: {list(table['rows'])})")
    if column not in table["columns"]:
        raise ValueError(f"column {column!r} not in the paper's {table['label']!r} "
                         f"(columns: {table['columns']})")
    return table["rows"][row][table["columns"].index(column)]


def paper_value(paper_values: dict, experiment: str, method: str, measure: Measure, group: str | None = None):
    """The paper's cell for ``method`` and ``measure`` (in ``group``), or ``None`` where
    the paper reports no such number.

    Raises:
        ValueError: if the schema names a row or column the paper's table lacks.
    """
    schema = EXPERIMENTS[experiment].schema
    cell = schema.paper_cell(group, method, measure)
    if cell is None:
        return None
    table = paper_values["tables"][schema.paper_table]
    # a rate or an attack strength the paper did not run (they come from the preset) has no
    # value; any other name missing from the table is an error in the schema
    for axis, name, names in zip(schema.layout, cell, (table["rows"], table["columns"])):
        if name not in names and (axis == "group" or (axis == "measure" and measure.from_setting)):
            return None
    return table_cell(table, *cell)


def paper_difference(paper_values: dict, experiment: str, a: str, b: str, measure: Measure,
                     group: str | None = None) -> float | None:
    """The paper's ``mean(a) - mean(b)``, or ``None`` unless it reports both."""
    values = [paper_mean(paper_value(paper_values, experiment, m, measure, group)) for m in (a, b)]
    return None if None in values else values[0] - values[1]


def paper_leads(paper_values: dict, experiment: str, a: str, b: str) -> dict[str, float]:
    """The paper's ``a - b`` in every group its table has (e.g. each noise rate) and
    reports both in, keyed by the paper's name of the group; for tables of methods
    against groups.

    Raises:
        ValueError: if the experiment's table of the paper is not laid out by method and group.
    """
    schema = EXPERIMENTS[experiment].schema
    if set(schema.layout) != {"method", "group"}:
        raise ValueError(f"experiment {experiment!r}: its table of the paper is not one of methods against groups")
    table = paper_values["tables"][schema.paper_table]
    groups = table["columns"] if schema.layout[1] == "group" else list(table["rows"])

    def mean(method, group):
        names = (schema.paper_names[method], group)
        return paper_mean(table_cell(table, *(names if schema.layout[0] == "method" else names[::-1])))

    pairs = {group: (mean(a, group), mean(b, group)) for group in groups}
    return {group: x - y for group, (x, y) in pairs.items() if x is not None and y is not None}
