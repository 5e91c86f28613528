"""The records kept in ``results/archive/`` as the book shows them: the reduced-scale records
on the lossy JPEG copy set beside their re-make on the official images, which measures what
the copy costs. An archived folder holds one preset's files as ``results/<preset>/`` does
(result files, and ``runs/``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from convnorm_lab.experiments import EXPERIMENTS

from . import sizes
from .records import PILOT_PRESET, Records, load_result_files, lookup, pilot, results_dir
from .stats import Paired, paired_values, per_seed
from .tables import Table
from .words import group_name, method_label


def archived(folder: str, experiment: str, preset: str, root: str | Path | None = None) -> Records | None:
    """The records of ``experiment`` at ``preset`` kept in ``results/<folder>``, or ``None``."""
    files = load_result_files(experiment, preset, folder=results_dir(root) / folder)
    return Records(experiment, preset, tuple(files)) if files else None


@dataclass(frozen=True)
class CopyCost:
    """What the JPEG copy cost one method in one experiment and group at the reduced scale:
    the accuracy on the official images less the accuracy on the JPEG copy, paired by seed
    (the same network, seed and protocol on both), and the mean on each copy."""

    experiment: str
    group: str | None
    method: str
    official: float
    jpeg: float
    difference: Paired


def copy_costs(root: str | Path | None = None) -> list[CopyCost]:
    """Every experiment whose stored ``cpu`` records are on the official images and whose
    JPEG-copy records are kept (the pilot's, :func:`~.records.pilot`), per group and method, on the
    experiment's first accuracy measure: the paired difference official − JPEG over the
    seeds both hold. A network trained at another learning rate on the official images (the
    rule chose a smaller one for it) is left out: its difference would not be the copy's
    alone. Empty until the re-made records are stored."""
    found = []
    for experiment, declared in EXPERIMENTS.items():
        if not declared.schema.history:
            continue
        official = load_result_files(experiment, PILOT_PRESET, root)
        jpeg = pilot(experiment, root)
        if not official or jpeg is None:
            continue
        official = Records(experiment, PILOT_PRESET, tuple(official))
        if "JPEG" in official.data:
            continue
        seeds = sorted(set(official.seeds) & set(jpeg.seeds))
        pair = [Records(experiment, PILOT_PRESET, tuple(f for f in data.files if f.seed in seeds))
                for data in (official, jpeg)]
        schema, settings = pair[0].schema, pair[0].settings
        measure = next(m for m in schema.measures_at(settings) if m.percent and not m.analysis)
        for group in schema.group_keys(settings):
            for method in schema.method_keys(settings):
                rates = {lookup(file.results, schema.record_path(group, method))["lr"]
                         for data in pair for file in data.files}
                if len(rates) > 1:
                    continue
                path = schema.path(group, method, measure)
                values = [per_seed(data, path, 100.0, accuracy=True) for data in pair]
                difference = paired_values(*values, "official images", "JPEG copy")
                means = [sum(map(float, v)) / len(v) for v in values]
                found.append(CopyCost(experiment, group, method, means[0], means[1], difference))
    return found


def copy_cost_table(costs: Sequence[CopyCost]) -> Table:
    """:func:`copy_costs` as a table: per experiment, group and method, the mean accuracy on
    each copy and the difference with its 95 % interval."""
    rows = []
    for cost in costs:
        schema = EXPERIMENTS[cost.experiment].schema
        where = cost.experiment + (f", {group_name(schema, cost.group)}" if cost.group is not None and
                                   schema.group is not None else "")
        d = cost.difference
        places = sizes.places(d)
        interval = "—" if d.interval is None else f"{sizes.signed(d.interval[0], places)} to " \
                                                  f"{sizes.signed(d.interval[1], places)}"
        rows.append([where, method_label(cost.method), f"{cost.official:.1f}", f"{cost.jpeg:.1f}",
                     sizes.signed(d.mean, places), interval, d.failed_short or ""])
    return Table("What the JPEG copy costs at the reduced scale: the same networks and seeds on both copies",
                 ["experiment", "method", "official images (%)", "JPEG copy (%)", "difference", "95 % interval",
                  "failed to train"], rows,
                 ["Each experiment's first accuracy (the test accuracy at the best validation epoch; under label "
                  "noise, the maximum over the epochs; after adversarial training, the clean accuracy), mean over the "
                  "seeds both copies hold; the difference is official − JPEG, paired by seed. A network trained at "
                  "another learning rate on the two copies is left out."])
