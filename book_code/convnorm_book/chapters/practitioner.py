"""The book code of the page *ConvNorm in practice* (``book/practitioner.ipynb``): the benchmark
records of what the layer costs, each with the machine that measured it. The page reads the
whole-step records of the CIFAR ResNet18 made with the package's default settings
(:func:`cifar_runs`; every measured step, with a GPU's precisions and the authors' algorithm beside
it, is the table of Appendix A) and the records at ImageNet's size of ``benchmarks/bench_imagenet.py``
(:func:`imagenet_runs`)."""
from __future__ import annotations

from convnorm_book.results.records import StoredFile, load_benchmarks

__all__ = ["cifar_runs", "imagenet_runs", "measured_on"]


def cifar_runs(directory=None) -> list[StoredFile]:
    """The records of a CIFAR ResNet18 training step (``bench_layer*.json`` in ``directory``, default
    ``benchmarks/results``) with both networks timed, the package's own choice of computation and
    the default memory allocator (not those that forced a computation or set the allocator)."""
    runs = []
    for run in load_benchmarks("bench_layer*.json", directory):
        setup = run.results.get("setup", {})
        if ("time" in run.results and setup.get("computation", "rule") == "rule"
                and not setup.get("allocator_environment")):
            runs.append(run)
    return runs


def imagenet_runs(directory=None) -> list[StoredFile]:
    """The records of a ResNet18 of torchvision's architecture at ImageNet's size
    (``bench_imagenet*.json`` in ``directory``, default ``benchmarks/results``)."""
    return load_benchmarks("bench_imagenet*.json", directory)


def measured_on(run: StoredFile) -> str:
    """Where and how ``run`` was measured, in a line: the device, the day, how busy a CPU was (its
    load average over the minute before), the batch, and a whole step captured as one CUDA graph."""
    setup, provenance = run.results["setup"], run.provenance
    cpu = setup.get("cpu")
    load = f", load average {cpu['load_average'][0]}" if isinstance(cpu, dict) and cpu.get("load_average") else ""
    graphed = ", whole step as one CUDA graph" if "graph" in str(provenance.get("experiment", "")) else ""
    return f"{provenance['device']}, {provenance['finished_utc'][:10]}{load}, batch {setup['batch']}{graphed}"
