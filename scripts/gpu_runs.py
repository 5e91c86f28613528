"""Train the GPU protocol's runs within a deadline, several at once, and pack each as it finishes.

    python scripts/gpu_runs.py --plan --preset fast        # the primary endpoints, and what everything costs
    python scripts/gpu_runs.py --status --preset fast      # what is recorded and what remains
    python scripts/gpu_runs.py --preset fast --deadline 480 --pack $OUT   # a window: the plan, in order
    python scripts/gpu_runs.py --preset fast generalization:0-2/cifar10-bn,cifar10-convnorm+bn

Without requests the queue of ``convnorm_lab.experiments.gpu_queue`` is trained: the BN network
whose accuracy floor is checked first, then the primary endpoints' trainings for the seeds
their power analysis asks (``convnorm_book.results.endpoints``), then the queue, highest
priority first; a request is ``EXPERIMENT:SEEDS[/RUN,RUN...]``. Runs already stored are
skipped, so the same command continues where the last window stopped. ``--plan`` prints
the primary endpoints (the paper's effect, the spread, the seeds and their power), then
the cost of the queue, of the requests given where there are any; ``--status`` what is
stored of the queue (of the requests given). Both refuse, in one line, an option that only
a window uses.
The trainings of one seed (of one group of requests) finish before the next seed's start.
A training starts only if its estimate (step times of ``--calibration``, measured on the
spot, else the recorded ones) fits before ``--deadline``. Trainings run in worker processes
(``convnorm_lab.experiments.worker``), ``--jobs`` at a time; a worker trains one run after
another, except with ``--cuda-graph``, where each training gets a fresh process (two
models captured as CUDA graphs in one process have failed:
``make_graphed_train_step`` of ``benchmarks/timing.py``); one still running at the
deadline is stopped, leaving nothing (a run record is written whole when its training
ends). Each finished training is packed into ``<pack>/results.tgz`` at once (laid out as
the repository: ``tar xzf results.tgz -C <repo>``), with the status in
``<pack>/status.json``. ConvNorm's spatial filter is the one the window's benchmark chose
(``--filter``: the fused kernels, FFTs or dense DFT matrices; by default the calibration's).
After the first BN ResNet18 of the core, its test accuracy is checked against
``gpu_queue.BN_ACCURACY_FLOOR``: below it, nothing more starts (the schedule is too short
for this GPU's data; lengthen it before the next window).

Bad requests are refused in one line, with exit status 2, before anything starts.
"""
from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: this checkout's three packages (the library, the lab, the book's code), not other installed copies
SOURCES = [str(ROOT), str(ROOT / "lab"), str(ROOT / "book_code")]
sys.path[:0] = SOURCES

from convnorm.functional import FILTERS  # noqa: E402
from convnorm_book.results import endpoints  # noqa: E402
from convnorm_book.results.paper_values import load_paper_values  # noqa: E402
from convnorm_book.results.power import MOST_SEEDS, SPREAD_CONFIDENCE, TARGET_POWER  # noqa: E402
from convnorm_book.results.words import method_label, spelled  # noqa: E402
from convnorm_lab.data import CifarNotFoundError  # noqa: E402
from convnorm_lab.experiments import (  # noqa: E402
    EXPERIMENTS,
    get_preset,
    gpu_queue,  # noqa: E402
    planned_runs,
    result_path,
    run_experiment,
    run_record_path,
)
from convnorm_lab.models.normalizations import BN, CONVNORM_BN  # noqa: E402
from convnorm_lab.training import load_results  # noqa: E402

#: seconds kept free before the deadline for the last packing
PACK_MARGIN_S = 10
#: the repository's results folder: the paper's values and the pilot the primary endpoints are planned from
RESULTS = ROOT / "results"
#: where the workers' logs go unless --logs says
DEFAULT_LOGS = "/tmp/gpu-runs-logs"
#: the options only a window uses, with the value that means "not given"
WINDOW_ONLY = {"jobs": None, "deadline": float("inf"), "pack": None, "pack_also": [], "cuda_graph": False,
               "filter": None, "logs": None}


def primary_sample_sizes(preset: str) -> list[endpoints.SampleSize]:
    """The seeds each primary endpoint needs at ``preset``, from the repository's paper values and records."""
    return endpoints.sample_sizes(load_paper_values(RESULTS), RESULTS, preset)


def queue_groups(preset: str, requests: list[gpu_queue.Request]) -> tuple[tuple[gpu_queue.Request, ...], ...]:
    """The groups of requests a window trains at ``preset``: the ``requests`` given, else
    the queue (:func:`convnorm_lab.experiments.gpu_queue.queued_groups` with the primary endpoints)."""
    if requests:
        return (tuple(requests),)
    return gpu_queue.queued_groups(endpoints.requests(preset, primary_sample_sizes(preset)))


def status_table(preset: str, output: Path, data_dir: str | None = None,
                 requests: list[gpu_queue.Request] | None = None) -> str:
    """A Markdown table: per experiment, the seeds with a complete result file and the
    trainings stored against those planned (over the seeds it needs; over the seeds and
    runs of ``requests`` where given), its networks' learning-rate trials included once."""
    lines = ["| experiment | seeds needed | complete result files | trainings stored / planned |",
             "| --- | --- | --- | --- |"]
    for name, experiment in EXPERIMENTS.items():
        asked = [r for r in requests or () if r.experiment == name]
        if requests and not asked:
            continue
        seeds = sorted({s for r in asked for s in r.seeds}) if asked else range(experiment.seeds)
        complete = [seed for seed in seeds if result_path(name, preset, seed, output).exists()
                    and not load_results(result_path(name, preset, seed, output))["provenance"].get("runs_missing")]
        runs = set()
        for seed in seeds:
            planned = planned_runs(name, preset, data_dir, output, seed)
            wanted = [p for p in planned if not p.trial and (not asked or any(
                seed in r.seeds and (r.runs is None or p.run in r.runs) for r in asked))]
            norms = {p.settings["norm"] for p in wanted}  # and their networks' learning-rate trials
            runs |= {(p.seed, p.key) for p in planned if (p in wanted or p.trial and p.settings["norm"] in norms)}
        stored = sum(run_record_path(key, preset, seed, output).exists() for seed, key in runs)
        files = ", ".join(f"seed {s}" for s in complete) or spelled(0)
        lines.append(f"| {name} | {len(seeds) if asked else experiment.seeds} | {files} | {stored} / {len(runs)} |")
    return "\n".join(lines)


def primary_status(preset: str, output: Path, data_dir: str | None = None) -> str:
    """A Markdown table: per primary endpoint at ``preset``, the seeds its power asks and the
    seeds whose two trainings are both stored (what the next windows still have to train)."""
    lines = ["| primary endpoint | seeds planned | seeds stored |", "| --- | --- | --- |"]
    for needed in primary_sample_sizes(preset):
        request = needed.endpoint.request(preset, needed.seeds) if needed.seeds else None
        if request is None:
            why = (f"more than {MOST_SEEDS}: not planned" if needed.testable and needed.endpoint.runs_at(
                get_preset(preset)) else f"none: not testable at {preset}")
            lines.append(f"| {needed.endpoint.name} | {why} | — |")
            continue
        keys = {(job.seed, job.key) for job in gpu_queue.jobs(((request,),), preset, output, data_dir, missing=False)}
        stored = [seed for seed in request.seeds
                  if all(run_record_path(key, preset, s, output).exists() for s, key in keys if s == seed)]
        lines.append(f"| {needed.endpoint.name} | {needed.seeds} | {len(stored)} |")
    return "\n".join(lines)


def primary_text(sizes: list[endpoints.SampleSize], preset: str) -> str:
    """The primary endpoints as declared, one row each: the spread planned with and its upper
    bound, whether ``preset`` can test the endpoint and why, the seeds and their power; then the
    line ``primary: N endpoints, T testable at PRESET; power at the paper's effect: min P`` (over
    the endpoints planned), and a line for each testable one that the plan cannot power."""
    level = endpoints.PLANNING_ALPHA
    confidence = f"{SPREAD_CONFIDENCE:.0%}"
    lines = [f"Primary endpoints: tested by the paired t-test, two-sided, with Holm's correction over these "
             f"{len(sizes)} only; seeds for a power of at least {TARGET_POWER:g} at the paper's effect, at "
             f"Holm's first level ({level:.4g}), with the one-sided {confidence} upper confidence bound on the "
             "largest recorded spread of a per-seed difference (the cpu records of the airbench network where two "
             "of their seeds are complete, else the pilot's; the paper's where it reports one):", "",
             f"| endpoint | comparison | the paper's effect | spread (sd of a difference) | its {confidence} bound "
             f"| from | can {preset} test it | seeds | power |", "|" + " --- |" * 9]
    for needed in sizes:
        e = needed.endpoint
        if not needed.testable:
            seeds, power = "none: not testable", "—"
        else:
            seeds, power = ("too many", "—") if needed.seeds is None else (str(needed.seeds), f"{needed.power:.2f}")
        beside = (f" (the paper's {e.paper_quantity.describe(e.experiment)} shown beside it)"
                  if e.paper_quantity is not None else "")
        lines.append(f"| {e.name} | {method_label(e.a)} − {method_label(e.b)}, {e.quantity.describe(e.experiment)}"
                     f"{beside} | {needed.effect:+.2f} {e.unit} | {needed.spread.sd:.2f} | {needed.spread.bound:.2f} "
                     f"| {needed.spread.source} | {needed.scope.answer} | {seeds} | {power} |")
    testable = [needed for needed in sizes if needed.testable]
    planned = [needed.power for needed in testable if needed.power is not None]
    lines += ["", f"primary: {len(sizes)} endpoints, {len(testable)} testable at {preset}; power at the paper's "
              f"effect: min {min(planned, default=0.0):.2f}"]
    for needed in testable:
        if needed.seeds is None:
            lines.append(f"not planned: {needed.endpoint.name} needs more than {MOST_SEEDS} seeds at the bound "
                         f"{needed.spread.bound:.2f} against an effect of {abs(needed.effect):.2f} "
                         f"{needed.endpoint.unit}: its spread rests on {needed.spread.df + 1} seeds")
    return "\n".join(lines)


def convnorm_ratio(preset: str, times: gpu_queue.StepTimes) -> str:
    """The ConvNorm+BN step's cost over BN's that the plan prices ``preset``'s network with, and
    what it rests on."""
    p = get_preset(preset)
    precision = gpu_queue.gpu_precision(preset)
    arch = p.arch or "resnet18"
    (bn, note), (convnorm, _) = (times.lookup(arch, norm, precision, p.width) for norm in (BN, CONVNORM_BN))
    measured = note.split(": ", 1)[1].split()[0] if note is not None and "not measured" in note else arch
    taken = "" if measured == arch else f", taken for the {arch} network until a window measures it"
    return (f"ConvNorm ratio: the plan prices a ConvNorm+BN step at {convnorm.train / bn.train:.1f}x a BN step: "
            f"{measured}'s {precision} steps on an {bn.gpu} ({bn.source}){taken}")


def target_text(minutes: float, first: list[gpu_queue.ExperimentCost], sizes: list[endpoints.SampleSize]) -> str:
    """Against :data:`~convnorm_lab.experiments.gpu_queue.TARGET_MINUTES`: within it, or by how
    much it is over, which experiments take most of it, and the endpoint that asks the most seeds
    and the spread that asks them."""
    target = gpu_queue.TARGET_MINUTES
    if minutes <= target:
        return f"within the target of {target:g} H100-minutes"
    largest = sorted(first, key=lambda c: -c.minutes)[:2]
    parts = ", ".join(f"{c.experiment} {c.minutes:.1f} ({c.trainings} trainings)" for c in largest)
    most = max((n for n in sizes if n.seeds is not None), key=lambda n: n.seeds)
    return (f"above the target of {target:g} H100-minutes by {minutes - target:.1f} ({minutes / target:.1f}x); "
            f"most of it: {parts}; the most seeds: {most.endpoint.name}, {most.seeds}, at the bound "
            f"{most.spread.bound:.2f} on the spread of {most.spread.source}")


def confirmatory_text(output: Path, times: gpu_queue.StepTimes, data_dir: str | None) -> str:
    """The confirmatory comparison on ResNet18 (:data:`~convnorm_lab.experiments.gpu_queue.CONFIRMATORY`)
    and its cost."""
    preset, request = gpu_queue.CONFIRMATORY_PRESET, gpu_queue.CONFIRMATORY
    cost = gpu_queue.costs(((request,),), preset, output.parent / preset, times, data_dir)
    runs = ", ".join(request.runs)
    return (f"confirmatory: ResNet18 at {preset}, {request.experiment} ({runs}), seeds {request.seeds[0]}-"
            f"{request.seeds[-1]}, BN against ConvNorm+BN, described by its interval, not tested: "
            f"{sum(c.trainings for c in cost)} trainings (learning-rate trials included), "
            f"{sum(c.minutes for c in cost):.1f} H100-minutes, after the floor and the primary endpoints; "
            "the run time (runtime) is ResNet18's")


def costs_text(preset: str, output: Path, times: gpu_queue.StepTimes, data_dir: str | None,
               requests: list[gpu_queue.Request] | None = None) -> str:
    """The primary endpoints (:func:`primary_text`), then the queue's cost as a table per
    experiment (the floor and the primary endpoints first, then everything; only the
    ``requests`` where given), ending with one line of totals; without requests, then the
    ConvNorm ratio it is priced with, how it stands against the target, and, at the
    ``airbench`` preset, the confirmatory comparison on ResNet18."""
    gpus = ", ".join(sorted({time.gpu for time in times.table.values()}))
    sizes = primary_sample_sizes(preset)
    head = [primary_text(sizes, preset), "", f"Plan of preset {preset!r} "
            f"({gpu_queue.gpu_precision(preset)}), in "
            f"H100-minutes from the step times recorded on {gpus}; where an H100 has no time, another GPU's stands in, "
            "named below:", ""]
    after = []
    if requests:
        asked = gpu_queue.costs((tuple(requests),), preset, output, times, data_dir)
        lines = ["| experiment | trainings (asked) | H100-minutes (asked) |", "| --- | --- | --- |"]
        lines += [f"| {line.experiment} | {line.trainings} | {line.minutes:.1f} |" for line in asked]
        notes = dict.fromkeys(note for line in asked for note in line.stand_ins)
        total = f"asked: {sum(line.minutes for line in asked):.1f} H100-minutes"
    else:
        groups = queue_groups(preset, [])
        first = gpu_queue.costs(groups[:2], preset, output, times, data_dir)
        whole = gpu_queue.costs((gpu_queue.everything() + groups[1],), preset, output, times, data_dir)
        lines = ["| experiment | trainings (floor and primary) | H100-minutes (floor and primary) | "
                 "trainings (all seeds) | H100-minutes (all) |", "| --- | --- | --- | --- | --- |"]
        by_name = {line.experiment: line for line in first}
        for line in whole:
            c = by_name.get(line.experiment)
            lines.append(f"| {line.experiment} | {c.trainings if c else 0} | {c.minutes if c else 0:.1f} | "
                         f"{line.trainings} | {line.minutes:.1f} |")
        notes = dict.fromkeys(note for line in first + whole for note in line.stand_ins)
        minutes = sum(c.minutes for c in first)
        total = f"floor and primary: {minutes:.1f} H100-minutes; all: {sum(w.minutes for w in whole):.1f} H100-minutes"
        after = [convnorm_ratio(preset, times), target_text(minutes, first, sizes)]
        if preset == "airbench":
            after.append(confirmatory_text(output, times, data_dir))
    if notes:
        lines += ["", "Stand-ins for step times not measured on an H100:"] + [f"- {note}" for note in notes]
    return "\n".join(head + lines + ["", total] + after)


def recorded_step_times(preset: str, gpu: str = "H100", first: list[str] | None = None) -> gpu_queue.StepTimes:
    """The step times of ``first`` (the window's own calibration) and of the benchmark records
    committed under ``benchmarks/results``, those measured on ``gpu`` preferred."""
    folder = ROOT / "benchmarks" / "results"
    paths = ((first or []) + sorted(folder.glob("bench_layer_cuda_graph_batch*.json"))
             + sorted(folder.glob(gpu_queue.CALIBRATION_PATTERN)))
    return gpu_queue.StepTimes.from_records(paths, gpu, get_preset(preset).batch_size)


def pack(archive: Path, members: dict[str, Path]) -> None:
    """Write ``members`` (name in the archive → file) into ``archive`` (tar.gz) whole, by rename."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=archive.parent, prefix=f".{archive.name}.", delete=False) as handle:
        with tarfile.open(fileobj=handle, mode="w:gz") as tar:
            for name, path in sorted(members.items()):
                tar.add(path, arcname=name)
    os.chmod(handle.name, 0o644)
    os.replace(handle.name, archive)


class Launcher:
    """Workers (``python -m convnorm_lab.experiments.worker``) fed with jobs in order, within a deadline."""

    def __init__(self, args: argparse.Namespace, queue: list[gpu_queue.Job], times: gpu_queue.StepTimes,
                 slowdown: float):
        self.args, self.queue, self.times, self.slowdown = args, queue, times, slowdown
        self.start = time.monotonic()
        self.output = Path(args.output) / args.preset
        self.precision = gpu_queue.gpu_precision(args.preset)
        self.status = {"preset": args.preset, "deadline_s": args.deadline, "jobs": args.jobs,
                       "filter": args.filter, "finished": [],
                       "failed": [], "cut_at_deadline": [], "not_started": [], "stopped": None}
        self.selector = selectors.DefaultSelector()
        self.busy: dict[int, tuple[subprocess.Popen, gpu_queue.Job, float]] = {}
        self.idle: list[subprocess.Popen] = []
        self.spawned = 0
        self.logs = Path(args.logs or DEFAULT_LOGS)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.began_utc = time.time()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def worker(self) -> subprocess.Popen:
        if self.idle:
            return self.idle.pop()
        self.spawned += 1
        log = open(self.logs / f"worker{self.spawned}.log", "a")
        proc = subprocess.Popen([sys.executable, "-m", "convnorm_lab.experiments.worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": os.pathsep.join(SOURCES)})
        self.selector.register(proc.stdout, selectors.EVENT_READ, proc)
        return proc

    def estimate(self, job: gpu_queue.Job, running: int) -> float:
        """Seconds ``job`` is expected to take beside ``running`` others; 0 where no step time is
        known at all (then trainings start unpriced, and the deadline stops one that does not end)."""
        if self.times is None:
            return 0.0
        seconds = gpu_queue.estimate(job, self.times, self.precision).seconds
        return seconds * (self.slowdown if running > 1 else 1.0)

    def start_jobs(self) -> None:
        while self.queue and len(self.busy) < self.args.jobs and self.status["stopped"] is None:
            job = self.queue[0]
            if any(j.stage != job.stage for _, j, _ in self.busy.values()):
                return  # the running stage (a seed) finishes first
            needed = self.estimate(job, len(self.busy) + 1)
            if self.elapsed() + needed + PACK_MARGIN_S > self.args.deadline:
                cost = "unpriced" if self.times is None else f"about {needed:.0f} s"
                self.status["stopped"] = (f"{job.experiment} seed {job.seed} {job.run} ({cost}) does not fit "
                                          f"before the deadline ({self.args.deadline:.0f} s)")
                return
            self.queue.pop(0)
            proc = self.worker()
            proc.stdin.write(json.dumps({"experiment": job.experiment, "preset": self.args.preset, "seed": job.seed,
                                         "run": job.run, "output": str(self.output),
                                         "data_dir": self.args.data_dir,
                                         "cuda_graph": self.args.cuda_graph,
                                         "filter": self.args.filter}) + "\n")
            proc.stdin.flush()
            self.busy[proc.pid] = (proc, job, time.monotonic())
            self.say(f"started {job.experiment} seed {job.seed} {job.run} ("
                     + ("unpriced" if self.times is None else f"estimate {needed:.0f} s") + ")")

    def wait(self) -> None:
        for key, _ in self.selector.select(timeout=1.0):
            proc = key.data
            line = proc.stdout.readline()
            if not line:  # the worker died
                self.selector.unregister(proc.stdout)
                _, job, began = self.busy.pop(proc.pid)
                self.finish(job, {"ok": False, "error": f"worker exited with {proc.wait()}"}, began)
                continue
            _, job, began = self.busy.pop(proc.pid)
            if self.args.cuda_graph:  # one captured training per process (see the module docstring)
                self.selector.unregister(proc.stdout)
                proc.stdin.close()
                proc.wait()
            else:
                self.idle.append(proc)
            self.finish(job, json.loads(line), began)

    def finish(self, job: gpu_queue.Job, outcome: dict, began: float) -> None:
        entry = {"experiment": job.experiment, "seed": job.seed, "run": job.run,
                 "key": outcome.get("key") or job.key, "wall_s": round(time.monotonic() - began, 1)}
        if outcome["ok"]:
            self.status["finished"].append(entry)
            self.say(f"finished {job.experiment} seed {job.seed} {job.run} in {entry['wall_s']} s")
            self.check_floor(job, entry["key"])
        else:
            self.status["failed"].append({**entry, "error": outcome.get("error")})
            self.say(f"FAILED {job.experiment} seed {job.seed} {job.run}: {outcome.get('error')}")
        self.pack()

    def check_floor(self, job: gpu_queue.Job, key: str) -> None:
        """Stop starting trainings if the core's first BN network (stored under ``key``) is below
        its preset's accuracy floor (``gpu_queue.ACCURACY_FLOORS``)."""
        floors = gpu_queue.ACCURACY_FLOORS.get(self.args.preset)
        if not gpu_queue.checks_floor(job) or floors is None or self.status["stopped"]:
            return
        record = load_results(run_record_path(key, self.args.preset, job.seed, self.output))["results"]
        floor = floors[record["data"]["copy"]]
        accuracy = None if record["diverged"] else record["summary"]["test_acc_at_best_val"]
        if accuracy is None or accuracy < floor:
            self.status["stopped"] = (f"the BN {record['arch']} reached {accuracy} test accuracy, below {floor} on the "
                                      f"{record['data']['copy']} data: lengthen the {self.args.preset} schedule before "
                                      "the next window")
            self.say("STOP: " + self.status["stopped"])

    def cut(self) -> None:
        """Stop the trainings still running at the deadline (they leave no record)."""
        for proc, job, _ in self.busy.values():
            proc.kill()
            proc.wait()
            self.status["cut_at_deadline"].append({"experiment": job.experiment, "seed": job.seed, "run": job.run})
            self.say(f"cut at the deadline: {job.experiment} seed {job.seed} {job.run}")
        self.busy.clear()

    def pack(self) -> None:
        if self.args.pack is None:
            return
        members = {}
        for path in self.output.rglob("*.json"):
            if "checkpoints" not in path.parts and path.stat().st_mtime >= self.began_utc - 1:
                members[str(Path("results") / self.args.preset / path.relative_to(self.output))] = path
        for path in map(Path, self.args.pack_also):
            members[str(path.resolve().relative_to(ROOT))] = path
        pack(Path(self.args.pack) / "results.tgz", members)
        self.write_status()

    def write_status(self) -> None:
        self.status["elapsed_s"] = round(self.elapsed(), 1)
        self.status["running"] = [{"experiment": j.experiment, "seed": j.seed, "run": j.run}
                                  for _, j, _ in self.busy.values()]
        target = Path(self.args.pack) if self.args.pack else self.output
        target.mkdir(parents=True, exist_ok=True)
        (target / "status.json").write_text(json.dumps(self.status, indent=1))

    def say(self, text: str) -> None:
        print(f"[{self.elapsed():6.1f} s] {text}", flush=True)

    def run(self) -> dict:
        if self.times is None:
            self.say("no step time is measured or recorded here: each training starts unpriced, and the deadline "
                     "stops one that does not end in time")
        self.say(f"{len(self.queue)} trainings to go; at most {self.args.jobs} at a time; deadline "
                 f"{self.args.deadline:.0f} s; ConvNorm filters by "
                 + (f"the {self.args.filter} filter" if self.args.filter else "the package's rule"))
        while (self.queue and self.status["stopped"] is None) or self.busy:
            self.start_jobs()
            if not self.busy:
                break
            self.wait()
            if self.elapsed() > self.args.deadline - PACK_MARGIN_S / 2:
                self.cut()
                self.status["stopped"] = self.status["stopped"] or "the deadline"
                break
        for proc in self.idle:
            proc.stdin.close()
            proc.wait()
        self.status["not_started"] = [{"experiment": j.experiment, "seed": j.seed, "run": j.run} for j in self.queue]
        self.assemble()
        self.pack()
        self.write_status()
        self.say(f"done: {len(self.status['finished'])} finished, {len(self.status['failed'])} failed, "
                 f"{len(self.status['cut_at_deadline'])} cut, {len(self.queue)} not started"
                 + (f"; stopped: {self.status['stopped']}" if self.status["stopped"] else ""))
        return self.status

    def assemble(self) -> None:
        """Write the result file of every experiment and seed a finished training belongs to."""
        for experiment, seed in dict.fromkeys((e["experiment"], e["seed"]) for e in self.status["finished"]):
            payload = run_experiment(experiment, self.args.preset, self.args.data_dir, self.output, seed,
                                     progress=False, only=[])
            missing = payload["skipped"]
            self.say(f"{experiment} seed {seed}: wrote {payload['path']}"
                     + (f" ({len(missing)} runs still to train)" if missing else ""))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("requests", nargs="*", metavar="EXPERIMENT:SEEDS[/RUNS]")
    parser.add_argument("--status", action="store_true", help="print what is recorded and what remains, and exit")
    parser.add_argument("--plan", action="store_true", help="print the plan's trainings and H100-minutes, and exit")
    parser.add_argument("--preset", default="fast")
    parser.add_argument("--output", default=str(ROOT / "results"))
    parser.add_argument("--data-dir", default=None, help="directory holding CIFAR (default: $CONVNORM_DATA_DIR)")
    parser.add_argument("--logs", default=None, help=f"folder of the workers' logs (default: {DEFAULT_LOGS})")
    parser.add_argument("--jobs", type=int, default=None, help="trainings at a time (default: the calibration's)")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="seconds from the start")
    parser.add_argument("--calibration", default=None, help="a calibration record measured on this GPU")
    parser.add_argument("--pack", default=None, help="folder for results.tgz and status.json, packed as runs finish")
    parser.add_argument("--pack-also", action="append", default=[], metavar="FILE",
                        help="a file of this checkout to pack too (the window's calibration record)")
    parser.add_argument("--cuda-graph", action="store_true", help="replay each training step from one CUDA graph")
    parser.add_argument("--filter", choices=list(FILTERS), default=None,
                        help="ConvNorm's spatial filter on the GPU (default: as the calibration says; without one, "
                             "the package's rule)")
    return parser.parse_args(argv)


def report_request(args: argparse.Namespace) -> list[gpu_queue.Request]:
    """For ``--plan`` or ``--status``: the requests given, parsed and checked against the
    preset's runs; raises ValueError, naming the option, for both at once, for an option
    only a window uses, or for ``--calibration`` with ``--status``."""
    if args.plan and args.status:
        raise ValueError("--plan and --status are two reports: ask for one")
    mode = "--plan" if args.plan else "--status"
    given = [name for name, unset in WINDOW_ONLY.items() if getattr(args, name) != unset]
    if args.status and args.calibration is not None:
        given.append("calibration")
    if given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ValueError(f"{mode} does not take {options}: only a window uses {'it' if len(given) == 1 else 'them'}")
    get_preset(args.preset)
    requests = [gpu_queue.Request.parse(text) for text in args.requests]
    if requests:  # unknown run names are refused here, before anything is printed
        gpu_queue.jobs((tuple(requests),), args.preset, Path(args.output) / args.preset, args.data_dir, missing=False)
    return requests


def checked(args: argparse.Namespace) -> tuple[list, gpu_queue.StepTimes, float]:
    """The job queue, the step times and the slowdown of concurrent trainings; raises
    ValueError (naming the option) for anything wrong, before anything starts."""
    get_preset(args.preset)
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be a positive integer, got {args.jobs}")
    if not args.deadline > 0:
        raise ValueError(f"--deadline must be a positive number of seconds, got {args.deadline}")
    groups = queue_groups(args.preset, [gpu_queue.Request.parse(text) for text in args.requests])
    slowdown, jobs = 1.0, args.jobs or 1
    if args.calibration is not None:
        calibration = load_results(args.calibration)["results"]
        # what the window's calibration did not reach is priced with recorded step times
        times = recorded_step_times(args.preset, calibration["setup"]["gpu"], [args.calibration])
        measured = calibration["concurrency"]
        jobs = args.jobs or measured["jobs"]
        if args.filter is None:
            args.filter = calibration.get("filter")
        # the slowdown was measured for the calibration's number at once; for another, assume no gain
        slowdown = 1.0 if jobs == 1 else measured["slowdown"] if jobs == measured["jobs"] else float(jobs)
    else:
        times = recorded_step_times(args.preset)
        slowdown = float(jobs)  # nothing measured: concurrent trainings gain nothing
    try:
        times.lookup("resnet18", BN, gpu_queue.gpu_precision(args.preset))
    except ValueError:  # nothing measured or recorded: the trainings start unpriced, one at a time
        times, jobs, slowdown = None, 1, 1.0
    args.jobs = jobs
    queue = gpu_queue.jobs(groups, args.preset, Path(args.output) / args.preset, args.data_dir)
    return queue, times, slowdown


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        output = Path(args.output) / args.preset
        if args.status or args.plan:
            requests = report_request(args)
            if args.status:
                print(status_table(args.preset, output, args.data_dir, requests))
                if not requests:
                    print("\n" + primary_status(args.preset, output, args.data_dir))
            else:
                times = (gpu_queue.StepTimes.from_records([args.calibration], batch=get_preset(args.preset).batch_size)
                         if args.calibration else recorded_step_times(args.preset))
                print(costs_text(args.preset, output, times, args.data_dir, requests))
            return 0
        queue, times, slowdown = checked(args)
    except (CifarNotFoundError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    status = Launcher(args, queue, times, slowdown).run()
    return 1 if status["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
