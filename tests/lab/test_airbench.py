"""The airbench94-style network (``build_model("airbench", ...)``) and its recipe: its shapes,
where each normalization sits, the recipe's label smoothing and translations, and a short
training on real CIFAR-10 images."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from cifar_data import cifar_root  # noqa: F401 (fixture)
from convnorm.layers import ConvNorm2d
from convnorm_lab.data import BatchLoader, prepare_cifar
from convnorm_lab.experiments.context import Context, run_key
from convnorm_lab.experiments.gpu_queue import ACCURACY_FLOORS, BN_ACCURACY_FLOOR
from convnorm_lab.experiments.presets import AIRBENCH_RECIPE, PRESETS
from convnorm_lab.models import NORMS, build_model
from convnorm_lab.models.nets import AirbenchGroup, AirbenchNet
from convnorm_lab.training import TrainConfig, Trainer, seed_everything


def test_shapes_follow_airbench94():
    """A 2x2 stem without padding (31 pixels a side), then each group halves the side with
    its pool (15, 7, 3) and sets the channels w, 4w, 4w; a 3x3 pool leaves one pixel."""
    model = build_model("airbench", "bn", width=8)
    sides, channels = [], []

    def note(module, args, out):
        sides.append(out.shape[-1])
        channels.append(out.shape[1])

    for group in model.groups:
        group.register_forward_hook(note)
    x = torch.rand(5, 3, 32, 32)
    assert model(x).shape == (5, 10)
    assert sides == [15, 7, 3] and channels == [8, 32, 32]
    assert model.stem.kernel_size == (2, 2) and model.stem.padding == (0, 0)
    assert model.stem.out_channels == AirbenchNet.STEM_CHANNELS and model.fc.bias is None
    full = build_model("airbench", "bn")
    assert [g.conv2.out_channels for g in full.groups] == [64, 256, 256]  # airbench94's widths


def test_logits_are_the_scaled_classifier():
    model = build_model("airbench", "bn", width=4).eval()
    x = torch.rand(3, 3, 32, 32)
    features = torch.flatten(F.max_pool2d(model.groups(F.gelu(model.stem(model.standardize(x)))), 3), 1)
    torch.testing.assert_close(model(x), F.linear(features, model.fc.weight) / 9)


@pytest.mark.parametrize("norm", NORMS)
def test_each_normalization_sits_where_the_docstring_says(norm):
    """The stem is a plain convolution with bias in every network; each group's two 3x3
    convolutions are the method's (ConvNorm layers for ConvNorm, plain for BN and vanilla),
    with a bias exactly where no BatchNorm follows; a BatchNorm follows each of them for BN
    and for every METHOD+bn, nothing otherwise."""
    model = build_model("airbench", norm, width=4)
    assert type(model.stem) is nn.Conv2d and model.stem.bias is not None
    has_bn = norm == "bn" or norm.endswith("+bn")
    for group in model.groups:
        assert isinstance(group, AirbenchGroup)
        for conv, after in ((group.conv1, group.norm1), (group.conv2, group.norm2)):
            assert isinstance(after, nn.BatchNorm2d if has_bn else nn.Identity)
            if norm.startswith("convnorm"):
                assert isinstance(conv, ConvNorm2d)
            if norm in ("bn", "none"):
                assert type(conv) is nn.Conv2d
            if norm != "cayley":
                assert (conv.bias is None) == has_bn
            assert conv.kernel_size in (3, (3, 3))
    convnorms = [m for m in model.modules() if isinstance(m, ConvNorm2d)]
    assert len(convnorms) == (6 if norm.startswith("convnorm") else 0)
    batchnorms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    assert len(batchnorms) == (6 if has_bn else 0)


def test_first_batchnorm_of_a_group_comes_after_the_pool():
    model = build_model("airbench", "convnorm+bn", width=4)
    seen = {}
    group = model.groups[0]
    group.conv1.register_forward_hook(lambda m, a, out: seen.update(conv=out.shape[-1]))
    group.norm1.register_forward_hook(lambda m, a, out: seen.update(norm=a[0].shape[-1]))
    model(torch.rand(2, 3, 32, 32))
    assert seen == {"conv": 31, "norm": 15}


def test_label_smoothing_is_the_smoothed_cross_entropy():
    """The training loss is the cross-entropy against (1 - ε) one-hot + ε / K."""
    torch.manual_seed(0)
    images = (torch.rand(8, 3, 32, 32) * 255).to(torch.uint8)
    labels = torch.randint(0, 10, (8,))
    model = build_model("airbench", "bn", width=4)
    config = TrainConfig(epochs=1, batch_size=8, label_smoothing=0.2)
    trainer = Trainer(model, {"train": BatchLoader(images, labels)}, config, progress=False, device="cpu")
    x = images.float() / 255
    loss, logits = trainer._loss(x, labels)
    target = 0.8 * F.one_hot(labels, 10) + 0.2 / 10
    expected = -(target * F.log_softmax(logits, 1)).sum(1).mean()
    torch.testing.assert_close(loss, expected)
    assert loss > F.cross_entropy(logits, labels)  # smoothing a confident-free start raises the loss


@pytest.mark.parametrize("padding", [2, 4])
def test_crop_moves_an_image_by_at_most_its_padding(padding):
    """With a single bright pixel in the middle, the augmented image holds it moved by at most
    ``padding`` pixels each way (then perhaps mirrored), and every offset is drawn."""
    images = torch.zeros(400, 3, 32, 32, dtype=torch.uint8)
    images[:, :, 16, 16] = 255
    loader = BatchLoader(images, torch.zeros(400, dtype=torch.long), batch_size=400, shuffle=True, augment=True,
                         padding=padding)
    x, _ = next(iter(loader.epoch(0)))
    rows = x[:, 0].amax(2).argmax(1) - 16
    cols = x[:, 0].amax(1).argmax(1)
    shifts = torch.minimum((cols - 16).abs(), (cols - 15).abs())  # a mirror moves column 16 to 15
    assert rows.abs().max() == padding and set(rows.tolist()) == set(range(-padding, padding + 1))
    assert shifts.max() <= padding


def test_trainer_passes_the_crop_padding_and_keys_name_the_recipe():
    config = TrainConfig(epochs=1, batch_size=4, crop_padding=2)
    loader = BatchLoader(torch.zeros(4, 3, 32, 32, dtype=torch.uint8), torch.zeros(4, dtype=torch.long))
    trainer = Trainer(build_model("airbench", "bn", width=4), {"train": loader}, config, progress=False, device="cpu")
    assert trainer.loaders["train"].padding == 2 and loader.padding == 4
    settings = {"preset": "x", "arch": "airbench", "norm": "bn", "config": TrainConfig()}
    plain = run_key(settings)
    assert run_key({**settings, "config": TrainConfig(label_smoothing=0.0, crop_padding=4)}) == plain
    assert run_key({**settings, "config": TrainConfig(label_smoothing=0.2)}) != plain
    assert run_key({**settings, "config": TrainConfig(crop_padding=2)}) != plain
    with pytest.raises(ValueError, match="label_smoothing"):
        TrainConfig(label_smoothing=1.5)
    with pytest.raises(ValueError, match="crop_padding"):
        TrainConfig(crop_padding=0)


def test_the_airbench_preset_trains_with_its_recipe():
    preset = PRESETS["airbench"]
    assert (preset.arch, preset.width, preset.max_train) == ("airbench", 64, None)
    ctx = Context("generalization", preset, device=torch.device("cpu"))

    class Splits:  # what config() reads of the data
        source = type("S", (), {"name": "cifar10"})

    config = ctx.config("bn", Splits(), reduction=1)
    for field, value in AIRBENCH_RECIPE.items():
        assert getattr(config, field) == value, field
    assert config.epochs == preset.epochs
    assert config.channels_last and not ctx.config("convnorm+bn", Splits(), reduction=1).channels_last


@pytest.mark.data
@pytest.mark.training
def test_a_short_real_training_learns(cifar_root):
    """Three epochs on 2,000 real images at width 8 with the recipe: well above chance (10 %)
    on 500 validation images."""
    splits = prepare_cifar("cifar10", cifar_root, seed=0, max_train=2000, max_val=500, max_test=100)
    seed_everything(0)
    config = TrainConfig(epochs=3, **{**AIRBENCH_RECIPE, "batch_size": 100})
    trainer = Trainer(build_model("airbench", "bn", width=8), splits.loaders(100), config, progress=False,
                      device="cpu")
    history = trainer.fit()
    assert history.train_loss[-1] < history.train_loss[0]
    assert history.val_acc[-1] > 0.25


def test_the_airbench_window_stops_below_the_papers_regime():
    """A GPU window on the airbench network stops after its first BN training below 93 %, the
    paper's regime, on the official images (the floor every copy the preset reads has)."""
    floors = ACCURACY_FLOORS["airbench"]
    assert set(floors) == {"official", "lossless"} and min(floors.values()) >= 0.93
    assert ACCURACY_FLOORS["fast"] is BN_ACCURACY_FLOOR


@pytest.mark.parametrize("name", ["airbench", "airbench-cpu", "airbench-colab"])
def test_an_airbench_preset_names_its_network_and_its_deviations(name):
    """A reader's words for the network (its width included), and the protocol's deviations from
    the paper's listed, the first of them the network that replaces the paper's."""
    from convnorm_book.results.deviations import protocol_deviations
    from convnorm_lab.experiments.experiment import networks_in_words

    preset = PRESETS[name]
    assert networks_in_words(preset) == f"an airbench94 network of width {preset.width}"
    assert protocol_deviations(name)
