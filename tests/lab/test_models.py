"""convnorm_lab.models: every architecture with every normalization builds, runs, back-propagates."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from convnorm_lab.models import NORMS, Standardize, build_model, conv_block


def n_params(model):
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("arch", ["resnet18", "vgg16", "small", "airbench"])
def test_forward_backward_every_norm(arch, norm):
    torch.manual_seed(0)
    model = build_model(arch, norm, num_classes=7, width=4)
    x = torch.rand(2, 3, 32, 32)
    logits = model(x)
    assert logits.shape == (2, 7) and torch.isfinite(logits).all()
    logits.square().sum().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert sum(float(g.abs().sum()) for g in grads) > 0


def test_standard_sizes_match_the_usual_cifar_networks():
    # CIFAR ResNet18 with BatchNorm: 11,173,962 parameters (the common reference count)
    assert n_params(build_model("resnet18", "bn")) == 11_173_962
    # CIFAR VGG16 with BatchNorm and a 512 -> 10 classifier: 14,728,266 with conv biases,
    # ours drops the 4,224 conv biases that BatchNorm makes redundant
    assert n_params(build_model("vgg16", "bn")) == 14_728_266 - 4_224
    assert n_params(build_model("resnet18", "bn", num_classes=100)) == 11_173_962 + 90 * 513


def test_xavier_uniform_init():
    torch.manual_seed(0)
    block = conv_block("none", 64, 128, 3)
    fan_in, fan_out = 64 * 9, 128 * 9
    bound = (6 / (fan_in + fan_out)) ** 0.5
    weight = block.weight.detach()
    assert float(weight.abs().max()) <= bound
    assert float(weight.var()) == pytest.approx(bound ** 2 / 3, rel=0.05)
    assert torch.equal(block.bias, torch.zeros(128))


def test_blocks_have_the_named_structure():
    assert isinstance(conv_block("bn", 3, 8, 3)[1], nn.BatchNorm2d)
    sn = conv_block("sn", 3, 8, 3)
    assert hasattr(sn, "parametrizations") and sn.bias is not None
    sn_bn = conv_block("sn+bn", 3, 8, 3)
    assert isinstance(sn_bn[1], nn.BatchNorm2d) and sn_bn[0].bias is None


def test_standardize_is_per_channel():
    layer = Standardize((0.5, 0.25, 0.0), (0.5, 0.25, 1.0))
    x = torch.rand(2, 3, 4, 4)
    out = layer(x)
    assert torch.allclose(out[:, 0], (x[:, 0] - 0.5) / 0.5) and torch.allclose(out[:, 2], x[:, 2])


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="norm must be one of"):
        build_model("small", "layernorm")
    with pytest.raises(ValueError, match="arch must be one of"):
        build_model("resnet50", "bn")
    with pytest.raises(ValueError, match="width"):
        build_model("small", "bn", width=0)


@pytest.mark.parametrize("affine", [True, False])
def test_convnorm_without_batchnorm_keeps_a_bias(affine):
    # the authors' affine convolution has a bias: switching the affine kernel off must not
    # also remove the only bias of a ConvNorm network without BatchNorm
    from convnorm.layers import ConvNorm2d

    plain = [m for m in build_model("small", "convnorm", 10, width=4, affine=affine).modules()
             if isinstance(m, ConvNorm2d)]
    with_bn = [m for m in build_model("small", "convnorm+bn", 10, width=4, affine=affine).modules()
               if isinstance(m, ConvNorm2d)]
    assert plain and all(m.bias is not None for m in plain)
    assert with_bn and all(m.bias is None for m in with_bn)
