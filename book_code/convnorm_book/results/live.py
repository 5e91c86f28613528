"""Training a chapter's experiments yourself: an explicit opt-in, a measured estimate
first, a budget you see and can change, and output that survives a restart.

The chapters read the stored records and train nothing. A reader who opts in calls
:func:`train` with the chapter's runs (:data:`CHAPTER_RUNS`: fewer seeds and networks
than the stored records), within a budget of minutes the reader sets
(:data:`DEFAULT_BUDGET_MINUTES` unless changed). It first times :data:`PRICING_STEPS` training
steps of each network on the reader's own device
(:func:`convnorm_lab.experiments.step_timing.time_steps`) and prints what each run will take,
then trains, in order, the comparisons that fit in the budget whole (the networks of a
comparison, one seed of each, are trained together or not at all, since a comparison pairs
them), saying which it leaves out. On a GPU the runs follow the fast protocol (preset
``fast``: mixed precision, float16 with loss scaling on a T4); without one, the reduced
``cpu`` preset. Run records and result files go to :func:`live_folder` (Google Drive when
it is mounted in Colab, so they outlive the runtime); checkpoints stay on the runtime's
local disk and are deleted when their run completes, and an interrupted run resumes from
its checkpoint.
"""
from __future__ import annotations

import os
import sys
import tempfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from convnorm_lab.experiments import EXPERIMENTS, get_preset, gpu_queue, run_experiment, step_timing
from convnorm_lab.experiments.catalog import CONDITIONING, GENERALIZATION, LABEL_NOISE
from convnorm_lab.experiments.experiment import networks_in_words
from convnorm_lab.experiments.gpu_queue import CLEAN, NOISE, Request
from convnorm_lab.models.normalizations import BN, CONVNORM, CONVNORM_BN, NONE

from .records import SHOWN_PRESETS, Records, load_result_files, lookup, seed_seconds, stored
from .tables import Table, experiment_table
from .words import device_name

LIVE_ENV = "CONVNORM_LIVE_DIR"
DRIVE = Path("/content/drive/MyDrive")
#: what ``TRAIN = True`` trains in each Part IV chapter (by its file's name without the
#: number): one seed of BN against ConvNorm+BN, or of the vanilla network against ConvNorm
#: (the comparisons the stored records make over more seeds and networks)
CHAPTER_RUNS: dict[str, tuple[Request, ...]] = {
    "training-and-generalization": (Request.of(GENERALIZATION, (0,), CLEAN, (BN, CONVNORM_BN)),),
    "robustness": (Request.of(LABEL_NOISE, (0,), NOISE, (BN, CONVNORM_BN)),),
    "conditioning-lipschitz-and-cost": (Request.of(CONDITIONING, (0,), None, (NONE, CONVNORM)),),
}
#: minutes a reader's default run may take
DEFAULT_BUDGET_MINUTES = 15
#: training steps of each network timed before a reader's runs are priced
PRICING_STEPS = 20


def default_preset(cuda_available: bool) -> str:
    """The preset a reader trains unless they choose one: the fast GPU protocol on a
    CUDA machine, the reduced ``cpu`` one elsewhere; never the paper's full schedule,
    which takes days on a small GPU."""
    return "fast" if cuda_available else "cpu"


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


def recorded_minutes(preset: str, root: str | Path | None = None) -> dict[str, dict[str, list[float]]]:
    """Minutes each stored seed took at ``preset`` (:func:`~.records.seed_seconds`), per
    experiment and kind of device, in seed order (a seed's devices of one kind count once,
    at the longest)."""
    by_kind: dict[tuple[str, str, int], float] = {}
    for (experiment, seed, device), value in seed_seconds(preset, root).items():
        key = (experiment, device_kind(device), seed)
        by_kind[key] = max(by_kind.get(key, 0.0), value)
    minutes: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (experiment, kind, _), value in sorted(by_kind.items()):
        minutes[experiment][kind].append(value / 60)
    return {experiment: dict(kinds) for experiment, kinds in minutes.items()}


def minutes_text(minutes: float) -> str:
    """``"about 1.5 min"``, ``"about 12 min"``: a duration in minutes, to a tenth below ten."""
    return f"about {minutes:.1f} min" if minutes < 10 else f"about {minutes:.0f} min"


@dataclass(frozen=True)
class Quote:
    """The runs a reader asked for, each with its measured estimate (minutes), those that
    fit in the budget (whole comparisons, in order) and those left out."""

    device: str
    preset: str
    budget_minutes: float
    estimates: tuple[tuple[gpu_queue.Job, float], ...]
    chosen: tuple[gpu_queue.Job, ...]
    steps: int
    """Training steps of each network timed for the estimates."""

    def __str__(self) -> str:
        lines = [f"On {self.device}, preset {self.preset!r} (measured just now: {self.steps} training steps of each "
                 "network):"]
        for job, minutes in self.estimates:
            mark = "" if job in self.chosen else "   (left out: its comparison does not fit the budget)"
            lines.append(f"  {job.experiment} seed {job.seed}, {job.run}: {minutes_text(minutes)}{mark}")
        total = sum(minutes for job, minutes in self.estimates if job in self.chosen)
        left_out = len(self.estimates) - len(self.chosen)
        if not self.chosen:
            lines.append(f"Nothing trained: no comparison fits a budget of {self.budget_minutes:g} min (raise "
                         "BUDGET_MINUTES to train one).")
        else:
            lines.append(f"Training {len(self.chosen)} of {len(self.estimates)} runs, {minutes_text(total)}, within a "
                         f"budget of {self.budget_minutes:g} min" + (" (raise it to train the rest)." if left_out
                                                                      else "."))
        return "\n".join(lines)


def quote(requests: Sequence[Request], budget_minutes: float = DEFAULT_BUDGET_MINUTES, preset: str | None = None,
          folder: str | Path | None = None, data_dir: str | None = None, device=None,
          steps: int = PRICING_STEPS) -> Quote:
    """Measure ``steps`` training steps of each network the runs need on ``device``
    (default: CUDA if available, else the CPU) and price every run not yet in
    ``folder``; choose, in order, the runs whose estimates fit in ``budget_minutes``."""
    import torch

    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    preset = preset or default_preset(device.type == "cuda")
    get_preset(preset)
    folder = Path(folder) if folder is not None else live_folder()[0]
    jobs = gpu_queue.jobs((tuple(requests),), preset, folder / preset, data_dir)
    table = {}
    for arch, norm in dict.fromkeys((job.settings["arch"], job.settings["norm"]) for job in jobs):
        measured = step_timing.time_steps(preset, arch, norm, device, batches=steps)
        table[(arch, norm, measured["precision"])] = gpu_queue.StepTime(
            measured["train_s_per_image"], measured["forward_s_per_image"], measured["batch"], str(device), "now")
    precision = next(iter(table))[2] if table else "fp32"
    estimates = tuple((job, gpu_queue.estimate(job, gpu_queue.StepTimes(table), precision).seconds / 60)
                      for job in jobs)
    comparisons: dict[tuple, list] = defaultdict(list)  # the runs of one request and seed, trained together
    for job, minutes in estimates:
        comparisons[(job.experiment, job.seed)].append((job, minutes))
    chosen, spent = [], 0.0
    for runs in comparisons.values():
        cost = sum(minutes for _, minutes in runs)
        if spent + cost > budget_minutes:
            break
        chosen += [job for job, _ in runs]
        spent += cost
    return Quote(current_device(), preset, budget_minutes, estimates, tuple(chosen), steps)


def describe(requests: Sequence[Request], budget_minutes: float = DEFAULT_BUDGET_MINUTES,
             gpu_preset: str | None = None) -> str:
    """What :func:`train` would do with ``requests``, in words, without measuring or
    training anything (what a chapter prints while ``TRAIN`` is off); on a GPU at
    ``gpu_preset`` where given, else at :func:`default_preset`'s."""
    runs = "; ".join(f"{r.experiment}, seed{'s' if len(r.seeds) > 1 else ''} "
                     f"{', '.join(map(str, r.seeds))}: {', '.join(r.runs) if r.runs else 'every run'}"
                     for r in requests)
    name = gpu_preset or default_preset(True)
    gpu, cpu = get_preset(name), get_preset("cpu")
    network = "" if gpu.arch is None else f" of the {gpu.arch} network"
    return (f"TRAIN = True trains {runs}. On a GPU it follows the {name} preset ({gpu.epochs} epochs{network}, batch "
            f"{gpu.batch_size}, mixed precision); without one, the reduced cpu preset ({cpu.epochs} epochs of "
            f"{networks_in_words(cpu)} on {cpu.max_train:,} images). It first times {PRICING_STEPS} training steps "
            "of each network on your device, prints what each run will take, and trains the comparisons that fit "
            f"whole in a budget of {budget_minutes:g} minutes (BUDGET_MINUTES); your results are then shown beside "
            "the stored ones, each table labelled by whose it is.")


def checkpoint_folder() -> Path:
    """Where a reader's checkpoints go: the local disk of the machine (on Colab, the
    runtime's), never the results folder on Drive (a checkpoint is tens of megabytes)."""
    return Path(tempfile.gettempdir()) / "convnorm-checkpoints"


def train(requests: Sequence[Request], budget_minutes: float = DEFAULT_BUDGET_MINUTES, preset: str | None = None,
          folder: str | Path | None = None, data_dir: str | None = None) -> dict[str, Records]:
    """Print :func:`quote`, then train the chosen runs into ``<folder>/<preset>``
    (resuming an interrupted one from its checkpoint) and return the reader's records
    per experiment. The data is downloaded where ``CONVNORM_DOWNLOAD=1`` (the Colab
    setup cell sets it)."""
    import torch

    if folder is None:
        folder, where = live_folder()
    else:
        folder, where = Path(folder), f"in {folder}"
    chosen = quote(requests, budget_minutes, preset, folder, data_dir)
    print(chosen)
    print(f"Writing the run records {where}; checkpoints in {checkpoint_folder()}.")
    download = os.environ.get("CONVNORM_DOWNLOAD") == "1"
    for job in chosen.chosen:
        run_experiment(job.experiment, chosen.preset, data_dir, folder / chosen.preset, job.seed, resume=True,
                       download=download, only=[job.run], checkpoints=checkpoint_folder(),
                       cuda_graph=torch.cuda.is_available())
    experiments = dict.fromkeys(request.experiment for request in requests)
    return {e: Records(e, chosen.preset, tuple(files)) for e in experiments
            if (files := load_result_files(e, chosen.preset, folder))}


def side_by_side(yours: Mapping[str, Records], paper_values: dict) -> list[Table]:
    """Per experiment a reader trained: the reader's records and the stored ones, each
    table titled by whose it is ("trained just now" against "stored") and its numbers'
    columns labelled "yours" or "ours"."""
    tables = []
    for name, data in yours.items():
        tables.append(experiment_table(data, paper_values, methods=_trained(data), whose="yours",
                                       title=f"Trained just now, on your device: {EXPERIMENTS[name].title}"))
        tables.append(experiment_table(stored(name), paper_values,
                                       title=f"The stored records: {EXPERIMENTS[name].title}"))
    return tables


def _trained(data: Records) -> list[str]:
    """The methods of ``data`` that a seed's record holds (a reader trains a few)."""
    schema = data.schema
    return [m for m in schema.method_keys(data.settings)
            if any(lookup(file.results, schema.record_path(g, m)) is not None
                   for file in data.files for g in schema.group_keys(data.settings))]


def recorded_table(presets: Sequence[str] = SHOWN_PRESETS, root: str | Path | None = None) -> Table:
    """Minutes per seed each experiment took where it was recorded, per preset and kind
    of device (:func:`recorded_minutes`)."""
    rows = []
    recorded = {preset: recorded_minutes(preset, root) for preset in presets}
    for experiment in EXPERIMENTS:
        for preset in presets:
            for kind, minutes in recorded[preset].get(experiment, {}).items():
                rows.append([experiment, preset, device_name(kind), f"{sum(minutes) / len(minutes):.1f}",
                             str(len(minutes))])
    return Table("Recorded training time", ["experiment", "preset", "device", "minutes per seed", "seeds"], rows)
