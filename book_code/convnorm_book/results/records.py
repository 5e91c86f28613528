"""Finding the stored experiment records, reading them, and saying where they came from.

A results folder holds what ``python -m convnorm_lab.experiments NAME --preset P --output
<folder>/P`` writes, and the paper's values::

    <folder>/paper_reference_values.json            the paper's numbers, table by table
    <folder>/<preset>/<experiment>-<preset>-seed<N>.json   one file per experiment and seed
    <folder>/<preset>/runs/<preset>-seed<N>/<run>.json     one file per training

Each file is ``{"provenance": ..., "results": ...}``; the shape of ``results`` is the
experiment's :class:`~convnorm_lab.experiments.schema.ResultSchema`. The folder is found
from an argument, else ``$CONVNORM_RESULTS_DIR``, else a ``results/`` folder holding the
file of the paper's values in the current directory or one of its parents (a checkout of the book's
repository).

The loader trusts no file: whatever is wrong with one (not JSON, cut short, not a record,
a protocol version that is not a whole number, a seed in its name that its provenance
does not state) raises :class:`RecordError`, one line naming the file and the fault.

A training *failed to train* (the paper's "/") when its loss diverged (it is recorded as
``"diverged": true``, with no summary) or when its test accuracy never rose clearly above
chance (:func:`failure`). A failure is never averaged in silently nor dropped silently:
:func:`measured` enters an accuracy of a failed training as a :class:`FailedValue` (the
value it measured, at chance where it diverged), so that it counts against its method,
and leaves out every other number (:data:`FAILED`), and each count over seeds says how
many failed.
"""
from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from convnorm.layers import ConvNorm2d
from convnorm_lab.experiments import EXPERIMENTS, PRESETS, Preset, check_experiment, get_preset
from convnorm_lab.experiments.catalog import (
    ABLATION,
    ADVERSARIAL,
    CONDITIONING,
    CONVERGENCE,
    DATA_SCARCITY,
    GENERALIZATION,
    LABEL_NOISE,
    RUNTIME,
    SIMBA,
)
from convnorm_lab.experiments.catalog.simba import iterations as simba_iterations  # noqa: F401 (the chapters read it here)
from convnorm_lab.experiments.experiment import training_images
from convnorm_lab.experiments.gpu_queue import CALIBRATION_PATTERN
from convnorm_lab.experiments.learning_rate import FAILURE_MULTIPLE  # declared with the rule, which reads it too
from convnorm_lab.experiments.presets import training_steps
from convnorm_lab.experiments.schema import ResultSchema
from convnorm_lab.models.normalizations import Norm

RESULTS_ENV = "CONVNORM_RESULTS_DIR"
#: the file of the paper's values, in every results folder (it marks one)
PAPER_VALUES_FILE = "paper_reference_values.json"
#: the presets whose records the chapters show, the GPU protocol before the reduced one
SHOWN_PRESETS = ("fast", "short-schedule", "cpu")


def results_dir(directory: str | Path | None = None) -> Path:
    """The results folder: ``directory``, else ``$CONVNORM_RESULTS_DIR``, else the
    ``results/`` folder (holding the file of the paper's values) of the current directory or the
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
        if (folder / "results" / PAPER_VALUES_FILE).is_file():
            return folder / "results"
    raise ValueError(f"no results folder found from {str(Path.cwd())!r} upwards: set {RESULTS_ENV} to the "
                     "results/ folder of the book's repository (or pass directory=)")


class RecordError(ValueError):
    """A stored file that is not a record the book can read: one line naming the file
    and what is wrong with it."""


@dataclass(frozen=True)
class StoredFile:
    """One stored file (a seed's result file, a run record, a benchmark record): where it
    is, its provenance block and its results."""

    path: Path
    provenance: dict
    results: dict

    @property
    def seed(self) -> int:
        return self.provenance["seed"]

    @property
    def device(self) -> str:
        return self.provenance["device"]

    @property
    def protocol_version(self) -> int:
        """The protocol version the record states; 0 for a record that states none (made
        before the versions existed, so older than version 1)."""
        return self.provenance.get("protocol_version", 0)


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


class _Failed:
    """The value of a number that a failed training does not give (see :func:`measured`)."""

    def __repr__(self) -> str:
        return "FAILED"


#: what :func:`measured` returns for a number that a failed training does not give
FAILED = _Failed()


class FailedValue(float):
    """An accuracy of a training that failed to train, entered as measured (at chance,
    :math:`1/K`, where the training diverged and measured none): a number that arithmetic
    treats as any other, and that every count of failed trainings finds."""

    def __repr__(self) -> str:
        return f"FailedValue({float(self)!r})"


#: classes of each data set the records name in a group (every other is CIFAR-10)
CLASSES = {"cifar100": 100}


def classes(path: Sequence[str | int]) -> int:
    """The classes :math:`K` of the data set of a record at ``path`` (CIFAR-100 where the
    path names it as its group, else CIFAR-10)."""
    return next((CLASSES[key] for key in path if key in CLASSES), 10)


def is_training(record) -> bool:
    """Whether ``record`` is a training record (every one states whether it ``diverged``)."""
    return isinstance(record, dict) and "diverged" in record


def is_diverged(record) -> bool:
    """Whether ``record`` is a training record that says it diverged."""
    return isinstance(record, dict) and record.get("diverged") is True


def failure(record, k: int = 10) -> str | None:
    r"""Why a training record failed to train (the paper's "/"), or ``None`` where it
    trained: its loss diverged (``"diverged at epoch 3 (the loss is nan)"``), or its test
    accuracy never rose clearly above chance, :math:`\max_e a^{\mathrm{test}}_e <
    F_{\mathrm{fail}} / K` with :data:`FAILURE_MULTIPLE` :math:`F_{\mathrm{fail}} = 2`
    (``"never above twice chance (best test accuracy 15.4 %)"``)."""
    if is_diverged(record):
        epoch, reason = record.get("diverged_at_epoch"), record.get("reason") or record.get("error")
        return ("diverged" + (f" at epoch {epoch}" if epoch is not None else "")
                + (f" ({reason})" if reason else ""))
    accuracies = (record.get("history") or {}).get("test_acc") if is_training(record) else None
    if accuracies and max(accuracies) < FAILURE_MULTIPLE / k:
        return f"never above twice chance (best test accuracy {100 * max(accuracies):.1f} %)"
    return None


def measured(data, path: Sequence[str | int], accuracy: bool = False):
    """:func:`lookup`, except where ``path`` passes through a training that failed to
    train (:func:`failure`). There an ``accuracy`` enters as a :class:`FailedValue`: the
    value the training measured, or chance (:math:`1/K`) where it diverged and measured
    none, so that a failure counts against its method; any other number (a loss, an
    attack's queries, a condition number: a number about a network that trained) is
    :data:`FAILED`, left out and counted."""
    for depth in range(len(path) + 1):
        record = lookup(data, path[:depth])
        if is_training(record):
            k = classes(path)
            if failure(record, k) is None:
                break
            if not accuracy:
                return FAILED
            if is_diverged(record):
                return FailedValue(1 / k)
            value = lookup(data, path)
            return None if value is None else FailedValue(value)
    return lookup(data, path)


_SEED_IN_NAME = re.compile(r"-seed(\d+)(?:\.json)?$")


def _fault(data) -> str | None:
    """What keeps parsed JSON ``data`` from being a record, or ``None``."""
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not a record (an object with 'provenance' and 'results')"
    missing = [key for key in ("provenance", "results") if key not in data]
    if missing:
        return f"is not a record: it lacks {' and '.join(repr(k) for k in missing)}"
    provenance, results = data["provenance"], data["results"]
    if not isinstance(provenance, dict) or not isinstance(results, dict):
        return "is not a record: 'provenance' and 'results' must both be JSON objects"
    version = provenance.get("protocol_version")
    if "protocol_version" in provenance and (isinstance(version, bool) or not isinstance(version, int)
                                             or version < 0):
        return f"protocol_version must be a whole number, got {version!r} ({type(version).__name__})"
    seed = provenance.get("seed")
    if "seed" in provenance and (isinstance(seed, bool) or not isinstance(seed, int)):
        return f"the provenance's seed must be a whole number, got {seed!r}"
    return None


def read_record(path: str | Path, *, seed_from_name: bool = True) -> StoredFile:
    """The record stored at ``path``, checked: valid JSON, ``{"provenance", "results"}``
    objects, a whole-number protocol version where one is stated, and (with
    ``seed_from_name``) the seed that the file's name, or its folder's, carries
    (``…-seed<N>.json``, ``…-seed<N>/``) equal to the provenance's.

    Raises:
        RecordError: naming the file and what is wrong.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        ended = error.pos >= len(error.doc.rstrip()) or error.msg.startswith("Unterminated string")
        cut = " (the file is cut short)" if ended else ""
        raise RecordError(f"{path}: not valid JSON{cut}: {error.msg} at line {error.lineno}, column "
                          f"{error.colno}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise RecordError(f"{path}: cannot be read: {error}") from None
    fault = _fault(data)
    if fault is None and seed_from_name:
        named = next((m for m in map(_SEED_IN_NAME.search, (path.name, path.parent.name)) if m), None)
        stated = data["provenance"].get("seed")
        if named is not None and int(named.group(1)) != stated:
            fault = (f"its name says seed {int(named.group(1))} but its provenance says seed {stated!r}: "
                     "a copy of another seed's record?")
    if fault is not None:
        raise RecordError(f"{path}: {fault}")
    return StoredFile(path, data["provenance"], data["results"])


def load_result_files(experiment: str, preset: str, root: str | Path | None = None,
                      folder: str | Path | None = None) -> list[StoredFile]:
    """Every seed's file of ``experiment`` at ``preset`` (under ``<root>/<preset>/``, or
    ``folder`` where given: an archived set of records), sorted by seed; empty when none
    was stored.

    Raises:
        ValueError: for an unknown experiment or preset.
        RecordError: for a file that cannot be read as a record (:func:`read_record`),
            whose provenance names another experiment or preset or no seed, or that
            holds the same seed as another file.
    """
    _check_names(experiment, preset)
    folder = results_dir(root) / preset if folder is None else Path(folder)
    files = {}
    for path in sorted(folder.glob(f"{experiment}-{preset}-seed*.json")):
        if not re.fullmatch(rf"{re.escape(experiment)}-{re.escape(preset)}-seed\d+\.json", path.name):
            continue
        file = read_record(path)
        named = (file.provenance.get("experiment"), file.provenance.get("preset"))
        if named != (experiment, preset):
            raise RecordError(f"{path}: its provenance says {named[0]!r}/{named[1]!r}, "
                              f"expected {experiment!r}/{preset!r}")
        if "seed" not in file.provenance:
            raise RecordError(f"{path}: its provenance states no seed")
        if file.seed in files:
            raise RecordError(f"{path}: seed {file.seed} is already stored in {files[file.seed].path.name}")
        files[file.seed] = file
    return [files[seed] for seed in sorted(files)]


#: the pilot: the reduced-scale records made on the lossy JPEG copy before any record of the GPU
#: protocol, kept in this folder of the results folder
PILOT_FOLDER, PILOT_PRESET = "archive/cpu-jpeg-q75", "cpu"


def pilot(experiment: str, root: str | Path | None = None) -> Records | None:
    """The pilot's records of ``experiment`` (:data:`PILOT_FOLDER`), or ``None`` where it has none."""
    files = load_result_files(experiment, PILOT_PRESET, folder=results_dir(root) / PILOT_FOLDER)
    return Records(experiment, PILOT_PRESET, tuple(files)) if files else None


def load_run_records(preset: str, root: str | Path | None = None) -> list[StoredFile]:
    """Every stored training of ``preset`` (``<root>/<preset>/runs/*/*.json``): one
    network each, with its history (and per-epoch times) and the device it ran on.

    Raises:
        RecordError: for a file that cannot be read as a record (:func:`read_record`).
    """
    _check_names(None, preset)
    return [read_record(path) for path in sorted((results_dir(root) / preset / "runs").glob("*/*.json"))]


def seed_seconds(preset: str, root: str | Path | None = None) -> dict[tuple[str, int, str], float]:
    """Seconds each stored seed took at ``preset``, per ``(experiment, seed, device)``,
    reading the preset's files once.

    A seed's time is the larger of its result file's wall time and the summed wall times
    of the run records it names (by their keys): a result file assembled from run records
    trained apart (by a GPU window, or a resumed call) records almost no time itself, and
    one trained in a single call also counts its run records' time. A training two
    experiments share counts in each; a stored training no result file names (one made
    under another setting of the protocol) counts in none."""
    times = {record.results.get("run_key"): record.provenance["wall_time_s"]
             for record in load_run_records(preset, root)}
    seconds: dict[tuple[str, int, str], float] = {}
    for experiment in EXPERIMENTS:
        for file in load_result_files(experiment, preset, root):
            trained = sum(times.get(key, 0.0) for key in run_keys(file.results))
            seconds[experiment, file.seed, file.device] = max(trained, file.provenance["wall_time_s"])
    return seconds


def run_keys(results) -> set[str]:
    """The run keys a result file's results name (every ``"run_key"`` in them): the trainings
    it was assembled from."""
    if isinstance(results, dict):
        own = {results["run_key"]} if isinstance(results.get("run_key"), str) else set()
        return own.union(*(run_keys(value) for value in results.values()))
    if isinstance(results, list):
        return set().union(*(run_keys(value) for value in results))
    return set()


def load_benchmarks(pattern: str, directory: str | Path | None = None) -> list[StoredFile]:
    """The benchmark files matching ``pattern`` (e.g. ``"bench_layer_cuda_batch*.json"``)
    in ``directory`` (default: ``benchmarks/results`` beside the results folder), sorted
    by name; each holds ``{"provenance", "results"}`` like an experiment file.

    Raises:
        RecordError: for a file that cannot be read as a record (:func:`read_record`).
    """
    folder = Path(directory) if directory is not None else results_dir().parent / "benchmarks" / "results"
    return [read_record(path, seed_from_name=False) for path in sorted(folder.glob(pattern))]


def calibration(directory: str | Path | None = None) -> StoredFile | None:
    """The newest calibration record (:data:`~convnorm_lab.experiments.gpu_queue.CALIBRATION_PATTERN`, in ``directory``,
    default ``benchmarks/results``) that timed the run-time networks (its ``"time"`` holds
    at least one mode), by the time it finished (``finished_utc``), else by name; ``None``
    when there is none.

    Raises:
        RecordError: for a file that cannot be read as a record (:func:`read_record`).
    """
    timed = [file for file in load_benchmarks(CALIBRATION_PATTERN, directory)
             if isinstance(file.results.get("time"), dict) and any(file.results["time"].values())]
    if not timed:
        return None
    return max(timed, key=lambda file: (str(file.provenance.get("finished_utc", "")), file.path.name))


def _check_names(experiment: str | None, preset: str) -> None:
    if experiment is not None:
        check_experiment(experiment)
    get_preset(preset)


def preset_from_record(settings: dict, preset: str) -> Preset:
    """The :class:`~convnorm_lab.experiments.presets.Preset` a record was made with, from its
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
    files: tuple[StoredFile, ...]

    def __post_init__(self):
        if not self.files:
            raise ValueError(f"no stored records of {self.experiment!r} at preset {self.preset!r}: run "
                             f"`python -m convnorm_lab.experiments {self.experiment} --preset {self.preset}`")

    @property
    def schema(self) -> ResultSchema:
        return EXPERIMENTS[self.experiment].schema

    @property
    def settings(self) -> Preset:
        """The preset the records were made with."""
        return preset_from_record(self.files[0].provenance.get("preset_settings", {}), self.preset)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(file.seed for file in self.files)

    @property
    def devices(self) -> str:
        """The device(s) the seeds ran on, from their provenance."""
        return "; ".join(dict.fromkeys(file.device for file in self.files))

    @property
    def data(self) -> str:
        """Which copy of CIFAR the seeds read, in a reader's words."""
        return data_copy(file.provenance.get("data") or "" for file in self.files)

    @property
    def networks_in_words(self) -> str:
        """The network(s) the records' preset trains, in a reader's words (the experiment's declaration's)."""
        return EXPERIMENTS[self.experiment].networks_in_words(self.settings)

    def trainings(self):
        """Every training record, as ``(file, group, method, record)`` for each seed's file,
        group and method of the records' preset (``record`` is ``None`` where absent)."""
        schema, settings = self.schema, self.settings
        for file in self.files:
            for group in schema.group_keys(settings):
                for method in schema.method_keys(settings):
                    yield file, group, method, lookup(file.results, schema.record_path(group, method))

    def failed(self) -> list[FailedRun]:
        """Every training of these records that failed to train (:func:`failure`), in seed order."""
        return [FailedRun(file.seed, group, method, why)
                for file, group, method, record in self.trainings()
                if record is not None and (why := failure(record, classes((group,)))) is not None]


@dataclass(frozen=True)
class FailedRun:
    """A training that failed to train: its seed, group (``None`` where the experiment has
    none), method, and why (:func:`failure`)."""

    seed: int
    group: str | None
    method: str
    why: str


def failed_count(failed: int, seeds: int) -> str:
    """``"1 of 3 seeds failed to train"`` (empty when none did): the count shown beside
    every number over seeds that a failed training enters or is left out of."""
    if not failed:
        return ""
    if failed == seeds:
        return f"all {seeds} seeds failed to train" if seeds > 1 else "the one seed failed to train"
    return f"{failed} of {seeds} seed{'s' if seeds > 1 else ''} failed to train"


#: the fewest seeds whose records are shown as a study: a spread over seeds needs two
MIN_SEEDS_SHOWN = 2


def is_complete(file: StoredFile) -> bool:
    """Whether a seed's result file holds every training its preset plans (no ``runs_missing``)."""
    return not file.provenance.get("runs_missing")


def stored(experiment: str, root: str | Path | None = None, presets: Sequence[str] = SHOWN_PRESETS) -> Records:
    """The complete records of ``experiment`` at the first of ``presets`` that has at least
    :data:`MIN_SEEDS_SHOWN` of them (the GPU protocol once two of its seeds are recorded),
    else at the last of ``presets`` (the reduced scale), however many it has. A seed whose
    record still misses trainings is left out: a window cut short stores part of a seed,
    and a comparison pairs the methods of a seed.

    Raises:
        ValueError: if no complete record is stored at the last of the presets, nor
            :data:`MIN_SEEDS_SHOWN` at another.
    """
    for i, preset in enumerate(presets):
        files = [file for file in load_result_files(experiment, preset, root) if is_complete(file)]
        if len(files) >= MIN_SEEDS_SHOWN or (files and i == len(presets) - 1):
            return Records(experiment, preset, tuple(files))
    raise ValueError(f"no complete records of {experiment!r} stored at {', '.join(presets)}: run "
                     f"`python -m convnorm_lab.experiments {experiment} --preset {presets[-1]}` (see the appendix "
                     "'How the results were produced')")


#: the settings that define what a run-time record timed
_TIMED = ("arch", "width", "batch_size", "runtime_steps")


def runtime_records(root: str | Path | None = None) -> dict[str, Records]:
    """The run-time records of each preset that has one (the GPU protocols, the paper's,
    the reduced scale), leaving out the paper preset's where it timed what the GPU
    protocol's did (the same network, width, batch and number of steps)."""
    found = {preset: Records(RUNTIME.name, preset, tuple(files))
             for preset in ("fast", "short-schedule", "paper", "cpu")
             if (files := load_result_files(RUNTIME.name, preset, root))}
    if {"short-schedule", "paper"} <= set(found) and all(
            getattr(found["short-schedule"].settings, k) == getattr(found["paper"].settings, k) for k in _TIMED):
        del found["paper"]
    return found


def data_copy(descriptions) -> str:
    """``"the lossy JPEG copy of CIFAR"``, ``"the official CIFAR images"`` (the official
    archive or its lossless copy: the same pixels), or both, from the data descriptions
    recorded in the provenance."""
    kinds = {"the lossy JPEG copy of CIFAR" if "JPEG" in text else "the official CIFAR images"
             for text in descriptions}
    return " and ".join(sorted(kinds)) or "an unrecorded copy of CIFAR"


def scale(settings: Preset, experiment: str) -> str:
    """What one run of ``experiment`` trains at a preset (its declaration's words), e.g.
    ``"ResNet18, 45,000 training images, 120 epochs"``."""
    return EXPERIMENTS[experiment].scale(settings)


def paper_scale(experiment: str) -> str:
    """The paper's protocol for ``experiment``, in the words of :func:`scale`."""
    return EXPERIMENTS[experiment].paper_scale()


# ------------------------------------------------------------------ protocol changes
@dataclass(frozen=True)
class ProtocolChange:
    """A correction to what the experiments compute, first made at protocol ``version``
    (:data:`convnorm_lab.experiments.PROTOCOL_VERSION`): records of an older version (a record
    that states no version is older than version 1) did ``before`` instead of ``now``."""

    version: int
    now: str
    before: str
    experiments: tuple[str, ...]


#: the experiments that train networks (every one but the run-time measurement)
_TRAINED = tuple(name for name, experiment in EXPERIMENTS.items() if experiment.schema.history)
#: the experiments that train ConvNorm without a BatchNorm after it (all that train but the adversarial study)
_CONVNORM_ALONE = tuple(e.name for e in (CONVERGENCE, GENERALIZATION, ABLATION, SIMBA, LABEL_NOISE, DATA_SCARCITY,
                                         CONDITIONING))


def _ramp_change() -> ProtocolChange:
    """Version 2. The paper's running normalizer ramps over 40,000 steps (the layer's
    default) of a 120-epoch training of 352 steps an epoch: the same fraction of the
    training is now kept at every schedule. The numbers are read from the layer and the
    paper's preset."""
    paper = PRESETS["paper"]
    ramp = inspect.signature(ConvNorm2d).parameters["ramp_steps"].default
    steps = training_steps(paper, training_images(paper))
    return ProtocolChange(
        2, f"a run that diverges is recorded as diverged, with the epoch and the reason, and left out of every "
           f"number; ConvNorm's running normalizer ramps over the same fraction of the training as the paper's "
           f"{ramp:,} of {steps:,} steps; every run record states the settings that define its training, its data "
           "included (label-noise rate, training fraction, split sizes)",
        f"a run that diverged was summarised from the history it had recorded before diverging; the running "
        f"normalizer ramped over a fixed {ramp:,} steps, which a shorter schedule never completes; run records "
        "named their data settings only through a hash", _TRAINED)


#: corrections to the experiments; a record made before one is reported with it
PROTOCOL_CHANGES = (
    ProtocolChange(1, "ConvNorm layers that no BatchNorm follows keep their convolution's bias",
                   "ConvNorm layers with the affine kernel and no BatchNorm had no bias", _CONVNORM_ALONE),
    ProtocolChange(1, "the analysis takes the operator the trained network applies: the running "
                   "normalizer and the affine kernel included",
                   "the analysis took ConvNorm's normalized kernels P_k A_k, without the affine kernel, at the "
                   "normalizer of the final weights", (CONDITIONING.name,)),
    _ramp_change(),
    ProtocolChange(3, "at a shortened schedule every data-scarcity subset trains long enough to be trained: for as "
                      "many steps as the full training set, or (the GPU protocol) for as many passes over its images "
                      "as the paper's, up to that",
                   "each subset trained for the same epochs as the full set, so a 10 % subset took a tenth of the "
                   "steps and stayed far from trained", (DATA_SCARCITY.name,)),
)


def changes_missing(records: Records) -> list[ProtocolChange]:
    """The protocol changes of ``records``' experiment that some of its seeds predate,
    read from the protocol version each record states (no git history needed)."""
    oldest = min(file.protocol_version for file in records.files)
    return [change for change in PROTOCOL_CHANGES
            if records.experiment in change.experiments and oldest < change.version]


def caveats(records: Records) -> list[str]:
    """What a reader must know before comparing ``records`` with the paper, as
    sentences: corrections to the protocol the records predate, a penalty weight other
    than its declaration's (OCNN's), and the copy of the data (:func:`copy_note`)."""
    notes = [f"In these records {c.before}; in the current experiments {c.now}."
             for c in changes_missing(records)]
    schema, settings = records.schema, records.settings
    group = schema.group_keys(settings)[0]
    for method in schema.method_keys(settings):
        penalty = Norm(method).base.penalty if method not in schema.labels else None
        if penalty is None:
            continue
        expected = penalty.weight_for(adversarial=records.experiment == ADVERSARIAL.name)
        used = {lookup(file.results, schema.record_path(group, method) + ("ocnn_lambda",)) for file in records.files}
        if used - {expected, None}:
            notes.append(f"{Norm(method).base.label} was trained with penalty weight λ = "
                         f"{', '.join(f'{u:g}' for u in sorted(used))}; the paper's value, which the protocol now "
                         f"uses, is {expected:g}.")
    if schema.history:
        notes.append(copy_note(records, with_scale=False))  # a table's notes name both scales already
    return notes


def copy_note(records: Records, with_scale: bool = True) -> str:
    """What the copy of CIFAR the records read means for setting them beside the paper:
    on the lossy JPEG copy, absolute accuracies are not comparable with the paper's; on
    the official images, the image files are the paper's, and what differs is the scale,
    named unless ``with_scale`` is false (for a sentence that has just named it)."""
    if "JPEG" in records.data:
        return ("The images are a lossy JPEG copy of CIFAR-10, not the official files: absolute accuracies are not "
                "comparable with the paper's (the appendix 'How the results were produced' measures what the copy "
                "costs at the reduced scale); differences between methods trained on the same images are.")
    note = f"Trained on {records.data}, the same image files as the paper's"
    if not with_scale:
        return note + "; what differs is the scale, so accuracies are not the paper's."
    return (f"{note}; what differs is the scale: ours {scale(records.settings, records.experiment)}, "
            f"the paper's {paper_scale(records.experiment)}.")
