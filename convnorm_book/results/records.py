"""Finding the stored experiment records, reading them, and saying where they came from.

A results folder holds what ``python -m convnorm.experiments NAME --preset P --output
<folder>/P`` writes, and the paper's values::

    <folder>/paper_reference_values.json            the paper's numbers, table by table
    <folder>/<preset>/<experiment>-<preset>-seed<N>.json   one file per experiment and seed
    <folder>/<preset>/runs/<preset>-seed<N>/<run>.json     one file per training

Each file is ``{"provenance": ..., "results": ...}``; the shape of ``results`` is the
experiment's :class:`~convnorm.experiments.schema.ResultSchema`. The folder is found
from an argument, else ``$CONVNORM_RESULTS_DIR``, else a ``results/`` folder holding the
reference file in the current directory or one of its parents (a checkout of the book's
repository).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from convnorm.experiments import EXPERIMENTS, PRESETS, Preset
from convnorm.experiments.schema import ResultSchema

RESULTS_ENV = "CONVNORM_RESULTS_DIR"
#: the file of the paper's values, in every results folder (it marks one)
REFERENCE_FILE = "paper_reference_values.json"
#: the presets whose records the chapters show, the GPU protocol before the reduced one
SHOWN_PRESETS = ("short-schedule", "cpu")


def results_dir(directory: str | Path | None = None) -> Path:
    """The results folder: ``directory``, else ``$CONVNORM_RESULTS_DIR``, else the
    ``results/`` folder (holding the reference file) of the current directory or the
    nearest parent that has one.

    Raises:
        ValueError: if the folder given does not exist, or none is found.
    """
    chosen = directory if directory is not None else os.environ.get(RESULTS_ENV)
    if chosen is not None:
        path = Path(chosen)
        if not path.is_dir():
            source = "directory" if directory is not None else RESULTS_ENV
            raise ValueError(f"{source} names {str(path)!r}, which is not a folder")
        return path
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "results" / REFERENCE_FILE).is_file():
            return folder / "results"
    raise ValueError(f"no results folder found from {str(Path.cwd())!r} upwards: set {RESULTS_ENV} to the "
                     "results/ folder of the book's repository (or pass directory=)")


@dataclass(frozen=True)
class Run:
    """One stored file: where it is, its provenance block and its results."""

    path: Path
    provenance: dict
    results: dict

    @property
    def seed(self) -> int:
        return int(self.provenance["seed"])

    @property
    def device(self) -> str:
        return self.provenance["device"]


def lookup(data, path: Sequence[str | int]):
    """``data[path[0]][path[1]]...``: string keys index dicts, integer keys index lists;
    ``None`` where a key is absent."""
    for key in path:
        if isinstance(key, int) and isinstance(data, list):
            if not -len(data) <= key < len(data):
                return None
        elif not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _read(path: Path) -> Run:
    data = json.loads(path.read_text())
    return Run(path, data["provenance"], data["results"])


_SEED_FILE = re.compile(r"-seed(\d+)\.json$")


def load_runs(experiment: str, preset: str, root: str | Path | None = None) -> list[Run]:
    """Every seed's file of ``experiment`` at ``preset`` (under ``<root>/<preset>/``),
    sorted by seed; empty when none was stored.

    Raises:
        ValueError: for an unknown experiment or preset, or a file whose provenance
            names another experiment or preset.
    """
    _check_names(experiment, preset)
    folder = results_dir(root) / preset
    runs = []
    for path in sorted(folder.glob(f"{experiment}-{preset}-seed*.json")):
        if not _SEED_FILE.search(path.name):
            continue
        run = _read(path)
        named = (run.provenance.get("experiment"), run.provenance.get("preset"))
        if named != (experiment, preset):
            raise ValueError(f"{path.name}: provenance says {named[0]!r}/{named[1]!r}, "
                             f"expected {experiment!r}/{preset!r}")
        runs.append(run)
    return sorted(runs, key=lambda run: run.seed)


def load_run_records(preset: str, root: str | Path | None = None) -> list[Run]:
    """Every stored training of ``preset`` (``<root>/<preset>/runs/*/*.json``): one
    network each, with its history (and per-epoch times) and the device it ran on."""
    _check_names(None, preset)
    return [_read(path) for path in sorted((results_dir(root) / preset / "runs").glob("*/*.json"))]


def load_benchmarks(pattern: str, directory: str | Path | None = None) -> list[Run]:
    """The benchmark files matching ``pattern`` (e.g. ``"bench_layer_cuda_batch*.json"``)
    in ``directory`` (default: ``benchmarks/results`` beside the results folder), sorted
    by name; each holds ``{"provenance", "results"}`` like an experiment file."""
    folder = Path(directory) if directory is not None else results_dir().parent / "benchmarks" / "results"
    return [_read(path) for path in sorted(folder.glob(pattern))]


def _check_names(experiment: str | None, preset: str) -> None:
    if experiment is not None and experiment not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {experiment!r}")
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")


def preset_from_record(settings: dict, preset: str) -> Preset:
    """The :class:`~convnorm.experiments.presets.Preset` a record was made with, from its
    provenance's ``preset_settings`` (settings a record predates are taken from today's
    preset)."""
    today = PRESETS[preset].as_dict()
    values = {f.name: settings.get(f.name, today[f.name]) for f in fields(Preset)}
    return Preset(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


@dataclass(frozen=True)
class Records:
    """The stored files of one experiment at one preset, one per seed."""

    experiment: str
    preset: str
    runs: tuple[Run, ...]

    def __post_init__(self):
        if not self.runs:
            raise ValueError(f"no stored records of {self.experiment!r} at preset {self.preset!r}: run "
                             f"`python -m convnorm.experiments {self.experiment} --preset {self.preset}`")

    @property
    def schema(self) -> ResultSchema:
        return EXPERIMENTS[self.experiment].schema

    @property
    def settings(self) -> Preset:
        """The preset the records were made with."""
        return preset_from_record(self.runs[0].provenance.get("preset_settings", {}), self.preset)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(run.seed for run in self.runs)

    @property
    def devices(self) -> str:
        """The device(s) the runs executed on, from their provenance."""
        return "; ".join(dict.fromkeys(run.device for run in self.runs))

    @property
    def data(self) -> str:
        """Which copy of CIFAR the runs read, in a reader's words."""
        return data_copy(run.provenance.get("data") or "" for run in self.runs)


def stored(experiment: str, root: str | Path | None = None, presets: Sequence[str] = SHOWN_PRESETS) -> Records:
    """The records of ``experiment`` at the first of ``presets`` that has any (the GPU
    protocol when its records exist, else the reduced one).

    Raises:
        ValueError: if none of the presets has a stored record.
    """
    for preset in presets:
        runs = load_runs(experiment, preset, root)
        if runs:
            return Records(experiment, preset, tuple(runs))
    raise ValueError(f"no stored records of {experiment!r} at {', '.join(presets)}: run "
                     f"`python -m convnorm.experiments {experiment} --preset {presets[0]}` (see the appendix "
                     "'How the results were produced')")


def data_copy(descriptions) -> str:
    """``"the lossy JPEG copy of CIFAR"`` or ``"the official CIFAR files"`` (or both),
    from the data descriptions recorded in the provenance."""
    kinds = {"the lossy JPEG copy of CIFAR" if "JPEG" in text else "the official CIFAR files"
             for text in descriptions}
    return " and ".join(sorted(kinds)) or "an unrecorded copy of CIFAR"


def network(settings: Preset, experiment: str) -> str:
    """The network(s) of ``experiment`` at a preset, in a reader's words."""
    if experiment == "runtime":
        return "ResNet18" + ("" if settings.width is None else f" of width {settings.width}")
    if settings.arch is not None:
        layers = {"small": "a six-conv network", "resnet18": "ResNet18", "vgg16": "VGG16"}[settings.arch]
        return f"{layers} of width {settings.width}"
    if experiment == "convergence":
        return " and ".join({"vgg16": "VGG16", "resnet18": "ResNet18"}[a] for a in settings.convergence_archs)
    return "ResNet18"


def scale(settings: Preset, experiment: str) -> str:
    """What one run of ``experiment`` trains at a preset: network, data, schedule (and
    the attack budget), e.g. ``"ResNet18, 45,000 training images, 120 epochs"``."""
    net = network(settings, experiment)
    if experiment == "runtime":
        return f"{net}, batch {settings.batch_size}, {settings.runtime_steps} timed steps"
    images = f"{training_images(settings):,} training images"
    if experiment == "adversarial":
        tested = "10,000" if settings.attack_samples is None else f"{settings.attack_samples:,}"
        return (f"{net}, {images}, {_count(settings.adv_epochs, 'epoch')} of free adversarial training, "
                f"{tested} test images")
    epochs = _count(settings.epochs, "epoch")
    if experiment == "simba":
        iterations = "3,072" if settings.simba_iters is None else f"{settings.simba_iters:,}"
        return f"{net}, {images}, {epochs}; SimBA on {settings.simba_samples:,} images, {iterations} iterations"
    return f"{net}, {images}, {epochs}"


def training_images(settings: Preset) -> int:
    """How many training images a run at ``settings`` sees: the whole 45,000-image
    training split (CIFAR-10's 50,000 less the 5,000 held out for validation) unless the
    preset caps it."""
    return 45_000 if settings.max_train is None else settings.max_train


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def paper_scale(experiment: str) -> str:
    """The paper's protocol for ``experiment``, in the words of :func:`scale` (the
    length of free adversarial training, which the paper does not state, labelled as
    the authors' code's; for the run time, what the paper timed)."""
    paper = PRESETS["paper"]
    if experiment == "runtime":
        return "ResNet18, one training epoch of 45,000 images on the authors' GPU"
    if experiment == "adversarial":
        return (f"ResNet18, 45,000 training images, free adversarial training (length not stated; the authors' "
                f"code: {paper.adv_epochs} epochs), 10,000 test images")
    return scale(paper, experiment)


# ------------------------------------------------------------------ protocol changes
@dataclass(frozen=True)
class ProtocolChange:
    """A correction to what an experiment computes, made at ``commit`` and first in
    protocol ``version`` (:data:`convnorm.experiments.PROTOCOL_VERSION`): records from
    older code did ``before`` instead of ``now``."""

    commit: str
    version: int
    now: str
    before: str
    experiments: tuple[str, ...]


#: corrections to the experiments; a record made before one is reported with it
PROTOCOL_CHANGES = (
    ProtocolChange("b7cb8ca", 1, "ConvNorm layers that no BatchNorm follows keep their convolution's bias",
                   "ConvNorm layers with the affine kernel and no BatchNorm had no bias",
                   ("convergence", "generalization", "ablation", "simba", "label-noise", "data-scarcity",
                    "conditioning")),
    ProtocolChange("be8df28", 1, "the analysis takes the operator the trained network applies: the running "
                   "normalizer and the affine kernel included",
                   "the analysis took ConvNorm's normalized kernels P_k A_k, without the affine kernel, at the "
                   "normalizer of the final weights", ("conditioning",)),
)


def _git(repository: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", *args], cwd=repository, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None


def code_includes(commit: str, change: str, repository: Path) -> bool | None:
    """Whether code at ``commit`` contains the change made at ``change`` (git ancestry),
    or ``None`` where the repository's history cannot tell (no git, a shallow clone,
    an unknown commit)."""
    commit = commit.removesuffix("+dirty")
    if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        return None
    known = _git(repository, "cat-file", "-e", f"{commit}^{{commit}}")
    if known is None or known.returncode != 0:
        return None
    answer = _git(repository, "merge-base", "--is-ancestor", change, commit)
    return None if answer is None or answer.returncode not in (0, 1) else answer.returncode == 0


def run_includes(run: Run, change: ProtocolChange, repository: Path) -> bool | None:
    """Whether the code that made ``run`` contains ``change``: from the protocol version
    the record states, else (a record older than the versions) from the git ancestry of
    its commit; ``None`` where neither can tell."""
    version = run.provenance.get("protocol_version")
    if version is not None:
        return version >= change.version
    return code_includes(run.provenance.get("git_commit", ""), change.commit, repository)


def changes_missing(records: Records, repository: str | Path | None = None) -> list[ProtocolChange] | None:
    """The protocol changes of ``records``' experiment that the code of some of its runs
    predates; ``None`` where neither the records nor the repository's history can tell."""
    repository = Path(repository) if repository is not None else results_dir().parent
    missing = []
    for change in PROTOCOL_CHANGES:
        if records.experiment not in change.experiments:
            continue
        included = [run_includes(run, change, repository) for run in records.runs]
        if None in included:
            return None
        if not all(included):
            missing.append(change)
    return missing


def caveats(records: Records, repository: str | Path | None = None) -> list[str]:
    """What a reader must know before comparing ``records`` with the paper, as
    sentences: corrections to the protocol the records predate, an OCNN penalty weight
    other than today's, and a lossy copy of the data."""
    from convnorm.experiments.runners import OCNN_LAMBDA, OCNN_LAMBDA_ADVERSARIAL

    notes = []
    missing = changes_missing(records, repository)
    if missing is None:
        notes.append("Whether these records predate corrections to the protocol cannot be checked without the "
                     "repository's history (see the appendix 'How the results were produced').")
    else:
        notes += [f"These records were made before a correction: {c.before}; now {c.now}." for c in missing]
    schema, settings = records.schema, records.settings
    expected = OCNN_LAMBDA_ADVERSARIAL if records.experiment == "adversarial" else OCNN_LAMBDA
    group = schema.group_keys(settings)[0]
    for method in (m for m in schema.method_keys(settings) if m.startswith("ocnn")):
        used = {lookup(run.results, schema.record_path(group, method) + ("ocnn_lambda",)) for run in records.runs}
        if used - {expected, None}:
            notes.append(f"OCNN was trained with penalty weight λ = {', '.join(f'{u:g}' for u in sorted(used))}; "
                         f"the paper's value, which the protocol now uses, is {expected:g}.")
    if "JPEG" in records.data and schema.history:
        notes.append("The images are a lossy JPEG copy of CIFAR-10, not the official files: absolute accuracies "
                     "are not comparable with the paper's.")
    return notes
