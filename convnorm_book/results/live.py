"""Training a chapter's experiments yourself: an explicit opt-in, a time estimate first,
output that survives a restart, and resuming where an interrupted run stopped.

The chapters read the stored records and train nothing. A reader who opts in calls
:func:`train`, which first prints :func:`estimate` (the time the same runs took where
they were recorded, per kind of device), then runs each experiment and seed whose
result file is not in the output folder yet, with ``resume=True`` so that an
interrupted training continues from its checkpoints. The output folder
(:func:`live_folder`) is ``$CONVNORM_LIVE_DIR``, else Google Drive when it is mounted in
Colab (so the runs outlive the runtime), else ``~/convnorm-results``.
"""
from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from convnorm.experiments import EXPERIMENTS, get_preset, result_path, run_experiment

from .records import Records, load_run_records, load_runs, results_dir
from .tables import Table

LIVE_ENV = "CONVNORM_LIVE_DIR"
DRIVE = Path("/content/drive/MyDrive")


def default_preset(cuda_available: bool) -> str:
    """The preset a reader trains unless they choose one: the GPU protocol
    (``short-schedule``) on a CUDA machine, the reduced ``cpu`` one elsewhere; never the
    paper's full schedule, which takes days on a small GPU."""
    return "short-schedule" if cuda_available else "cpu"


def device_kind(name: str) -> str:
    """``"cpu"`` for any recorded CPU (``"cpu (x86_64, 2 threads)"``), else the GPU's name."""
    return "cpu" if name.startswith("cpu") else name


def current_device() -> str:
    """The kind of device a training started here would run on."""
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


def live_folder(environ: Mapping[str, str] | None = None, drive: Path = DRIVE) -> tuple[Path, str]:
    """Where a reader's runs go, and a sentence saying whether they outlive the session.

    ``$CONVNORM_LIVE_DIR`` if set; else, when Google Drive is mounted at ``drive``, a
    folder on it; else ``~/convnorm-results`` (on Colab that disk is wiped when the
    runtime is deleted, so the sentence says how to mount Drive).
    """
    environ = os.environ if environ is None else environ
    if environ.get(LIVE_ENV):
        return Path(environ[LIVE_ENV]), f"in {environ[LIVE_ENV]} (${LIVE_ENV})"
    if drive.is_dir():
        return drive / "convnorm-results", "on your Google Drive: it survives a restart of the runtime"
    folder = Path.home() / "convnorm-results"
    if "google.colab" in sys.modules:
        return folder, ("on the Colab runtime's disk, which is wiped when the runtime is deleted: run "
                        "`from google.colab import drive; drive.mount('/content/drive')` first to keep the runs "
                        "on your Google Drive")
    return folder, f"in {folder}"


def recorded_minutes(experiment: str, preset: str, root: str | Path | None = None) -> dict[str, list[float]]:
    """Minutes each stored seed of ``experiment`` at ``preset`` took, per kind of device.

    A seed's time is the larger of its result file's wall time and the summed wall
    times of the run records it trained (a result file assembled from run records
    trained apart records almost no time itself; one trained in a single call also
    counts its run records' time)."""
    runs_time: dict[tuple[int, str], float] = defaultdict(float)
    for record in load_run_records(preset, root):
        prov = record.provenance
        if prov.get("experiment") == experiment:
            runs_time[(int(prov["seed"]), device_kind(prov["device"]))] += prov["wall_time_s"]
    seconds = dict(runs_time)
    for run in load_runs(experiment, preset, root):
        key = (run.seed, device_kind(run.device))
        seconds[key] = max(seconds.get(key, 0.0), run.provenance["wall_time_s"])
    minutes: dict[str, list[float]] = defaultdict(list)
    for (_, kind), value in sorted(seconds.items()):
        minutes[kind].append(value / 60)
    return dict(minutes)


@dataclass(frozen=True)
class Estimate:
    """Per experiment: the seeds still to train and a sentence on the recorded time;
    ``minutes``: the expected total on the device, ``None`` when no record was made on
    that kind of device."""

    device: str
    preset: str
    lines: tuple[str, ...]
    minutes: float | None

    def __str__(self) -> str:
        total = ("no estimate: some of these runs were never recorded on this kind of device"
                 if self.minutes is None else f"about {self.minutes:.0f} min in all")
        head = f"Training at preset {self.preset!r} on {self.device}: {total}."
        return "\n".join([head] + [f"  {line}" for line in self.lines])


def _todo(experiment: str, preset: str, seeds: Sequence[int] | None, folder: Path) -> list[int]:
    chosen = range(EXPERIMENTS[experiment].seeds) if seeds is None else seeds
    return [s for s in chosen if not result_path(experiment, preset, s, folder / preset).exists()]


def estimate(experiments: Sequence[str], preset: str | None = None, seeds: Sequence[int] | None = None,
             folder: str | Path | None = None, device: str | None = None, root: str | Path | None = None) -> Estimate:
    """How long :func:`train` would take: for each experiment, the seeds not yet in
    ``folder`` times the mean time per seed recorded on the same kind of device (the
    stored records under ``root``, by default the book's results folder); where none
    was recorded on it, the times recorded on other devices, named."""
    import torch

    preset = preset or default_preset(torch.cuda.is_available())
    get_preset(preset)
    device = device_kind(device or current_device())
    folder = Path(folder) if folder is not None else live_folder()[0]
    root = root if root is not None else _stored_root()
    lines, total = [], 0.0
    for experiment in experiments:
        todo = _todo(experiment, preset, seeds, folder)
        recorded = {} if root is None else recorded_minutes(experiment, preset, root)
        if not todo:
            lines.append(f"{experiment}: every seed is already in {folder / preset}")
        elif device in recorded:
            per_seed = sum(recorded[device]) / len(recorded[device])
            lines.append(f"{experiment}: {len(todo)} seed(s) x {per_seed:.1f} min (recorded on {device})")
            total = None if total is None else total + len(todo) * per_seed
        else:
            elsewhere = "; ".join(f"{sum(m) / len(m):.1f} min per seed on {kind}" for kind, m in recorded.items())
            lines.append(f"{experiment}: {len(todo)} seed(s); no record from {device} at this preset"
                         + (f" (recorded: {elsewhere})" if elsewhere else ", nor from any other device"))
            total = None
    return Estimate(device, preset, tuple(lines), total)


def train(experiments: Sequence[str], preset: str | None = None, seeds: Sequence[int] | None = None,
          folder: str | Path | None = None, data_dir: str | None = None) -> dict[str, Records]:
    """Print :func:`estimate`, then run each experiment's missing seeds (the
    experiment's own seed count unless ``seeds`` is given) into ``<folder>/<preset>``,
    resuming interrupted trainings; return the reader's records per experiment. The data
    is downloaded where ``CONVNORM_DOWNLOAD=1`` (the Colab setup cell sets it)."""
    import torch

    preset = preset or default_preset(torch.cuda.is_available())
    if folder is None:
        folder, where = live_folder()
    else:
        folder, where = Path(folder), f"in {folder}"
    print(estimate(experiments, preset, seeds, folder))
    print(f"Writing {where}.")
    download = os.environ.get("CONVNORM_DOWNLOAD") == "1"
    for experiment in experiments:
        for seed in _todo(experiment, preset, seeds, folder):
            run_experiment(experiment, preset, data_dir, folder / preset, seed, resume=True, download=download)
    return {e: Records(e, preset, tuple(load_runs(e, preset, folder))) for e in experiments}


def _stored_root() -> Path | None:
    """The stored records to estimate from (none when no results folder is found)."""
    try:
        return results_dir()
    except ValueError:
        return None


def recorded_table(presets: Sequence[str] = ("short-schedule", "cpu"), root: str | Path | None = None) -> Table:
    """Minutes per seed each experiment took where it was recorded, per preset and kind
    of device (:func:`recorded_minutes`)."""
    rows = []
    for experiment in EXPERIMENTS:
        for preset in presets:
            for kind, minutes in recorded_minutes(experiment, preset, root).items():
                rows.append([experiment, preset, kind, f"{sum(minutes) / len(minutes):.1f}", str(len(minutes))])
    return Table("Recorded training time", ["experiment", "preset", "device", "minutes per seed", "seeds"], rows)
