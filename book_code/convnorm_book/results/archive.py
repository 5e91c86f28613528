"""The records kept in ``results/archive/`` as the book shows them: the ResNet18 trainings of
the first GPU windows (one seed of an earlier, shorter ``fast`` schedule, indicative and not
tested), and the reduced-scale records on the lossy JPEG copy set beside their re-make on
the official images, which measures what the copy costs.

An archived folder holds one preset's files as ``results/<preset>/`` does (result files,
and ``runs/``); a GPU window's folder also holds the window's logs (``window/``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from convnorm_lab.experiments import EXPERIMENTS
from convnorm_lab.experiments.catalog import DATA_SCARCITY, GENERALIZATION, LABEL_NOISE
from convnorm_lab.experiments.gpu_queue import BN_ACCURACY_FLOOR, CLEAN
from convnorm_lab.models.normalizations import BN, CONVNORM_BN

from . import sizes
from .paper_values import paper_mean, paper_value
from .records import PILOT_PRESET, Records, caveats, load_result_files, lookup, pilot, results_dir
from .stats import Paired, paired_values, per_seed
from .tables import Table
from .words import group_name, method_label

#: the folders of the archived GPU windows, the shortest schedule first
GPU_FOLDERS = ("archive/fast-10-epochs", "archive/fast-20-epochs")
#: the experiments the GPU windows trained, and each group's setting in words
GPU_EXPERIMENTS = {GENERALIZATION.name: "clean labels", LABEL_NOISE.name: "{} label noise",
                   DATA_SCARCITY.name: "{} of the training set"}


def archived(folder: str, experiment: str, preset: str, root: str | Path | None = None) -> Records | None:
    """The records of ``experiment`` at ``preset`` kept in ``results/<folder>``, or ``None``."""
    files = load_result_files(experiment, preset, folder=results_dir(root) / folder)
    return Records(experiment, preset, tuple(files)) if files else None


@dataclass(frozen=True)
class Window:
    """An archived GPU window: its records by experiment, and what its BN ResNet18 reached
    against the accuracy floor of its data copy (the reason the window stopped)."""

    folder: str
    records: dict[str, Records]
    bn_accuracy: float
    floor: float
    copy: str

    @property
    def epochs(self) -> int:
        return next(iter(self.records.values())).settings.epochs


def windows(root: str | Path | None = None) -> list[Window]:
    """The archived GPU windows (:data:`GPU_FOLDERS`) that hold records."""
    found = []
    for folder in GPU_FOLDERS:
        records = {e: r for e in GPU_EXPERIMENTS if (r := archived(folder, e, "fast", root)) is not None}
        if not records:
            continue
        bn = records[GENERALIZATION.name].files[0].results[CLEAN][BN]
        found.append(Window(folder, records, bn["summary"]["test_acc_at_best_val"],
                            BN_ACCURACY_FLOOR[bn["data"]["copy"]], bn["data"]["copy"]))
    return found


def gpu_table(found: Sequence[Window], paper_values: dict,
              experiments: Sequence[str] = tuple(GPU_EXPERIMENTS)) -> Table:
    """The archived GPU windows' comparisons of ConvNorm+BN with BN in ``experiments``, one
    row per window and setting, in a marked box: each network's test accuracy (the paper's
    metric: the maximum over the epochs under label noise), their difference, the BN
    network's training accuracy at the end (near the share of correct labels under noise:
    no memorizing), and the paper's values."""
    rows, notes = [], []
    for window in found:
        for experiment, data in window.records.items():
            if experiment not in experiments:
                continue
            notes += caveats(data)
            schema, settings = data.schema, data.settings
            measure = schema.measures_at(settings)[0]
            for group in schema.group_keys(settings):
                pair = [lookup(data.files[0].results, schema.record_path(group, m)) for m in (BN, CONVNORM_BN)]
                if None in pair:
                    continue
                ours = [lookup(r, measure.path) * 100 for r in pair]
                paper = [paper_mean(paper_value(paper_values, experiment, m, measure, group))
                         for m in (BN, CONVNORM_BN)]
                setting = GPU_EXPERIMENTS[experiment].format(group_name(schema, group).replace("%", " %"))
                rows.append([f"{window.epochs} epochs", setting, f"{ours[0]:.1f}", f"{ours[1]:.1f}",
                             sizes.signed(ours[1] - ours[0], 1), f"{100 * pair[0]['summary']['final_train_acc']:.0f}",
                             f"{paper[0]:.2f}", f"{paper[1]:.2f}", sizes.signed(paper[1] - paper[0], 2)])
    return Table("ResNet18 on a GPU, one seed of an earlier, shorter schedule",
                 ["schedule", "setting", "BN (%)", "ConvNorm+BN (%)", "difference", "BN's final training accuracy (%)",
                  "paper: BN", "paper: ConvNorm+BN", "paper: difference"], rows,
                 ["One seed: no interval, no test. The trainings ran on the lossy JPEG copy of CIFAR-10 with the fast "
                  "recipe at the schedule named; the accuracy is the test accuracy at the best validation epoch (under "
                  "label noise, the maximum over the epochs, the paper's metric)."] + list(dict.fromkeys(notes)),
                 box="Indicative only: one seed, not tested")


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


def stopped(window: Window) -> str:
    """Why a window stopped, in words: its BN ResNet18 below the floor of its data copy."""
    copy = "lossy JPEG copy" if "jpeg" in window.copy else "official images"
    return (f"at {window.epochs} epochs the BN ResNet18 reached {100 * window.bn_accuracy:.1f} %, below the floor of "
            f"{100 * window.floor:.0f} % set for the {copy}")
