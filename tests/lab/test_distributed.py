"""Data-parallel training: two CPU processes under torchrun (Gloo) compute the
single-process training of the same global batch, only process 0 writes, and a single
process (no torchrun environment) trains exactly as before.

The two processes run this file as a script (the ``__main__`` block at the end): each
trains in its own working directory, so what each process wrote can be told apart, and
saves what it ended with for the tests to compare.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest
import torch
import torch.nn.functional as F

from convnorm_lab.data import BatchLoader, CifarSource, CifarSplits
from convnorm_lab.models import build_model
from convnorm_lab.training import TrainConfig, Trainer, distributed, seed_everything

pytestmark = pytest.mark.multiprocess

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 2
# 29 training images in batches of 12, 12, 5: parts of 6 + 6, 6 + 6 and 3 + 2 images
CONFIG = {"epochs": 2, "milestones": (1,), "lr": 0.05, "batch_size": 12}
FREE = {**CONFIG, "free_replays": 2}  # free adversarial training, the perturbation carried over
TORCHRUN_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def synthetic_data() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (59, 3, 16, 16), dtype=torch.uint8, generator=g)
    labels = torch.randint(0, 10, (59,), generator=g)
    return {"train": (images[:29], labels[:29]), "val": (images[29:50], labels[29:50]),
            "test": (images[50:], labels[50:])}


def synthetic_loaders() -> dict[str, BatchLoader]:
    data = synthetic_data()
    # validation: batches of 10, 10, 1 (the last leaves a process without images)
    return {"train": BatchLoader(*data["train"]), "val": BatchLoader(*data["val"], 10),
            "test": BatchLoader(*data["test"], 4)}


def make_trainer(config: dict, checkpoint=None, seed: int = 0, norm: str = "convnorm") -> Trainer:
    seed_everything(seed)
    model = build_model("small", norm, width=4)
    return Trainer(model, synthetic_loaders(), TrainConfig(**config), checkpoint, progress=False, device="cpu")


# ------------------------------------------------------------ the two processes
def _refusal(config: dict) -> str | None:
    try:
        make_trainer(config)
    except ValueError as error:
        return str(error)
    return None


def _run_record(report: dict) -> None:
    """Context.train: process 0 writes the run record; asked again, every process gets it."""
    from convnorm_lab.experiments import context
    from convnorm_lab.experiments.context import Context
    from convnorm_lab.experiments.presets import get_preset

    data = synthetic_data()
    source = CifarSource("cifar10", "synthetic", Path("synthetic"), "0" * 32)
    splits = CifarSplits(data["train"], data["val"], data["test"], 10, source, {"n_train": 29})
    preset = replace(get_preset("smoke"), batch_size=12, epochs=1, milestones=())
    ctx = Context("convergence", preset, output=Path("results"), progress=False, device=torch.device("cpu"))
    record = ctx.train("small-convnorm", "convnorm", splits, augment=False)
    with mock.patch.object(context, "Trainer", side_effect=AssertionError("a stored run was trained again")):
        again = ctx.train("small-convnorm", "convnorm", splits, augment=False)
    report.update(record=record["history"], record_again=again["history"])


def worker(out: Path) -> None:
    torch.set_num_threads(1)
    rank = distributed.rank()
    home = out / f"rank{rank}"
    home.mkdir()
    os.chdir(home)
    report = {}
    # an interrupted run: one epoch, then a trainer with other initial weights resumes
    make_trainer({**CONFIG, "epochs": 1}, "ck.pt").fit()
    if rank == 0:
        shutil.copy("ck.pt", out / "epoch1.pt")
    resumed = make_trainer(CONFIG, "ck.pt", seed=123)
    resumed.fit(resume=True)
    report.update(state=resumed.model.state_dict(), history=resumed.history.as_dict(), steps=resumed.steps,
                  wrapper=type(resumed._network).__name__)
    free = make_trainer(FREE)
    free.fit()
    report.update(free_state=free.model.state_dict(), free_history=free.history.as_dict())
    report["refusals"] = [_refusal({**CONFIG, "cuda_graph": True}),
                          _refusal({**CONFIG, "batch_size": 14})]  # 29 = 14 + 14 + 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bn = make_trainer({**CONFIG, "epochs": 1}, norm="bn")
    bn.fit()
    report.update(bn_state=bn.model.state_dict(), bn_warnings=[str(w.message) for w in caught])
    _run_record(report)
    torch.save(report, out / f"report{rank}.pt")
    distributed.teardown()


# ------------------------------------------------------------------- the tests
@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    """Run the worker in 2 processes under torchrun; return its folder and their reports."""
    out = tmp_path_factory.mktemp("ddp")
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_ENV}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "lab"), env.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={PROCESSES}",
               __file__, str(out)]
    result = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return out, [torch.load(out / f"report{r}.pt", weights_only=False) for r in range(PROCESSES)]


@pytest.fixture(scope="module")
def single_process():
    """The same training in this process: the reference."""
    trainer = make_trainer(CONFIG)
    trainer.fit()
    return trainer


def assert_same_training(state: dict, history: dict, reference: Trainer) -> None:
    for name, value in reference.model.state_dict().items():
        torch.testing.assert_close(state[name], value, rtol=1e-5, atol=1e-6, msg=name)
    expected = reference.history.as_dict()
    for key in ("epoch", "steps", "lr", "train_acc", "val_acc", "test_acc"):
        assert history[key] == expected[key], key
    for key in ("train_loss", "val_loss", "test_loss"):
        assert history[key] == pytest.approx(expected[key], rel=1e-5), key


def test_two_processes_train_the_single_process_model(two_processes, single_process):
    _, reports = two_processes
    assert reports[0]["wrapper"] == "DistributedDataParallel"
    # resumed after one epoch, in two processes: the uninterrupted single-process run
    assert_same_training(reports[0]["state"], reports[0]["history"], single_process)
    assert reports[0]["steps"] == single_process.steps == 6
    for name, value in reports[0]["state"].items():  # the processes hold one model
        assert torch.equal(reports[1]["state"][name], value), name
    assert {k: v for k, v in reports[1]["history"].items() if k != "epoch_time"} == {
        k: v for k, v in reports[0]["history"].items() if k != "epoch_time"}


def test_free_adversarial_training_in_two_processes(two_processes):
    _, reports = two_processes
    reference = make_trainer(FREE)
    reference.fit()
    assert_same_training(reports[0]["free_state"], reports[0]["free_history"], reference)


def test_only_process_zero_writes(two_processes):
    out, reports = two_processes
    assert not [p for p in (out / "rank1").rglob("*")]
    written = {p.relative_to(out / "rank0").parts[:2] for p in (out / "rank0").rglob("*") if p.is_file()}
    assert written == {("ck.pt",), ("results", "runs")}  # (a stored run's checkpoint is deleted)
    record = next((out / "rank0" / "results" / "runs").rglob("*.json"))
    from convnorm_lab.training import load_results

    assert load_results(record)["provenance"]["processes"] == PROCESSES
    for report in reports:  # asked again, each process gets the record process 0 wrote
        assert report["record_again"] == reports[0]["record"]


def test_a_single_process_resumes_a_data_parallel_checkpoint(two_processes, single_process, tmp_path):
    out, _ = two_processes
    shutil.copy(out / "epoch1.pt", tmp_path / "ck.pt")
    resumed = make_trainer(CONFIG, tmp_path / "ck.pt", seed=123)
    resumed.fit(resume=True)
    assert_same_training(resumed.model.state_dict(), resumed.history.as_dict(), single_process)


def test_refusals_and_batchnorm_on_the_cpu(two_processes):
    _, reports = two_processes
    cuda_graph, small_batch = reports[0]["refusals"]
    assert "cuda_graph cannot be combined with data-parallel training" in cuda_graph
    assert "gives a batch of 1 image(s), fewer than the 2 processes" in small_batch
    # per-process BatchNorm statistics on the CPU: said once, and the processes still
    # end with one model (buffers included)
    assert len(reports[0]["bn_warnings"]) == 1 and "SyncBatchNorm needs a GPU" in reports[0]["bn_warnings"][0]
    assert reports[1]["bn_warnings"] == []
    for name, value in reports[0]["bn_state"].items():
        assert torch.equal(reports[1]["bn_state"][name], value), name


def test_command_line_refuses_cuda_graph_with_several_processes(monkeypatch, capsys):
    from convnorm_lab.experiments.__main__ import main

    monkeypatch.setenv("WORLD_SIZE", "2")
    assert main(["convergence", "--cuda-graph", "--list-runs"]) == 2
    assert "--cuda-graph cannot be combined with data-parallel training" in capsys.readouterr().err
    assert not torch.distributed.is_initialized()


def test_a_single_process_trains_as_a_plain_loop(monkeypatch):
    """Without a torchrun environment: no process group, no wrapper, and the trainer's
    weights are bit for bit those of a hand-written SGD loop over the loader's batches."""
    for name in TORCHRUN_ENV:
        monkeypatch.delenv(name, raising=False)
    trainer = make_trainer(CONFIG, norm="bn")
    trainer.fit()
    assert not torch.distributed.is_initialized() and trainer._network is trainer.model
    assert distributed.world_size() == 1 and distributed.is_main() and distributed.from_main(lambda: 7) == 7
    seed_everything(0)
    model = build_model("small", "bn", width=4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.MultiStepLR(optimizer, [1], gamma=0.1)
    loader = BatchLoader(*synthetic_data()["train"], 12, shuffle=True, augment=True, seed=0)
    for epoch in range(2):
        model.train()
        for x, y in loader.epoch(epoch):
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        schedule.step()
    for name, value in model.state_dict().items():
        assert torch.equal(trainer.model.state_dict()[name], value), name


def test_parts_of_a_batch_make_up_the_batch():
    images, labels = synthetic_data()["train"]
    loader = BatchLoader(images, labels, 12, shuffle=True, augment=True, seed=3)
    parts = [list(loader.shard(rank, 3).epoch(1)) for rank in range(3)]
    whole = list(loader.epoch(1))
    assert [len(y) for _, y in whole] == [12, 12, 5]
    for k, (x, y) in enumerate(whole):  # image for image, augmentation included
        for rank in range(3):
            assert torch.equal(parts[rank][k][0], x[rank::3]) and torch.equal(parts[rank][k][1], y[rank::3])
    small = BatchLoader(images[:4], labels[:4], 3)  # batches of 3 and 1: process 1 skips the second
    assert [len(y) for _, y in small.shard(1, 2)] == [1]
    with pytest.raises(ValueError, match="rank"):
        loader.shard(2, 2)
    with pytest.raises(ValueError, match="world_size"):
        loader.shard(0, 0)


if __name__ == "__main__":
    worker(Path(sys.argv[1]))
