"""The book code of Appendix A (``book/appendix/engineering-notes.ipynb``): the recorded run times
of a ResNet18 training step, one row per device and setting, and the one ratio measured as the paper
measured; the appendix reads the other records it
shows with :func:`~convnorm_book.results.records.load_benchmarks` and the paper's numbers with
:func:`~convnorm_book.results.paper_values.load_paper_values`.

Three kinds of benchmark record measure a CIFAR ResNet18 training step (forward,
cross-entropy, backward, SGD with momentum) of Conv2d+BN against ConvNorm2d+BN, timed side by
side in one process (eager) or each network captured in one CUDA graph (one process each):
``bench_layer*.json`` (``benchmarks/bench_layer.py``, float32, a CPU or a GPU),
``gpu_calibration_*.json`` (the early GPU windows' comparison with the authors' algorithm,
float32, batch 128) and ``bench_gpu_*.json`` (``benchmarks/bench_gpu.py``, a window's first
step: every filter of ConvNorm, bfloat16 at batch 512 and float32 at batch 128, eager and
graphed, beside the authors' algorithm). :func:`step_times` reads them all into
:class:`StepTime` rows (one per network, record and mode), each with its ratio to the
Conv2d+BN step of the same record and mode. :func:`summary_table` keeps the newest record of each device
and setting, without the records that forced a computation on every layer; :func:`like_the_paper` picks
the ratio to set beside the paper's eager, float32 epochs: like with like, not the best case.
:func:`records_link` links the raw records in the book's repository.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from convnorm_book.results.paper_values import load_paper_values
from convnorm_book.results.records import StoredFile, load_benchmarks, results_dir
from convnorm_book.results.tables import Table
from convnorm_book.results.words import device_name

__all__ = ["AUTHORS", "CONVNORM", "device_name", "like_the_paper", "load_benchmarks", "load_paper_values",
           "records_link", "step_times", "summary_table", "Table"]

CONVNORM = "ConvNorm2d+BN"
BASELINE = "Conv2d+BN"
AUTHORS = "authors'+BN"
_NAMES = {"conv2d+bn": BASELINE, "convnorm2d+bn": CONVNORM, "authors+bn": AUTHORS}
_PRECISIONS = {"bf16": "bfloat16", "fp32": "float32"}


@dataclass(frozen=True)
class StepTime:
    """One network's training step in one record and mode."""

    device: str
    """The GPU, or the processor's model and threads."""
    gpu: bool
    """Whether it ran on a GPU."""
    measured: str
    """The day it was measured (``YYYY-MM-DD``)."""
    batch: int
    precision: str
    """``"float32"`` or ``"bfloat16"`` (autocast)."""
    mode: str
    """``"eager"`` or ``"CUDA graph"``."""
    network: str
    """``Conv2d+BN``, ``ConvNorm2d+BN`` or ``authors'+BN`` (their algorithm, ``benchmarks/authors_layer.py``)."""
    computation: str
    """How ConvNorm computed (a filter, a forced computation, or the package's rule); empty for
    the networks without ConvNorm layers."""
    seconds: float
    """Median seconds per training step."""
    ratio: float
    """Over the Conv2d+BN step of the same record and mode."""
    record: str
    """The record's file name (for the appendix's engineering readers)."""


def step_times(directory: str | Path | None = None) -> list[StepTime]:
    """Every training-step time of the records in ``directory`` (default ``benchmarks/results``),
    newest first."""
    rows = []
    for run in load_benchmarks("bench_layer*.json", directory):
        if "time" in run.results:
            rows += _bench_layer_rows(run)
    for run in load_benchmarks("gpu_calibration_*.json", directory):
        rows += _calibration_rows(run)
    for run in load_benchmarks("bench_gpu_*.json", directory):
        rows += _bench_gpu_rows(run)
    return sorted(rows, key=lambda row: (row.measured, row.record), reverse=True)


def _row(run: StoredFile, device: str, batch: int, precision: str, mode: str, label: str, computation: str,
         seconds: float, baseline: float) -> StepTime:
    """One row; ``device`` as the record names it (a CPU's name starts with ``cpu``)."""
    measured = str(run.provenance.get("finished_utc", ""))[:10]
    return StepTime(_device(run, device), not device.startswith("cpu"), measured, batch, precision, mode,
                    _NAMES[label.split("[")[0]], computation, seconds, seconds / baseline, run.path.name)


def _device(run: StoredFile, named: str) -> str:
    """A record's device in words: a GPU's name, or a CPU's model and threads ("1 thread")."""
    if not named.startswith("cpu"):
        return named
    cpu = run.results.get("setup", {}).get("cpu")
    model = cpu.get("model") if isinstance(cpu, dict) else cpu
    threads = named.rsplit(",", 1)[-1].strip(" )").replace("1 threads", "1 thread")
    return f"{model or 'CPU'}, {threads}"


def _bench_layer_rows(run: StoredFile) -> list[StepTime]:
    setup, time = run.results["setup"], run.results["time"]
    mode = "CUDA graph" if "graph" in str(run.provenance.get("experiment", "")) else "eager"
    computation = setup.get("computation", "rule").replace("_", " ")  # the rule then, or the computation forced
    baseline = time["conv2d+bn"]["median_s"]
    return [_row(run, setup["device"], setup["batch"], "float32", mode, label,
                 "" if label == "conv2d+bn" else computation, timed["median_s"], baseline)
            for label, timed in time.items()]


def _calibration_rows(run: StoredFile) -> list[StepTime]:
    setup = run.results["setup"]
    rows = []
    for mode, timed in (run.results.get("time") or {}).items():
        if "conv2d+bn" not in timed:
            continue
        baseline = timed["conv2d+bn"]["seconds_per_step"]
        rows += [_row(run, setup["gpu"], setup["batch"], "float32", "CUDA graph" if mode == "cuda_graph" else "eager",
                      label, "FFTs" if label == "convnorm2d+bn" else "", entry["seconds_per_step"], baseline)
                 for label, entry in timed.items()]
    return rows


def _bench_gpu_rows(run: StoredFile) -> list[StepTime]:
    setup = run.results["setup"]
    rows = []
    for mode, by_precision in run.results.get("steps", {}).items():
        for precision, timed in by_precision.items():
            if not isinstance(timed.get("conv2d+bn"), float):
                continue
            batch = setup["bf16_batch" if precision == "bf16" else "fp32_batch"]
            for label, seconds in timed.items():
                if isinstance(seconds, float):
                    filter = label.partition("[")[2].rstrip("]")  # fused, fft, dense
                    rows.append(_row(run, setup["device"], batch, _PRECISIONS[precision],
                                     "CUDA graph" if mode == "graphed" else "eager", label,
                                     filter, seconds, timed["conv2d+bn"]))
    return rows


#: computations forced on every layer for a comparison: not what the package does on its own
FORCED = ("frequency domain", "spatial")


def _own_choice(rows: list[StepTime]) -> list[StepTime]:
    """``rows`` less the records (and modes) that forced a computation on every ConvNorm layer."""
    forced = {(row.record, row.mode) for row in rows if row.network == CONVNORM and row.computation in FORCED}
    return [row for row in rows if (row.record, row.mode) not in forced]


def like_the_paper(rows: list[StepTime]) -> StepTime | None:
    """The ConvNorm2d+BN row to set beside the paper's ratio, measured as the paper measured: on a GPU, in
    float32, eager, with the package's own computation (none forced). Of those, the newest day, and there the
    largest batch and the fastest computation timed. With no such GPU row, the newest such CPU row."""
    candidates = [row for row in _own_choice(rows)
                  if row.network == CONVNORM and (row.precision, row.mode) == ("float32", "eager")]
    for gpu in (True, False):
        chosen = [row for row in candidates if row.gpu == gpu]
        if chosen:
            newest = max(row.measured for row in chosen)
            return min((row for row in chosen if row.measured == newest), key=lambda row: (-row.batch, row.ratio))
    return None


def _ratio(timed: list[StepTime], network: str) -> str:
    """The smallest ratio of ``network`` among ``timed`` (its fastest computation), or a dash."""
    ratios = [row.ratio for row in timed if row.network == network]
    return f"{min(ratios):.2f}×" if ratios else "—"


def summary_table(rows: list[StepTime]) -> Table:
    """One row per device, precision, batch and mode, from the newest record that timed it (with Conv2d+BN's
    milliseconds per step), and the ratios of ConvNorm2d+BN (the package's own computation, or the fastest filter
    the record timed; none forced) and of the authors' algorithm to it, each measured beside it."""
    newest: dict[tuple, str] = {}
    for row in _own_choice(rows):  # newest first
        newest.setdefault((row.device, row.precision, row.batch, row.mode), row.record)
    table = []
    for (device, precision, batch, mode), record in newest.items():
        timed = [row for row in rows if (row.record, row.device, row.precision, row.batch, row.mode)
                 == (record, device, precision, batch, mode)]
        baseline = next((row for row in timed if row.network == BASELINE), None)
        convnorm, authors = (_ratio(timed, network) for network in (CONVNORM, AUTHORS))
        if baseline is not None and convnorm != "—":
            setting = f"{device}\n{precision}, batch {batch}, {mode}\n{BASELINE}: {baseline.seconds * 1e3:.1f} ms"
            table.append([not baseline.gpu, device, mode, batch, setting, convnorm, authors])
    table = [row[4:] for row in sorted(table)]  # the GPUs first, then by device, mode and batch
    return Table(f"A ResNet18 training step: {CONVNORM} and {AUTHORS} over {BASELINE}",
                 ["setting", "ConvNorm", "authors'"], table,
                 notes=["Each ratio is over the Conv2d+BN step timed beside it: in one process (eager), or each "
                        "network captured in one CUDA graph. Rows come from different machines and versions of the "
                        "package, so compare within a row. ConvNorm2d+BN computes as the package chooses, or with "
                        "the fastest filter the record timed. The raw records are linked below the table."])


@dataclass(frozen=True)
class Link:
    """A link: on a page (Markdown) the text, pointing to ``url``; elsewhere both, as plain text."""

    text: str
    url: str

    def _repr_markdown_(self) -> str:
        return f"[{self.text}]({self.url})"

    def __repr__(self) -> str:
        return f"{self.text}: {self.url}"


def records_link(root: str | Path | None = None) -> Link:
    """The folder of the benchmark records (``benchmarks/results``) in the book's repository, as a link. The
    repository's address and branch are read from its ``_config.yml`` (the one place the repository is named),
    in ``root``, by default the checkout that holds the results folder."""
    folder = Path(root) if root is not None else results_dir().parent
    repository = yaml.safe_load((folder / "_config.yml").read_text())["repository"]
    return Link("The raw records of every benchmark",
                f"{repository['url'].rstrip('/')}/tree/{repository['branch']}/benchmarks/results")
