"""convnorm_lab.training: the trainer learns, checkpoints resume exactly, results carry provenance."""
from __future__ import annotations

import json

import pytest
import torch

from cifar_data import tiny_random_cifar  # noqa: F401 (fixture)
from convnorm_lab.data import BatchLoader
from convnorm_lab.models import build_model
from convnorm_lab.training import (
    TrainConfig,
    Trainer,
    evaluate,
    load_results,
    paper_config,
    provenance,
    save_results,
    seed_everything,
)


def make_trainer(splits, config, checkpoint=None, seed=0, norm="bn"):
    seed_everything(seed)
    model = build_model("small", norm, width=8)
    return Trainer(model, splits.loaders(), config, checkpoint, progress=False, device="cpu")


@pytest.mark.training
@pytest.mark.parametrize("free_replays", [0, 2])
def test_resume_continues_identically(tiny_random_cifar, tmp_path, free_replays):
    config = dict(epochs=2, milestones=(1,), lr=0.05, free_replays=free_replays, batch_size=100)
    straight = make_trainer(tiny_random_cifar, TrainConfig(**config))
    straight.fit()
    # an interrupted run: one epoch, then a fresh process (other init) resumes
    first = make_trainer(tiny_random_cifar, TrainConfig(**{**config, "epochs": 1}), tmp_path / "ck.pt")
    first.fit()
    resumed = make_trainer(tiny_random_cifar, TrainConfig(**config), tmp_path / "ck.pt", seed=123)
    resumed.fit(resume=True)
    for (name, a), b in zip(straight.model.state_dict().items(), resumed.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert resumed.history.train_loss == straight.history.train_loss
    assert resumed.history.lr == pytest.approx([0.05, 0.005]) and resumed.history.steps[-1] == 8 * max(free_replays, 1)
    if free_replays:  # the perturbation is carried between minibatches, within the ball
        assert resumed.delta.abs().max() <= 8 / 255 + 1e-7 and resumed.delta.abs().max() > 0


def test_resume_refuses_other_config(tiny_random_cifar, tmp_path):
    make_trainer(tiny_random_cifar, TrainConfig(epochs=1), tmp_path / "ck.pt").fit()
    with pytest.raises(ValueError, match="different config.*lr"):
        make_trainer(tiny_random_cifar, TrainConfig(epochs=2, lr=0.01), tmp_path / "ck.pt").fit(resume=True)


@pytest.mark.training
def test_training_reduces_loss_and_history_is_complete(tiny_random_cifar):
    trainer = make_trainer(tiny_random_cifar, TrainConfig(epochs=3, milestones=(2,), lr=0.05, batch_size=100))
    before, _ = evaluate(trainer.model, trainer.loaders["train"])
    history = trainer.fit()
    after, _ = evaluate(trainer.model, trainer.loaders["train"])
    assert after < before
    assert history.epoch == [1, 2, 3] and len(history.val_acc) == len(history.test_acc) == 3
    summary = history.summary()
    best = history.val_acc.index(max(history.val_acc))
    assert summary["test_acc_at_best_val"] == history.test_acc[best]


@pytest.mark.training
@pytest.mark.parametrize("norm", ["bn", "convnorm+bn"])
def test_mixed_precision_channels_last_and_truncated_epochs(tiny_random_cifar, norm):
    config = TrainConfig(epochs=1, precision="bf16", batch_size=50, max_batches_per_epoch=3, channels_last=True,
                         nesterov=True)
    trainer = make_trainer(tiny_random_cifar, config, norm=norm)
    history = trainer.fit()
    assert trainer.steps == 3 and history.train_loss[0] > 0 and 0 <= history.test_acc[0] <= 1
    assert trainer.loaders["train"].batch_size == 50 and trainer.loaders["train"].augment
    kernels = [p for p in trainer.model.parameters() if p.dim() == 4 and p.shape[-1] > 1]
    assert kernels and all(k.is_contiguous(memory_format=torch.channels_last) for k in kernels)
    assert trainer.optimizer.param_groups[0]["nesterov"]


def test_the_callers_loaders_are_left_as_they_were(tiny_random_cifar):
    loaders = tiny_random_cifar.loaders(batch_size=37, augment=False, seed=5)
    make_trainer_with = Trainer(build_model("small", "bn", width=4), loaders, TrainConfig(epochs=1, batch_size=100),
                                progress=False, device="cpu")
    make_trainer_with.fit()
    train = loaders["train"]
    assert (train.batch_size, train.augment, train.seed) == (37, False, 5)
    assert make_trainer_with.loaders["train"].batch_size == 100 and make_trainer_with.loaders["train"].augment


def test_one_cycle_schedule_rises_then_falls_to_zero():
    from convnorm_lab.training.schedule import lr_factor

    factors = [lr_factor("one-cycle", t, 10, 5, warmup_fraction=0.2) for t in range(50)]
    peak = factors.index(max(factors))
    assert max(factors) == 1 and peak == 9  # the warm-up ends after 20 % of the 50 minibatches
    assert all(a < b for a, b in zip(factors[:peak], factors[1:peak + 1]))  # strictly rising
    assert all(a > b for a, b in zip(factors[peak + 1:], factors[peak + 2:]))  # then strictly falling
    assert factors[0] == pytest.approx(0.1) and factors[-1] == pytest.approx(1 / 40)  # zero after the last step
    steps = [lr_factor("step", t, 10, 5, (2, 4), 0.1) for t in range(50)]
    assert steps[19] == 1 and steps[20] == pytest.approx(0.1) and steps[40] == pytest.approx(0.01)
    with pytest.raises(ValueError, match="schedule must be one of"):
        lr_factor("cosine", 0, 10, 5)


@pytest.mark.training
def test_the_trainer_follows_the_one_cycle_schedule_per_minibatch(tiny_random_cifar):
    config = TrainConfig(epochs=2, batch_size=100, lr=0.4, schedule="one-cycle", warmup_fraction=0.5)
    trainer = make_trainer(tiny_random_cifar, config)
    seen = []
    step = trainer._standard_step
    trainer._standard_step = lambda x, y, share: (seen.append(trainer.optimizer.param_groups[0]["lr"]),
                                                  step(x, y, share))[1]
    history = trainer.fit()
    assert seen == pytest.approx([0.4 * f for f in (0.25, 0.5, 0.75, 1.0, 1.0, 0.75, 0.5, 0.25)])
    assert history.lr == pytest.approx([0.1, 0.4])  # the rate at each epoch's first minibatch


def test_a_diverging_training_says_at_which_epoch(tiny_random_cifar):
    from convnorm_lab.training import TrainingDiverged

    trainer = make_trainer(tiny_random_cifar, TrainConfig(epochs=3, batch_size=100, milestones=()))
    original = trainer._loss

    def poisoned(x, y, share=1.0):
        loss, logits = original(x, y, share)
        return (loss * float("inf") if trainer.batches > 4 else loss), logits

    trainer._loss = poisoned
    with pytest.raises(TrainingDiverged, match="epoch 2") as caught:
        trainer.fit()
    assert caught.value.epoch == 2 and trainer.history.epoch == [1]


def test_regularizer_enters_the_loss(tiny_random_cifar):
    trainer = make_trainer(tiny_random_cifar, TrainConfig(epochs=1))
    x, y = next(iter(trainer.loaders["val"]))
    plain, _ = trainer._loss(x, y)
    trainer.regularizer = lambda model: torch.tensor(2.5)
    assert float(trainer._loss(x, y)[0].detach()) == pytest.approx(float(plain.detach()) + 2.5)


def test_config_validation_and_paper_defaults():
    cfg = paper_config("cifar100")
    assert (cfg.epochs, cfg.milestones, cfg.lr, cfg.momentum, cfg.weight_decay, cfg.batch_size) == (
        150, (60, 120), 0.1, 0.9, 1e-4, 128)
    assert paper_config("cifar10").milestones == (40, 80)
    with pytest.raises(ValueError, match="milestones"):
        TrainConfig(milestones=(80, 40))
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=float("nan"))
    with pytest.raises(ValueError, match="precision must be one of"):
        TrainConfig(precision="half")
    with pytest.raises(ValueError, match="warmup_fraction"):
        TrainConfig(warmup_fraction=1.5)


def test_results_file_has_provenance(tmp_path):
    block = provenance("convergence", "smoke", 7, "cifar10: test copy", 1.23456)
    path = save_results(tmp_path / "r.json", block, {"acc": [0.5, float("nan")], "t": torch.tensor([1.0])})
    data = load_results(path)
    assert json.loads(path.read_text()) == data
    prov = data["provenance"]
    assert {"experiment", "preset", "seed", "device", "torch_version", "git_commit", "data",
            "wall_time_s"} <= set(prov)
    assert prov["torch_version"] == torch.__version__ and prov["wall_time_s"] == 1.235
    assert prov["device"].startswith("cpu (") and prov["device"].endswith(("1 thread)", " threads)"))
    assert data["results"] == {"acc": [0.5, None], "t": [1.0]}


@pytest.mark.training
@pytest.mark.parametrize("reset", [True, False])
def test_free_training_resets_or_carries_the_perturbation(tiny_random_cifar, monkeypatch, reset):
    import convnorm_lab.attacks.free as free

    seen = []
    original = free.free_adversarial_step

    def spy(model, x, y, delta, *args):
        seen.append(delta.abs().max().item())
        return original(model, x, y, delta, *args)

    monkeypatch.setattr(free, "free_adversarial_step", spy)
    config = TrainConfig(epochs=1, batch_size=100, free_replays=2, free_reset_per_batch=reset)
    make_trainer(tiny_random_cifar, config).fit()
    assert len(seen) == 4 and seen[0] == 0.0
    assert (max(seen[1:]) == 0.0) == reset  # the original method starts a batch from the last δ


@pytest.mark.training
def test_keep_best_restores_the_best_validation_epoch(tiny_random_cifar):
    config = TrainConfig(epochs=3, milestones=(2,), lr=0.05, batch_size=100)
    trainer = make_trainer(tiny_random_cifar, config)
    trainer.keep_best = True
    history = trainer.fit()
    trainer.load_best()
    _, acc = evaluate(trainer.model, trainer.loaders["val"])
    assert acc == max(history.val_acc)
    with pytest.raises(ValueError, match="keep_best"):
        make_trainer(tiny_random_cifar, config).load_best()


def test_cuda_graph_needs_cuda_and_excludes_fp16_and_free_training():
    images = torch.zeros(4, 3, 8, 8, dtype=torch.uint8)
    loader = BatchLoader(images, torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="cuda_graph needs a CUDA device"):
        Trainer(build_model("small", "bn", 10, width=4), {"train": loader}, TrainConfig(epochs=1, cuda_graph=True),
                device="cpu", progress=False)
    for bad in ({"precision": "fp16"}, {"free_replays": 4}):
        with pytest.raises(ValueError, match="cuda_graph cannot be combined"):
            TrainConfig(epochs=1, cuda_graph=True, **bad)


def test_truncated_checkpoint_names_the_file(tmp_path):
    images = torch.randint(0, 256, (8, 3, 8, 8), dtype=torch.uint8)
    loader = BatchLoader(images, torch.zeros(8, dtype=torch.long))
    config = TrainConfig(epochs=1, batch_size=4, milestones=())
    first = Trainer(build_model("small", "bn", 10, width=4), {"train": loader}, config, tmp_path / "run.pt",
                    progress=False, device="cpu")
    first.fit()
    data = (tmp_path / "run.pt").read_bytes()
    (tmp_path / "run.pt").write_bytes(data[: len(data) // 2])
    again = Trainer(build_model("small", "bn", 10, width=4), {"train": loader}, config, tmp_path / "run.pt",
                    progress=False, device="cpu")
    with pytest.raises(ValueError, match=r"run\.pt cannot be read.*delete it"):
        again.fit(resume=True)
