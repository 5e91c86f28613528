"""Reading experiment results back: provenance, tables beside the paper, curves over seeds.

The experiment harness (:mod:`convnorm.experiments`) writes one JSON file per
experiment, preset and seed, ``<dir>/<experiment>-<preset>-seed<seed>.json``, holding
``{"provenance": ..., "results": ...}``. This module is the only place the book reads
them back. It

* finds the result files (:func:`results_dir`, :func:`load_runs`, :func:`load_benchmarks`)
  and summarises their provenance (:func:`describe_provenance`, :func:`stored_inventory`):
  preset and scale, the device that ran them, seeds, commit, wall time and the copy of the
  data. A preset names a *scale* (``cpu`` is the reduced one); the device always comes
  from the files (:func:`devices`);
* reduces a number over seeds to :class:`SeedStats` (mean, sample standard deviation,
  minimum and maximum);
* builds long-format tables with the paper's value in the column next to ours
  (:func:`experiment_table`; for the run time, :func:`runtime_table`), the paper's values
  coming from the one file of reference values ``results/paper_reference_values.json``
  (:func:`load_reference`);
* plots curves with min/max bands over seeds (:func:`plot_curves`,
  :func:`plot_rate_curves`, :func:`plot_layer_profile`);
* phrases paired comparisons from the numbers themselves (:func:`describe_difference`)
  and counts the seeds that agree in sign (:func:`sign_agreement`, for the asserts that
  guard a chapter's conclusions), so a chapter's discussion cannot drift from its data.

Accuracies are stored by the harness as fractions and by the paper as percentages;
tables here show percentages for both.
"""
from __future__ import annotations

import html
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .training.results import load_results

RESULTS_ENV = "CONVNORM_RESULTS_DIR"
REFERENCE_FILE = "paper_reference_values.json"
_REPO_RESULTS = Path(__file__).resolve().parents[1] / "results"

#: display names of the harness's normalization keys
METHOD_LABELS = {
    "none": "vanilla", "bn": "BN", "convnorm": "ConvNorm", "convnorm+bn": "ConvNorm+BN",
    "sn": "SN", "oni": "ONI", "ocnn": "OCNN", "sn+bn": "SN+BN", "oni+bn": "ONI+BN", "ocnn+bn": "OCNN+BN",
    "cayley": "Cayley",
}


#: the header of the paper's column in every comparison table
PAPER_COLUMN = "paper (full scale, GPU)"


def method_label(norm: str) -> str:
    """Display name of a harness normalization key (unknown keys are returned as given)."""
    return METHOD_LABELS.get(norm, norm)


# ------------------------------------------------------------------ files
def results_dir(directory: str | Path | None = None) -> Path:
    """The root of the stored results: ``directory`` if given, else the environment
    variable ``CONVNORM_RESULTS_DIR``, else the ``results/`` folder of this checkout.

    Raises:
        ValueError: if the chosen folder does not exist.
    """
    chosen = directory if directory is not None else os.environ.get(RESULTS_ENV) or _REPO_RESULTS
    path = Path(chosen)
    if not path.is_dir():
        raise ValueError(f"results directory {str(path)!r} does not exist (set {RESULTS_ENV} or pass directory)")
    return path


def load_reference(path: str | Path | None = None) -> dict:
    """The paper's reference values: ``{"source", "note", "tables": {name: table}}``,
    where each table has ``label``, ``setting``, ``columns`` and ``rows``."""
    path = Path(path) if path is not None else results_dir() / REFERENCE_FILE
    data = json.loads(Path(path).read_text())
    if "tables" not in data or "source" not in data:
        raise ValueError(f"{str(path)!r} is not a reference-value file (needs 'source' and 'tables')")
    return data


@dataclass(frozen=True)
class Run:
    """One result file: where it is, its provenance block and its results."""

    path: Path
    provenance: dict
    results: dict

    @property
    def seed(self) -> int:
        return int(self.provenance["seed"])


_SEED_FILE = re.compile(r"-seed(\d+)\.json$")


def load_runs(experiment: str, preset: str, directory: str | Path | None = None) -> list[Run]:
    """Every seed's result file of ``experiment`` at ``preset`` under ``directory``,
    sorted by seed (an empty list when none was run).

    ``directory`` is the folder the harness wrote to (its ``--output``); by default
    ``results_dir() / preset``.

    Raises:
        ValueError: if a file's provenance names another experiment or preset.
    """
    folder = Path(directory) if directory is not None else results_dir() / preset
    runs = []
    for path in sorted(folder.glob(f"{experiment}-{preset}-seed*.json")):
        if not _SEED_FILE.search(path.name):
            continue
        data = load_results(path)
        prov = data["provenance"]
        if prov.get("experiment") != experiment or prov.get("preset") != preset:
            raise ValueError(f"{path.name}: provenance says {prov.get('experiment')!r}/{prov.get('preset')!r}, "
                             f"expected {experiment!r}/{preset!r}")
        runs.append(Run(path, prov, data["results"]))
    return sorted(runs, key=lambda run: run.seed)


def missing_message(experiment: str, preset: str, directory: str | Path | None = None) -> str:
    """What to print where a preset of an experiment has no stored result."""
    where = directory if directory is not None else f"results/{preset}"
    return (f"NOT RUN YET: no stored `{preset}` result of `{experiment}` ({where}/{experiment}-{preset}-seed*.json). "
            f"Run `python -m convnorm.experiments {experiment} --preset {preset} --output {where} --seed 0` "
            f"(add --resume to continue an interrupted run).")


def _distinct(values) -> str:
    seen = list(dict.fromkeys(str(v) for v in values))
    return "; ".join(seen)


def preset_scale(runs: Sequence[Run]) -> str:
    """``"REDUCED scale"`` or ``"the paper's scale"``, from the preset settings recorded
    in the first run (a preset names a scale, never the device that ran it)."""
    if not runs:
        raise ValueError("runs is empty: no scale to read")
    reduced = runs[0].provenance.get("preset_settings", {}).get("reduced", True)
    return "REDUCED scale" if reduced else "the paper's scale"


def devices(runs: Sequence[Run]) -> str:
    """The device(s) the runs executed on, as recorded in their provenance (distinct
    values joined by ``"; "``)."""
    if not runs:
        raise ValueError("runs is empty: no device to read")
    return _distinct(run.provenance["device"] for run in runs)


def describe_provenance(runs: Sequence[Run]) -> str:
    """Multi-line summary of where a set of runs (one experiment, one preset) came from:
    the preset and its scale, the seeds, the device they ran on, the code, the wall time
    and the copy of the data, all read from the files."""
    if not runs:
        raise ValueError("runs is empty: nothing to describe")
    prov = [run.provenance for run in runs]
    settings = prov[0].get("preset_settings", {})
    wall = [p["wall_time_s"] for p in prov]
    lines = [
        f"experiment {prov[0]['experiment']!r}, preset {prov[0]['preset']!r} ({preset_scale(runs)}): "
        f"{settings.get('description', '')}",
        f"seeds: {', '.join(str(run.seed) for run in runs)} ({len(runs)} run{'s' if len(runs) > 1 else ''})",
        f"ran on (device recorded in the files): {devices(runs)}; "
        f"torch {_distinct(p['torch_version'] for p in prov)}",
        f"code commit: {_distinct(p['git_commit'] for p in prov)}",
        f"wall time: {sum(wall) / 60:.1f} min in all ({', '.join(f'{w / 60:.1f}' for w in wall)} min per seed); "
        f"finished {_distinct(p['finished_utc'] for p in prov)}",
        f"data: {_distinct(p['data'] for p in prov)}",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------ statistics over seeds
@dataclass(frozen=True)
class SeedStats:
    """A number measured once per seed. ``values`` holds the finite values; ``missing``
    counts seeds where it is absent (a diverged run). ``std`` is the sample standard
    deviation (``ddof = 1``; 0 for a single value)."""

    values: tuple[float, ...]
    missing: int = 0

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values)) if self.values else math.nan

    @property
    def std(self) -> float:
        return float(np.std(self.values, ddof=1)) if self.n > 1 else (0.0 if self.n else math.nan)

    @property
    def min(self) -> float:
        return float(min(self.values)) if self.values else math.nan

    @property
    def max(self) -> float:
        return float(max(self.values)) if self.values else math.nan

    def format(self, digits: int = 2) -> str:
        """``mean ± std [min, max] (n=…)``, or ``mean (n=1)``; missing seeds noted."""
        if not self.values:
            return "no value" + (f" ({self.missing} run(s) diverged/absent)" if self.missing else "")
        text = _number(self.mean, digits)
        if self.n > 1:
            text += f" ± {_number(self.std, digits)} [{_number(self.min, digits)}, {_number(self.max, digits)}]"
        text += f" (n={self.n})"
        if self.missing:
            text += f", {self.missing} diverged/absent"
        return text


def _number(value: float, digits: int) -> str:
    """``digits`` decimals, or two significant digits for a nonzero value that would
    print as zero."""
    if value != 0 and abs(value) < 0.5 * 10.0 ** -digits:
        return f"{value:.2g}"
    return f"{value:.{digits}f}"


def seed_stats(values: Sequence[float | None]) -> SeedStats:
    """Statistics of per-seed values; ``None``/NaN entries count as missing."""
    finite = tuple(float(v) for v in values if v is not None and math.isfinite(float(v)))
    return SeedStats(finite, len(values) - len(finite))


def _dig(data, keys: Sequence[str | int]):
    """``data[k0][k1]...``: string keys index dicts, integer keys index lists; ``None``
    where a key is absent."""
    for key in keys:
        if isinstance(key, int) and isinstance(data, list):
            if not -len(data) <= key < len(data):
                return None
        elif not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def collect(runs: Sequence[Run], keys: Sequence[str], scale: float = 1.0) -> SeedStats:
    """The number at ``results[keys[0]][keys[1]]...`` of every run, times ``scale``."""
    values = []
    for run in runs:
        value = _dig(run.results, keys)
        values.append(None if value is None else float(value) * scale)
    return seed_stats(values)


def paired_difference(runs: Sequence[Run], keys_a: Sequence[str], keys_b: Sequence[str],
                      scale: float = 1.0) -> SeedStats:
    """Per-seed ``a - b`` (same seed, same data split), as :class:`SeedStats`."""
    values = []
    for run in runs:
        a, b = _dig(run.results, keys_a), _dig(run.results, keys_b)
        values.append(None if a is None or b is None else (float(a) - float(b)) * scale)
    return seed_stats(values)


def sign_agreement(ours: SeedStats, sign: float) -> int:
    """How many seeds' values have the sign of ``sign`` (a zero value never agrees).

    ``sign_agreement(d, +1) == d.n`` means "positive in every seed", ``== 0`` "never
    positive"; chapters assert such statements against the stored data.
    """
    if sign == 0 or not math.isfinite(sign):
        raise ValueError(f"sign must be a nonzero finite number, got {sign!r}")
    return sum(1 for v in ours.values if v != 0 and np.sign(v) == np.sign(sign))


def describe_difference(label_a: str, label_b: str, ours: SeedStats, paper: float | None = None,
                        unit: str = "points", claimed_sign: int | None = None) -> str:
    """A sentence comparing our ``a - b`` (per seed) with the paper's ``a - b``.

    It says whether the sign agrees with the paper's (``paper``, or, for a claim read
    off a figure, ``claimed_sign`` = ±1) in every seed, in some, or in none, so a
    chapter's conclusion is computed rather than written in advance. A paper difference
    of exactly zero has no sign: the sentence then only states both numbers.
    """
    if not ours.values:
        return f"{label_a} − {label_b}: no finished run to compare."
    unit = f" {unit}" if unit else ""
    text = f"{label_a} − {label_b}: {ours.mean:+.2f}{unit} in our runs"
    if ours.n > 1:
        text += f" (per seed from {ours.min:+.2f} to {ours.max:+.2f}, {ours.n} seeds)"
    else:
        text += " (1 seed)"
    if paper == 0:  # no sign to agree with
        return text + f"; the paper: no difference ({paper:+.2f}{unit})."
    if paper is not None:
        text += f"; the paper: {paper:+.2f}{unit}. "
        sign = np.sign(paper)
    elif claimed_sign is not None:
        text += f"; the paper's claim: {'positive' if claimed_sign > 0 else 'negative'}. "
        sign = np.sign(claimed_sign)
    else:
        return text + "."
    agree = sign_agreement(ours, sign)
    if ours.n == 1:
        text += ("Same sign as the paper in the single seed run" if agree else
                 "Opposite sign to the paper (or zero) in the single seed run")
        return text + "; one seed cannot show whether the gap exceeds the spread between seeds."
    if agree == ours.n:
        text += "Same sign as the paper in every seed"
    elif agree == 0:
        text += "Opposite sign to the paper (or zero) in every seed: not reproduced at this scale"
    else:
        text += f"Same sign as the paper in {agree} of {ours.n} seeds: inconclusive at this scale"
    return text + "."


def diverged_runs(runs: Sequence[Run]) -> list[str]:
    """``"seed S: key/…/key: error"`` for every training record flagged ``diverged``."""
    found = []

    def walk(node, path, seed):
        if isinstance(node, dict):
            if node.get("diverged") is True:
                found.append(f"seed {seed}: {'/'.join(path)}: {node.get('error', 'diverged')}")
            for key, value in node.items():
                walk(value, path + [key], seed)

    for run in runs:
        walk(run.results, [], run.seed)
    return found


# ------------------------------------------------------------------ tables
@dataclass
class ComparisonTable:
    """A long-format table: key columns, then ours, then the paper's value."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        table = [self.columns] + self.rows
        widths = [max(len(row[i]) for row in table) for i in range(len(self.columns))]
        lines = [self.title, "  ".join(c.ljust(w) for c, w in zip(self.columns, widths)),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in self.rows]
        return "\n".join(lines + self.notes)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in self.rows)
        notes = "".join(f"<p><small>{html.escape(n)}</small></p>" for n in self.notes)
        return (f"<p><b>{html.escape(self.title)}</b></p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>{notes}")


def format_paper(value) -> str:
    """A reference cell: ``[mean, std]`` → ``mean ± std``; a number; ``None`` → not reported."""
    if value is None:
        return "not reported"
    if isinstance(value, (list, tuple)):
        mean, std = value
        if mean is None:
            return "not reported"
        return f"{mean:.2f}" + ("" if std is None else f" ± {std:.2f}")
    return f"{value:g}"


def paper_mean(value) -> float | None:
    """The mean of a reference cell (``[mean, std]`` or a number), ``None`` if absent."""
    if isinstance(value, (list, tuple)):
        value = value[0]
    return None if value is None else float(value)


@dataclass(frozen=True)
class Entry:
    """One table row: its keys, the path of our number in each run's results, and the
    position of the paper's number in the reference table (``(row, column)`` names, or
    ``None`` where the paper has no such number)."""

    keys: tuple[str, ...]
    ours: tuple[str, ...] | None
    paper: tuple[str, str] | None
    scale: float = 1.0


def reference_cell(table: dict, row: str, column: str):
    """The paper's cell at ``row``/``column`` of a reference table.

    Raises:
        ValueError: if the row or the column is not in the table.
    """
    if row not in table["rows"]:
        raise ValueError(f"row {row!r} not in reference table {table['label']!r} (rows: {list(table['rows'])})")
    if column not in table["columns"]:
        raise ValueError(f"column {column!r} not in reference table {table['label']!r} "
                         f"(columns: {table['columns']})")
    return table["rows"][row][table["columns"].index(column)]


def comparison_table(title: str, key_names: Sequence[str], entries: Sequence[Entry], runs: Sequence[Run],
                     reference: dict | None, preset: str, digits: int = 2) -> ComparisonTable:
    """Rows ``keys | ours (preset) | paper`` for each entry; our cell is
    ``mean ± std [min, max] (n=seeds)`` over ``runs``, or a NOT RUN note. The header of
    our column names the preset and its scale, a note names the device the runs ran on
    (both read from the files)."""
    n = len(runs)
    if n:
        scale = ", reduced scale" if preset_scale(runs) == "REDUCED scale" else ""
        ours_name = f"ours ({preset} preset{scale}, {n} seed{'s' if n != 1 else ''})"
    else:
        ours_name = f"ours ({preset} preset)"
    columns = list(key_names) + [ours_name, PAPER_COLUMN]
    rows = []
    for entry in entries:
        if not runs:
            ours = "not run yet"
        elif entry.ours is None or all(entry.ours[0] not in run.results for run in runs):
            ours = "not in this preset"
        else:
            ours = collect(runs, entry.ours, entry.scale).format(digits)
        paper = "—" if entry.paper is None or reference is None else format_paper(
            reference_cell(reference, *entry.paper))
        rows.append(list(entry.keys) + [ours, paper])
    notes = []
    if runs:
        notes.append(f"ours: ran on {devices(runs)} (from the result files' provenance); "
                     f"mean ± sample std [min, max] over seeds")
    if reference is not None:
        notes.append(f"paper: {reference['label']}; {reference['setting']}")
    return ComparisonTable(title, columns, rows, notes)


def _pct(value: float) -> str:
    return f"{value * 100:g}%"


def _rate_keys(runs: Sequence[Run], paper_columns: Sequence[str]) -> list[tuple[str, str | None]]:
    """(harness key, paper column) for the union of our rates and the paper's, sorted."""
    ours = {k for run in runs for k in run.results}
    paper = {float(c.rstrip("%")) / 100: c for c in paper_columns}
    rates = sorted({float(k) for k in ours} | set(paper))
    return [(f"{r:g}", paper.get(r)) for r in rates]


# the harness key, the paper's row/column name, per experiment
_GENERALIZATION = [("none", "vanilla"), ("bn", "BN"), ("convnorm", "ConvNorm"), ("convnorm+bn", "ConvNorm+BN")]
_ADVERSARIAL = [("sn+bn", "SN"), ("bn", "BN"), ("oni+bn", "ONI"), ("ocnn+bn", "OCNN"), ("convnorm+bn", "ConvNorm")]
_ATTACKS = [("clean", "clean"), ("fgsm", "FGSM"), ("pgd10", "PGD-10"), ("pgd20", "PGD-20")]
_SIMBA = [("sn", "SN"), ("oni", "ONI"), ("ocnn", "OCNN"), ("convnorm", "ConvNorm")]
_RUNTIME = [("bn", "vanilla"), ("convnorm+bn", "ConvNorm"), ("cayley", "Cayley")]
_RHO = [("sn", "SN"), ("oni", "ONI"), ("ocnn", "OCNN"), ("convnorm", "ConvNorm")]
_ABLATION = [("convnorm+bn", "on", "with affine", "with BN"), ("convnorm", "on", "with affine", "without BN"),
             ("convnorm+bn", "off", "without affine", "with BN"), ("convnorm", "off", "without affine", "without BN")]

#: the reference table (in ``paper_reference_values.json``) each experiment is compared with
REFERENCE_OF = {
    "generalization": "generalization", "ablation": "ablation", "adversarial": "adversarial", "simba": "simba",
    "label-noise": "label_noise", "data-scarcity": "data_scarcity", "runtime": "runtime",
    "conditioning": "condition_ratio",
}


def _entries(experiment: str, runs: Sequence[Run], table: dict | None) -> tuple[list[str], list[Entry], str]:
    """Key column names, entries and title of the comparison table of ``experiment``."""
    if experiment == "generalization":
        datasets = list(dict.fromkeys([k for run in runs for k in run.results] + ["cifar10", "cifar100"]))
        entries = [Entry((d, label), (d, norm, "summary", "test_acc_at_best_val"), (d, label), 100)
                   for d in datasets for norm, label in _GENERALIZATION]
        return ["dataset", "method"], entries, "Test accuracy (%) at the best validation epoch"
    if experiment == "ablation":
        entries = [Entry((affine_name, bn), (f"{norm}, affine={affine}", "summary", "test_acc_at_best_val"),
                         (affine_name, bn), 100) for norm, affine, affine_name, bn in _ABLATION]
        return ["affine kernel", "BatchNorm"], entries, "Ablation of ConvNorm: test accuracy (%)"
    if experiment == "adversarial":
        entries = [Entry((label, attack_label), (norm, "robust", attack), (attack, label), 100)
                   for norm, label in _ADVERSARIAL for attack, attack_label in _ATTACKS]
        return ["method", "attack"], entries, "Free adversarial training: accuracy (%) under attack"
    if experiment == "simba":
        entries = []
        for norm, label in _SIMBA:
            entries += [
                Entry((label, "pixel", "average queries"), (norm, "simba", "pixel", "average_queries"),
                      (label, "average_queries")),
                Entry((label, "pixel", "success rate (%)"), (norm, "simba", "pixel", "success_rate"),
                      (label, "success_rate_percent"), 100),
                Entry((label, "DCT", "average queries"), (norm, "simba", "dct", "average_queries"), None),
                Entry((label, "DCT", "success rate (%)"), (norm, "simba", "dct", "success_rate"), None, 100),
            ]
        return ["method", "basis", "quantity"], entries, "SimBA black-box attack on models without BatchNorm"
    if experiment in ("label-noise", "data-scarcity"):
        what = "noise rate" if experiment == "label-noise" else "training fraction"
        rates = _rate_keys(runs, table["columns"] if table else [])
        entries = [Entry((label, _pct(float(rate))), (rate, norm, "summary", "test_acc_at_best_val"),
                         None if column is None else (label, column), 100)
                   for norm, label in _GENERALIZATION for rate, column in rates]
        return ["method", what], entries, f"Test accuracy (%) per {what}"
    if experiment == "runtime":
        entries = [Entry((label, "seconds per epoch"), (norm, "seconds_per_epoch"), ("seconds_per_epoch", label))
                   for norm, label in _RUNTIME]
        entries += [Entry((label, "time relative to vanilla"), (norm, "relative_to_bn"), None)
                    for norm, label in _RUNTIME]
        return ["method", "quantity"], entries, "Training time of a ResNet18 (vanilla = BatchNorm only)"
    if experiment == "conditioning":
        entries = [Entry((label,), (norm, "rho"), ("rho", label)) for norm, label in _RHO]
        return ["method"], entries, "ρ = mean over layers of κ(vanilla) / κ(method) (larger: better conditioned)"
    raise ValueError(f"experiment must be one of {sorted(REFERENCE_OF)}, got {experiment!r}")


def experiment_table(experiment: str, runs: Sequence[Run], reference: dict | None = None,
                     preset: str | None = None, digits: int = 2) -> ComparisonTable:
    """The comparison table of ``experiment``: our numbers over seeds beside the paper's.

    ``reference`` is the whole reference file (:func:`load_reference`); ``preset``
    labels our column (default: the runs' preset).
    """
    if experiment not in REFERENCE_OF:
        raise ValueError(f"experiment must be one of {sorted(REFERENCE_OF)}, got {experiment!r}")
    table = None if reference is None else reference["tables"][REFERENCE_OF[experiment]]
    key_names, entries, title = _entries(experiment, runs, table)
    preset = preset or (runs[0].provenance["preset"] if runs else "?")
    result = comparison_table(title, key_names, entries, runs, table, preset, digits)
    if experiment == "runtime" and table is not None:
        cols, secs = table["columns"], table["rows"]["seconds_per_epoch"]
        ratios = ", ".join(f"{c} {s / secs[0]:.2f}×" for c, s in zip(cols, secs))
        result.notes.append(f"paper, relative to vanilla (computed from its seconds per epoch): {ratios}")
    return result


def paper_difference(reference: dict, experiment: str, cell_a: tuple[str, str], cell_b: tuple[str, str]) -> float:
    """The paper's ``mean(a) - mean(b)`` for two cells of an experiment's reference table."""
    table = reference["tables"][REFERENCE_OF[experiment]]
    a, b = paper_mean(reference_cell(table, *cell_a)), paper_mean(reference_cell(table, *cell_b))
    if a is None or b is None:
        raise ValueError(f"the paper reports no value for {cell_a if a is None else cell_b}")
    return a - b


def runtime_table(stored: dict[str, Sequence[Run]], reference: dict | None = None) -> ComparisonTable:
    """Seconds per epoch and the ratio to vanilla (BN only) of every stored runtime preset
    beside the paper's Table 9: one row per source, one column per quantity.

    ``stored`` maps a preset name to its runtime runs (empty: a "not run yet" row). Each
    of our rows names the preset, the network timed (ResNet18 at the preset's width and
    batch) and the device, all read from the files; values are means over seeds.
    """
    columns = ["source"] + [f"{label} s/epoch" for _, label in _RUNTIME] + \
              [f"{label} ÷ vanilla" for _, label in _RUNTIME[1:]]
    rows = []
    for preset, runs in stored.items():
        if not runs:
            rows.append([f"ours, {preset} preset"] + ["not run yet"] * (len(columns) - 1))
            continue
        settings = runs[0].provenance.get("preset_settings", {})
        width = settings.get("width")
        net = f"ResNet18 of width {width}" if width else "ResNet18 (full width)"
        batch = _distinct(run.results["bn"]["batch_size"] for run in runs)
        source = (f"ours, {preset} preset ({preset_scale(runs)}): {net}, batch {batch}, "
                  f"{len(runs)} seed{'s' if len(runs) != 1 else ''}, on {devices(runs)}")
        secs = [collect(runs, (norm, "seconds_per_epoch")).mean for norm, _ in _RUNTIME]
        ratios = [collect(runs, (norm, "relative_to_bn")).mean for norm, _ in _RUNTIME[1:]]
        rows.append([source] + [f"{v:.2f}" for v in secs] + [f"{v:.2f}×" for v in ratios])
    notes = ["ours: seconds per training step × ceil(45,000 / batch), timed after one warm-up step"]
    if reference is not None:
        table = reference["tables"]["runtime"]
        paper = dict(zip(table["columns"], table["rows"]["seconds_per_epoch"]))
        secs = [paper[label] for _, label in _RUNTIME]
        rows.append([f"paper ({table['label']}): full scale, the authors' GPU"] + [f"{v:g}" for v in secs]
                    + [f"{v / secs[0]:.2f}×" for v in secs[1:]])
        notes.append(f"paper: {table['setting']}")
    return ComparisonTable("Training time of a ResNet18: ours beside the paper's", columns, rows, notes)


def stored_inventory(experiments: Sequence[str], presets: Sequence[str],
                     directory: str | Path | None = None) -> ComparisonTable:
    """What is stored: per experiment and preset, the seeds, the device they ran on and
    the code commit, read from the files (or "none stored").

    ``directory`` is the results root (default :func:`results_dir`); presets are its
    sub-folders.
    """
    root = results_dir(directory)
    rows = []
    for experiment in experiments:
        for preset in presets:
            runs = load_runs(experiment, preset, root / preset)
            if runs:
                commits = _distinct(run.provenance["git_commit"][:8] for run in runs)
                rows.append([experiment, preset, preset_scale(runs), ", ".join(str(r.seed) for r in runs),
                             devices(runs), commits])
            else:
                rows.append([experiment, preset, "—", "none stored", "—", "—"])
    return ComparisonTable("Stored results (read from results/<preset>/)",
                           ["experiment", "preset", "scale", "seeds", "ran on", "commit"], rows)


def load_benchmarks(pattern: str, directory: str | Path | None = None) -> list[Run]:
    """The benchmark files matching ``pattern`` (e.g. ``"bench_layer_cuda_batch*.json"``)
    in ``directory`` (default: ``benchmarks/results`` of this checkout), sorted by name;
    each holds ``{"provenance", "results"}`` like an experiment file. Empty when absent."""
    folder = Path(directory) if directory is not None else _REPO_RESULTS.parent / "benchmarks" / "results"
    runs = []
    for path in sorted(folder.glob(pattern)):
        data = load_results(path)
        runs.append(Run(path, data["provenance"], data["results"]))
    return runs


# ------------------------------------------------------------------ curves
@dataclass(frozen=True)
class Band:
    """A curve over seeds: x, mean, min and max (truncated to the shortest seed)."""

    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: int


def curve_band(histories: Sequence[dict], metric: str, x: str = "steps", scale: float = 1.0) -> Band:
    """Mean and min/max over seeds of ``history[metric]`` against ``history[x]``.

    Raises:
        ValueError: if there is no history, or a history lacks ``metric`` or ``x``.
    """
    if not histories:
        raise ValueError("histories is empty")
    for h in histories:
        if metric not in h or x not in h:
            raise ValueError(f"history lacks {metric!r} or {x!r} (has {sorted(h)})")
    length = min(len(h[metric]) for h in histories)
    values = np.array([[np.nan if v is None else v for v in h[metric][:length]] for h in histories], float) * scale
    return Band(np.asarray(histories[0][x][:length], float), np.nanmean(values, 0), np.nanmin(values, 0),
                np.nanmax(values, 0), len(histories))


def plot_band(ax, band: Band, label: str, **style):
    """Draw the mean curve and shade its min/max band (when there is more than one seed)."""
    (line,) = ax.plot(band.x, band.mean, label=f"{label} (n={band.n})", **style)
    if band.n > 1:
        ax.fill_between(band.x, band.low, band.high, color=line.get_color(), alpha=0.2, linewidth=0)
    return line


def plot_curves(ax, runs: Sequence[Run], select: Callable[[dict], dict], metric: str = "test_acc",
                x: str = "steps", scale: float = 100.0):
    """One band per method: ``select(results)`` maps method keys to the harness's run
    records (each with a ``history``); diverged runs contribute the epochs they finished."""
    methods = list(select(runs[0].results))
    for norm in methods:
        histories = [select(run.results)[norm]["history"] for run in runs]
        plot_band(ax, curve_band(histories, metric, x, scale), method_label(norm))
    ax.set_xlabel({"steps": "training iterations", "epoch": "epoch"}.get(x, x))
    ax.set_ylabel(f"{metric.replace('_', ' ')} (%)" if scale == 100 else metric.replace("_", " "))
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def plot_rate_curves(ax, runs: Sequence[Run], norms: Sequence[str] = ("none", "bn", "convnorm", "convnorm+bn"),
                     xlabel: str = "rate (%)"):
    """Test accuracy against the noise rate / training fraction (keys of the results),
    mean over seeds with min/max error bars."""
    rates = sorted({k for run in runs for k in run.results}, key=float)
    for norm in norms:
        stats = [collect(runs, (r, norm, "summary", "test_acc_at_best_val"), 100) for r in rates]
        mean = np.array([s.mean for s in stats])
        err = np.array([[s.mean - s.min for s in stats], [s.max - s.mean for s in stats]])
        ax.errorbar([float(r) * 100 for r in rates], mean, yerr=err, marker="o", capsize=3,
                    label=f"{method_label(norm)} (n={len(runs)})")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def plot_reference_rates(ax, table: dict, xlabel: str = "rate (%)"):
    """The paper's accuracy against rate (mean ± std error bars) from a reference table."""
    xs = [float(c.rstrip("%")) for c in table["columns"]]
    for label, cells in table["rows"].items():
        ax.errorbar(xs, [c[0] for c in cells], yerr=[c[1] for c in cells], marker="s", capsize=3,
                    linestyle="--", label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def plot_layer_profile(ax, runs: Sequence[Run], quantity: str, norms: Sequence[str], log: bool = True):
    """Per conv layer (in network order), ``quantity`` of the conditioning results,
    mean over seeds with a min/max band; methods whose run diverged are skipped."""
    for norm in norms:
        layers = [run.results[norm]["layers"] for run in runs if run.results.get(norm, {}).get("layers")]
        if not layers:
            continue
        histories = [{"layer": list(range(1, len(ls) + 1)), quantity: [layer[quantity] for layer in ls]}
                     for ls in layers]
        plot_band(ax, curve_band(histories, quantity, "layer"), method_label(norm), marker="o", markersize=3)
    ax.set_xlabel("conv layer (network order)")
    ax.set_ylabel(quantity.replace("_", " "))
    if log:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


# ------------------------------------------------------------------ notebooks
PRESET_ENV = "CONVNORM_PRESET"


def choose_preset(cuda_available: bool, environ: dict | None = None) -> str:
    """The preset a chapter runs live: ``$CONVNORM_PRESET`` if set, else ``paper`` on a
    CUDA machine and ``smoke`` elsewhere.

    Raises:
        ValueError: if the variable names no preset.
    """
    environ = os.environ if environ is None else environ
    chosen = environ.get(PRESET_ENV) or ("paper" if cuda_available else "smoke")
    if chosen not in ("smoke", "cpu", "paper"):
        raise ValueError(f"{PRESET_ENV} must be one of smoke, cpu, paper, got {chosen!r}")
    return chosen


def live_output(preset: str, directory: str | Path | None = None) -> Path:
    """Where a chapter's live run writes: a fresh temporary folder for ``smoke`` (its
    numbers mean nothing and must not mix with stored results), else the stored results
    folder of the preset (``results/<preset>``, so a resumed run continues there)."""
    if preset == "smoke":
        return Path(tempfile.mkdtemp(prefix="convnorm-smoke-"))
    base = directory or os.environ.get(RESULTS_ENV) or (_REPO_RESULTS if _REPO_RESULTS.is_dir() else "results")
    path = Path(base) / preset
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_and_load(experiment: str, preset: str, seeds: Sequence[int], output: str | Path,
                 data_dir: str | None = None) -> list[Run]:
    """Run ``experiment`` at ``preset`` once per seed through the harness and load the files.

    A seed whose result file is already in ``output`` is not run again (except at
    ``smoke``), and an unfinished one resumes from its checkpoints, so re-running a
    chapter after a disconnect continues where it stopped. Progress bars are shown
    except at ``smoke``. The data loader downloads CIFAR-10 only where
    ``CONVNORM_DOWNLOAD=1`` (set by the book's Colab setup cell).
    """
    from .experiments import result_path, run_experiment

    for seed in seeds:
        if preset != "smoke" and result_path(experiment, preset, seed, output).exists():
            continue
        run_experiment(experiment, preset, data_dir, output, seed, resume=True, progress=preset != "smoke")
    return load_runs(experiment, preset, output)


@dataclass(frozen=True)
class ChapterSettings:
    """What an experiment chapter runs live and what it draws: the preset, the seeds, where
    live runs write, the stored presets shown, the paper's reference values, and the data
    location (``$CONVNORM_DATA_DIR``)."""

    preset: str
    seeds: tuple[int, ...]
    output: Path
    stored: tuple[str, ...]
    reference: dict
    data_dir: str | None

    def run_live(self, experiment: str) -> list[Run]:
        """Run ``experiment`` at this preset for every seed (resuming) and load the files."""
        return run_and_load(experiment, self.preset, self.seeds, self.output, self.data_dir)


def chapter_settings(cuda_available: bool) -> ChapterSettings:
    """The settings every experiment chapter starts with: :func:`choose_preset`, one seed
    at ``smoke`` and three otherwise (the paper reports spread over 3-4 seeds), the stored
    ``cpu`` and ``paper`` results beside the live run."""
    preset = choose_preset(cuda_available)
    return ChapterSettings(
        preset=preset,
        seeds=(0,) if preset == "smoke" else (0, 1, 2),
        output=live_output(preset),
        stored=("cpu", "paper"),
        reference=load_reference(),
        data_dir=os.environ.get("CONVNORM_DATA_DIR"),
    )
