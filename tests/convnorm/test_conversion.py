"""convnorm.conversion: one call swaps every Conv2d/Conv1d for a ConvNorm layer with the
same weights and arguments, honours skip rules, and names layers it cannot convert."""
from __future__ import annotations

import logging
import warnings

import pytest
import torch
import torch.nn as nn

from convnorm.conversion import ConversionSummary, convert, convnorm_from_conv, revert, skip_pointwise
from convnorm.functional import conv_norm
from convnorm.layers import ConvNorm1d, ConvNorm2d
from convnorm_lab.models import build_model


def small_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Sequential(nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False), nn.Conv2d(8, 4, 1)))


def test_every_conv_is_replaced_with_its_weights():
    net = small_net()
    originals = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    convert(net)
    layers = [m for m in net.modules() if isinstance(m, ConvNorm2d)]
    assert len(layers) == len(originals) == 3 and not any(type(m) is nn.Conv2d for m in net.modules())
    for conv, layer in zip(originals, layers):
        assert layer.weight is conv.weight and layer.bias is conv.bias  # the same parameters, taken over
        assert (layer.bias is None) == (conv.bias is None)
        assert (layer.stride, layer.padding) == (conv.stride, conv.padding)
        x = torch.randn(2, conv.in_channels, 8, 8)
        torch.testing.assert_close(layer(x), conv_norm(x, conv.weight, conv.bias, conv.stride, conv.padding,
                                                       affine_weight=layer.affine_weight))


def test_skip_by_name_and_by_rule():
    net = convert(small_net(), skip=["3.0"])
    assert type(net[3][0]) is nn.Conv2d and isinstance(net[0], ConvNorm2d)
    net = convert(small_net(), skip=skip_pointwise, affine=False, eps=0.0)
    assert type(net[3][1]) is nn.Conv2d and isinstance(net[3][0], ConvNorm2d)
    assert not net[0].affine and net[0].eps == 0.0
    net = convert(small_net(), skip=(name for name in ["3.0", "3.1"]))  # names read once, for every conv
    assert [type(m) for m in (net[0], net[3][0], net[3][1])] == [ConvNorm2d, nn.Conv2d, nn.Conv2d]


def test_conv1d_mode_device_dtype_are_kept():
    conv = nn.Conv1d(2, 3, 5, padding=2).double().eval()
    layer = convnorm_from_conv(conv)
    assert isinstance(layer, ConvNorm1d) and not layer.training and layer.weight.dtype == torch.float64
    assert isinstance(convert(conv), ConvNorm1d), "a bare conv comes back converted"


def test_converted_model_trains():
    net = convert(small_net())
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(4, 3, 8, 8)
    before = net[0].weight.detach().clone()
    net(x).square().mean().backward()
    opt.step()
    assert not torch.equal(before, net[0].weight) and int(net[0].num_steps_tracked) == 1


def test_unconvertible_layers_are_named():
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"))
    with pytest.raises(ValueError, match=r"cannot convert layer '0': padding_mode must be one of"):
        convert(net)
    assert isinstance(convert(net, skip=["0"])[0], nn.Conv2d)
    with pytest.raises(ValueError, match="skip must be a callable"):
        convert(net, skip="0")
    with pytest.raises(ValueError, match="conv must be an nn.Conv1d or nn.Conv2d"):
        convnorm_from_conv(nn.Linear(2, 2))


def test_a_resnet18_is_converted():
    """The lab's CIFAR ResNet18 with plain convolutions (torchvision's wheels on PyPI need a CUDA
    build of torch, so torchvision's own model cannot be tested here): its seventeen 3x3
    convolutions become ConvNorm2d layers, its 1x1 shortcuts stay, and it runs."""
    net = convert(build_model("resnet18", "bn", width=8), skip=skip_pointwise)
    assert sum(isinstance(m, ConvNorm2d) for m in net.modules()) == 17
    assert sum(type(m) is nn.Conv2d and m.kernel_size == (1, 1) for m in net.modules()) == 3
    assert net(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def test_a_conv_used_twice_becomes_one_layer_used_twice():
    """Weight sharing survives: both uses of one conv get the same ConvNorm layer (converting
    only the first use would untie them)."""
    torch.manual_seed(1)
    shared = nn.Conv2d(4, 4, 3, padding=1)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    convert(net)
    assert isinstance(net[0], ConvNorm2d) and net[0] is net[2]
    x = torch.randn(2, 4, 8, 8)
    first = conv_norm(x, shared.weight, shared.bias, padding=1, affine_weight=net[0].affine_weight)
    torch.testing.assert_close(net(x), conv_norm(first.relu(), shared.weight, shared.bias, padding=1,
                                                 affine_weight=net[0].affine_weight))
    with pytest.raises(ValueError, match=r"one module used at several places: skip all of its names or none"):
        convert(nn.Sequential(shared, shared), skip=["0"])


def test_tied_weights_stay_tied():
    """Two convs sharing one weight: their new layers share one weight too; a weight shared with
    a module that stays is refused, leaving the model as it was."""
    a, b = nn.Conv2d(3, 3, 3, padding=1), nn.Conv2d(3, 3, 3, padding=1, bias=False)
    b.weight = a.weight
    net = convert(nn.Sequential(a, b))
    assert net[0].weight is net[1].weight is a.weight
    assert len(list(net.parameters())) == 4  # the one weight, a's bias, two affine kernels
    c, d = nn.Conv2d(3, 3, 3, padding=1), nn.Conv2d(3, 3, 3, padding=1)
    d.weight = c.weight
    kept = nn.Sequential(c, d)
    with pytest.raises(ValueError, match=r"cannot convert layer '0': its weight is shared with '1', which is not"):
        convert(kept, skip=["1"])
    assert type(kept[0]) is nn.Conv2d and type(kept[1]) is nn.Conv2d


def test_a_failed_conversion_leaves_the_model_as_it_was():
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect"))
    with pytest.raises(ValueError, match="cannot convert layer '1'"):
        convert(net)
    assert [type(m) for m in net] == [nn.Conv2d, nn.Conv2d], "nothing converted, not the first layer either"


def test_bad_options_and_skip_names_are_named():
    with pytest.raises(ValueError, match="skip names no convolution of the model: .'3.2', 'typo'."):
        convert(small_net(), skip=["3.2", "typo"])
    with pytest.raises(ValueError, match="the options of the new layers are affine, .*; got padding"):
        convert(small_net(), padding=2)
    with pytest.raises(ValueError, match="model must be an nn.Module"):
        convert(torch.randn(3))
    net = small_net()
    with pytest.raises(ValueError, match="eps must be a finite non-negative number"):
        convert(net, eps=float("inf"))
    assert not any(isinstance(m, ConvNorm2d) for m in net.modules())


def test_frozen_convolutions_stay_frozen():
    """A convolution whose weight (or bias) does not require gradients gives a layer whose
    weight (or bias) does not either, and whose new affine kernel is frozen with its weight; a
    trainable convolution gives a trainable layer, affine kernel included."""
    net = small_net()
    frozen, trainable = net[0], net[3][0]
    frozen.requires_grad_(False)
    net[3][1].bias.requires_grad_(False)  # a trainable weight with a frozen bias
    convert(net)
    assert not any(p.requires_grad for p in net[0].parameters())
    assert all(p.requires_grad for p in net[3][0].parameters()) and trainable.weight.requires_grad
    assert net[3][1].weight.requires_grad and net[3][1].affine_weight.requires_grad
    assert not net[3][1].bias.requires_grad
    x = torch.randn(1, 3, 8, 8, requires_grad=True)
    net[0](x).sum().backward()
    assert x.grad is not None and all(p.grad is None for p in net[0].parameters())


def test_an_optimizer_built_before_converting_still_trains_the_weights():
    """The new layers take over the convolutions' Parameter objects: an optimizer made for the
    model before the conversion updates them; the affine kernels are new, and it holds none."""
    net = small_net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    convert(net)
    before = net[0].weight.detach().clone()
    net(torch.randn(2, 3, 8, 8)).square().mean().backward()
    optimizer.step()
    assert not torch.equal(net[0].weight, before)
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    assert id(net[0].weight) in held and id(net[0].affine_weight) not in held


def test_hooks_on_a_converted_convolution_are_named_in_a_warning():
    conv = nn.Conv2d(3, 4, 3, padding=1)
    conv.register_forward_hook(lambda module, args, out: None)
    with pytest.warns(UserWarning, match="the forward hooks of '0' stay on the nn.Conv"):
        convert(nn.Sequential(conv))


class StandardizedConv2d(nn.Conv2d):
    """A subclass whose forward computes something else than its convolution (as timm's StdConv2d)."""

    def forward(self, input):
        weight = (self.weight - self.weight.mean((1, 2, 3), keepdim=True)) / self.weight.std((1, 2, 3), keepdim=True)
        return self._conv_forward(input, weight, self.bias)


def mixed_net():
    torch.manual_seed(2)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), StandardizedConv2d(4, 4, 3, padding=1),
                         nn.Conv2d(4, 4, 1), nn.ConvTranspose2d(4, 4, 3), nn.Sequential(nn.Conv3d(1, 1, 3)))


def test_the_summary_names_what_was_converted_and_what_was_left_and_why(caplog):
    with pytest.warns(UserWarning, match=r"convert: 1 of 5 convolutions converted") as record:
        net, summary = convert(mixed_net(), skip=skip_pointwise, return_summary=True)
    assert isinstance(summary, ConversionSummary) and summary.converted == ["0"]
    assert list(summary.skipped) == ["1", "2", "3", "4.0"] and summary.skipped["2"] == "kept by skip"
    assert "StandardizedConv2d is a subclass of nn.Conv2d" in summary.skipped["1"]
    assert "transposed convolution" in summary.skipped["3"] and "no ConvNorm3d" in summary.skipped["4.0"]
    assert all(name in str(record[0].message) for name in ("'1'", "'3'", "'4.0'"))
    assert [type(m) for m in net[:4]] == [ConvNorm2d, StandardizedConv2d, nn.Conv2d, nn.ConvTranspose2d]
    caplog.set_level(logging.INFO, logger="convnorm.conversion")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left but what skip keeps: no warning
        convert(small_net(), skip=skip_pointwise)
    assert "convert: 2 of 3 convolutions converted\n  left '3.1': kept by skip" in caplog.text
    assert convert(net, return_summary=True, skip=["1", "3", "4.0"])[1].converted == ["2"]  # ConvNorm layers stay
    with pytest.warns(UserWarning, match="LazyConv2d is a lazy convolution whose parameters are not"):
        convert(nn.Sequential(nn.LazyConv2d(4, 3)))


def test_strict_raises_on_the_first_convolution_it_cannot_convert_and_changes_nothing():
    net = mixed_net()
    with pytest.raises(ValueError, match=r"cannot convert layer '1': StandardizedConv2d is a subclass .*strict=True"):
        convert(net, strict=True)
    assert type(net[0]) is nn.Conv2d
    converted = convert(net, skip=["1", "3", "4.0"], strict=True)  # what skip keeps is not refused
    assert isinstance(converted[0], ConvNorm2d) and isinstance(converted[2], ConvNorm2d)


def test_a_parametrized_convolution_keeps_its_parametrization_and_its_parameters():
    from torch.nn.utils.parametrizations import spectral_norm

    torch.manual_seed(3)
    conv = spectral_norm(nn.Conv2d(3, 4, 3, padding=1))
    original = conv.parametrizations.weight.original
    net = convert(nn.Sequential(conv))
    layer = net[0]
    assert isinstance(layer, ConvNorm2d) and layer.parametrizations.weight.original is original
    assert layer.bias is conv.bias
    layer.eval()
    x = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(layer(x), conv_norm(x, layer.weight, layer.bias, padding=1,
                                                   affine_weight=layer.affine_weight))
    torch.testing.assert_close(layer.weight, conv.weight)  # the spectral-normalized weight, as the conv's


def test_a_legacy_spectral_norm_convolution_is_a_value_error_naming_the_layer():
    legacy = nn.utils.spectral_norm(nn.Conv2d(3, 4, 3, padding=1))
    net = nn.Sequential(nn.Conv2d(3, 3, 3, padding=1), legacy)
    with pytest.raises(ValueError, match=r"cannot convert layer '1': conv's weight is not a parameter of it but "
                                         r"computed by a hook .*remove_spectral_norm"):
        convert(net)
    assert type(net[0]) is nn.Conv2d
    assert isinstance(convert(nn.Sequential(nn.utils.remove_spectral_norm(legacy)))[0], ConvNorm2d)


def test_from_conv_classmethods_and_what_they_refuse():
    conv = nn.Conv2d(3, 4, 3, stride=2, padding=1, groups=1, bias=False)
    layer = ConvNorm2d.from_conv(conv, eps=1e-3)
    assert layer.weight is conv.weight and layer.eps == 1e-3 and layer.stride == (2, 2) and layer.bias is None
    assert ConvNorm1d.from_conv(nn.Conv1d(2, 3, 5)).weight.shape == (3, 2, 5)
    for cls, refused, match in [
        (ConvNorm1d, nn.Conv2d(2, 3, 3), "conv must be an nn.Conv1d, got Conv2d"),
        (ConvNorm2d, nn.Conv3d(2, 3, 3), "conv must be an nn.Conv2d, got Conv3d"),
        (ConvNorm2d, nn.ConvTranspose2d(2, 3, 3), "conv must be an nn.Conv2d, got ConvTranspose2d"),
        (ConvNorm2d, layer, "conv must be an nn.Conv2d, got ConvNorm2d"),
        (ConvNorm2d, nn.LazyConv2d(3, 3), "lazy convolution whose parameters are not initialised"),
        (ConvNorm2d, nn.Conv2d(2, 3, 3, padding_mode="reflect"), "padding_mode must be one of"),
    ]:
        with pytest.raises(ValueError, match=match):
            cls.from_conv(refused)
    with pytest.raises(ValueError, match="the options of the new layers are"):
        ConvNorm2d.from_conv(conv, padding=1)


def test_the_module_and_the_function_are_named_apart():
    from pathlib import Path

    import convnorm
    import convnorm.conversion

    assert convnorm.convert is convnorm.conversion.convert and callable(convnorm.convert)
    package = Path(convnorm.conversion.__file__).parent
    assert not (package / "convert.py").exists()  # no module hidden behind the function


def test_revert_gives_the_convolution_a_representable_layer_computes():
    """A 1x1 layer (its normalizer a constant per channel), trained a few steps, and a 3x3 layer whose
    kernels have one tap each (its autocorrelation a delta) revert to convolutions computing what
    they compute in evaluation, at any input size."""
    torch.manual_seed(4)
    pointwise = ConvNorm2d(3, 4, 1, bias=True)
    optimizer = torch.optim.SGD(pointwise.parameters(), lr=0.1)
    for _ in range(3):
        pointwise(torch.randn(2, 3, 6, 6)).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    one_tap = ConvNorm2d(2, 3, 3, stride=2, padding=1)
    with torch.no_grad():
        mask = torch.zeros_like(one_tap.weight).view(6, 9)
        mask[torch.arange(6), torch.randint(0, 9, (6,))] = 1
        one_tap.weight.mul_(mask.view_as(one_tap.weight))
        one_tap.affine_weight.mul_(1.5)  # a multiple of the centred delta
    for layer, c_in in ((pointwise, 3), (one_tap, 2)):
        layer.eval()
        conv = revert(nn.Sequential(layer))[0]
        assert type(conv) is layer._conv and not conv.training and conv.weight is not layer.weight
        for size in (7, 12):
            x = torch.randn(2, c_in, size, size)
            torch.testing.assert_close(conv(x), layer(x))


def test_revert_refuses_a_layer_no_convolution_represents_and_changes_nothing():
    net = nn.Sequential(ConvNorm2d(3, 4, 1), ConvNorm2d(4, 4, 3, padding=1))
    with pytest.raises(ValueError, match=r"cannot revert layer '1': its normalizer is a filter as large as the input"):
        revert(net)
    assert all(isinstance(m, ConvNorm2d) for m in net)
    affine = ConvNorm2d(3, 4, 3)
    with torch.no_grad():
        affine.weight.zero_()[:, :, 0, 0] = 1
        affine.affine_weight[:, 0, 0] = 0.5
    with pytest.raises(ValueError, match="cannot revert layer '<model>': its affine kernel is not a multiple"):
        revert(affine)
