"""Tests for convnorm.spectral: singular values of circular 1D and 2D conv layers, checked against
dense matrices, and no change to torch's threads."""
import pytest
import torch
import torch.nn.functional as F

from convnorm.fourier import kernel_power_spectrum
from convnorm.reference import conv_norm_reference
from convnorm.spectral import (
    analyse_conv_layers,
    channel_condition_numbers,
    conv_singular_values,
    conv_spectrum,
    convnorm_singular_values,
    convnorm_spectrum,
    layer_spectral_norm,
    operator_matrix,
    spectrum_singular_values,
)

# (C_O, C_I, k_h, k_w, n_1, n_2): wide and tall layers, odd and even sizes, even and 1x1 kernels
SHAPES = [(3, 2, 3, 3, 5, 6), (2, 4, 3, 2, 4, 5), (3, 3, 1, 1, 3, 4), (2, 3, 2, 2, 6, 3)]


def circular_conv(weight):
    kh, kw = weight.shape[2:]
    return lambda x: F.conv2d(F.pad(x, (kw - 1, 0, kh - 1, 0), mode="circular"), weight)


@pytest.mark.parametrize("shape", SHAPES)
def test_singular_values_match_dense_operator(shape):
    c_o, c_i, kh, kw, n1, n2 = shape
    weight = torch.randn(c_o, c_i, kh, kw, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    dense = operator_matrix(circular_conv(weight), (c_i, n1, n2))
    assert dense.shape == (c_o * n1 * n2, c_i * n1 * n2)
    expected = torch.linalg.svdvals(dense)[: n1 * n2 * min(c_o, c_i)]
    torch.testing.assert_close(conv_singular_values(weight, (n1, n2)), expected)
    torch.testing.assert_close(layer_spectral_norm(weight, (n1, n2)), expected[0])


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[2] % 2 and s[3] % 2])  # circular mode: odd kernels
def test_convnorm_singular_values_match_dense_normalized_operator(shape):
    c_o, c_i, kh, kw, n1, n2 = shape
    weight = torch.randn(c_o, c_i, kh, kw, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    dense = operator_matrix(lambda x: conv_norm_reference(x, weight, padding=kh // 2, padding_mode="circular", eps=0.0),
                            (c_i, n1, n2))
    expected = torch.linalg.svdvals(dense)[: n1 * n2 * min(c_o, c_i)]
    torch.testing.assert_close(convnorm_singular_values(weight, (n1, n2)), expected)
    # every output channel becomes a tight frame: Q_k Q_k^T = I
    for block in dense.reshape(c_o, n1 * n2, -1):
        torch.testing.assert_close(block @ block.T, torch.eye(n1 * n2, dtype=torch.float64))


def test_spectrum_rows_give_power_spectrum_and_unit_rows_after_normalization():
    weight = torch.randn(5, 3, 3, 3, dtype=torch.float64)
    spectrum = conv_spectrum(weight, (7, 6))
    assert spectrum.shape == (7, 4, 5, 3)
    power = spectrum.abs().square().sum(-1).permute(2, 0, 1)
    torch.testing.assert_close(power, kernel_power_spectrum(weight, (7, 6)))
    rows = convnorm_spectrum(weight, (7, 6)).abs().square().sum(-1)
    torch.testing.assert_close(rows, torch.ones_like(rows))


@pytest.mark.parametrize("c_o, c_i, k, n", [(3, 2, 3, 7), (2, 4, 4, 8), (3, 3, 1, 5)])
def test_one_dimensional_layers_match_dense_operators(c_o, c_i, k, n):
    """The same functions take (C_out, C_in, k) weights: singular values, spectral norm and
    channel condition numbers of the circular 1D layer, with and without ConvNorm."""
    weight = torch.randn(c_o, c_i, k, dtype=torch.float64, generator=torch.Generator().manual_seed(k))
    dense = operator_matrix(lambda x: F.conv1d(F.pad(x, (k - 1, 0), mode="circular"), weight), (c_i, n))
    expected = torch.linalg.svdvals(dense)[: n * min(c_o, c_i)]
    torch.testing.assert_close(conv_singular_values(weight, n), expected)
    torch.testing.assert_close(layer_spectral_norm(weight, n), expected[0])
    assert conv_spectrum(weight, n).shape == (n // 2 + 1, c_o, c_i)
    channels = [torch.linalg.svdvals(block) for block in dense.reshape(c_o, n, -1)]
    torch.testing.assert_close(channel_condition_numbers(weight, n), torch.stack([s[0] / s[-1] for s in channels]))
    torch.testing.assert_close(channel_condition_numbers(weight, n, normalized=True),
                               torch.ones(c_o, dtype=torch.float64))
    if k % 2:
        normalized = operator_matrix(
            lambda x: conv_norm_reference(x, weight, padding=k // 2, padding_mode="circular", eps=0.0), (c_i, n))
        torch.testing.assert_close(convnorm_singular_values(weight, n),
                                   torch.linalg.svdvals(normalized)[: n * min(c_o, c_i)])


def test_no_function_changes_torch_threads():
    """The analysis runs on the caller's threads: a forward during analyse_conv_layers sees the
    thread count the caller set, and it is the same afterwards."""
    seen = []
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1))
    model.register_forward_pre_hook(lambda module, args: seen.append(torch.get_num_threads()))
    previous = torch.get_num_threads()
    torch.set_num_threads(2)  # more than one, so that a change to one thread would show
    try:
        analyse_conv_layers(model, 8)
        layer_spectral_norm(model[0].weight.detach(), 8)
        conv_singular_values(model[0].weight.detach(), 8)
        assert seen == [2] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)


def test_condition_numbers_and_norm_bound():
    weight = torch.randn(6, 4, 3, 3, dtype=torch.float64)
    size = (8, 8)
    a_k = operator_matrix(circular_conv(weight[:1]), (4, *size))  # output channel 0 alone
    s = torch.linalg.svdvals(a_k)
    torch.testing.assert_close(channel_condition_numbers(weight, size)[0], s[0] / s[-1])
    torch.testing.assert_close(channel_condition_numbers(weight, size, normalized=True),
                               torch.ones(6, dtype=torch.float64))
    # Proposition 3.1 with unit-norm channels: ||Q|| <= sqrt(C_O); and ConvNorm is scale-free
    assert layer_spectral_norm(weight, size, normalized=True) <= 6**0.5 + 1e-12
    torch.testing.assert_close(layer_spectral_norm(10 * weight, size, normalized=True),
                               layer_spectral_norm(weight, size, normalized=True))
    with_eps = channel_condition_numbers(weight, size, normalized=True, eps=1.0)
    assert (with_eps > 1).all()


def test_multiplicities_follow_the_half_spectrum():
    weight = torch.randn(2, 2, 3, 3, dtype=torch.float64)
    for size in [(4, 4), (5, 5), (4, 7)]:
        values = spectrum_singular_values(conv_spectrum(weight, size), size)
        assert values.numel() == 2 * size[0] * size[1]
        assert torch.all(values[:-1] >= values[1:])


def test_analyse_conv_layers_records_input_sizes_and_skips_pointwise():
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(4, 8, 3, stride=2, padding=1), torch.nn.Conv2d(8, 8, 1), torch.nn.Conv2d(8, 2, 3, padding=1),
    )
    report = analyse_conv_layers(model, (12, 10))
    assert [r.input_size for r in report] == [(12, 10), (12, 10), (6, 5)]
    assert [r.name for r in report] == ["0", "2", "4"]
    assert all(abs(r.condition_number_convnorm - 1) < 1e-5 for r in report)
    torch.testing.assert_close(torch.tensor(report[1].spectral_norm),
                               layer_spectral_norm(model[2].weight.detach(), (12, 10)))
    assert len(analyse_conv_layers(model, (12, 10), skip_pointwise=False)) == 4


def test_bad_input_raises():
    with pytest.raises(ValueError, match="weight must have shape"):
        conv_singular_values(torch.randn(2, 3), 8)
    with pytest.raises(ValueError, match="larger than the input"):
        conv_singular_values(torch.randn(2, 3, 5, 5), 4)
    with pytest.raises(ValueError, match="input_size"):
        conv_singular_values(torch.randn(2, 3, 3, 3), (4, 0))
    with pytest.raises(ValueError, match="non-finite"):
        conv_singular_values(torch.full((2, 3, 3, 3), float("nan")), 4)
    with pytest.raises(ValueError, match="spectrum must have shape"):
        spectrum_singular_values(torch.zeros(4, 4, 2, 2, dtype=torch.complex128), (4, 4))
    with pytest.raises(ValueError, match="eps"):
        channel_condition_numbers(torch.randn(2, 3, 3, 3), 4, eps=-1.0)
    with pytest.raises(ValueError, match="input_shape"):
        operator_matrix(lambda x: x, (0, 3))
    with pytest.raises(ValueError, match="grouped or dilated"):
        analyse_conv_layers(torch.nn.Conv2d(4, 4, 3, groups=2), 8, in_channels=4)


def test_deployed_spectrum_is_the_evaluation_mode_operator():
    # a trained (running normalizer) ConvNorm layer with a random affine kernel and circular
    # padding: the per-frequency analysis gives the dense operator's singular values
    from convnorm.layers import ConvNorm2d
    from convnorm.spectral import deployed_spectrum, operator_matrix, spectrum_singular_values

    torch.manual_seed(0)
    for size in (5, 6):
        layer = ConvNorm2d(2, 3, 3, padding=1, padding_mode="circular", bias=False).double()
        layer(torch.randn(4, 2, size, size, dtype=torch.float64))  # one training forward
        with torch.no_grad():
            layer.weight.add_(0.3 * torch.randn_like(layer.weight))  # running != current normalizer
            layer.affine_weight.copy_(torch.randn_like(layer.affine_weight))
        layer.eval()
        dense = torch.linalg.svdvals(operator_matrix(layer, (2, size, size)).detach())
        ours = spectrum_singular_values(deployed_spectrum(layer, size), size)
        assert torch.allclose(ours, dense[: len(ours)], rtol=1e-10, atol=1e-12)
        # the raw P_k A_k analysis of the current weights is a different operator
        raw = spectrum_singular_values(convnorm_spectrum(layer.weight.detach(), size, layer.eps), size)
        assert not torch.allclose(raw, ours, rtol=1e-3)


def test_deployed_spectrum_with_batchnorm_scales_rows():
    from convnorm.spectral import deployed_channel_condition_numbers, deployed_spectrum

    torch.manual_seed(1)
    conv = torch.nn.Conv2d(3, 4, 3, bias=False).double()
    bn = torch.nn.BatchNorm2d(4).double()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([2.0, -1.0, 0.5, 3.0]))
        bn.running_var.copy_(torch.tensor([4.0, 1.0, 0.25, 9.0]))
    plain, scaled = deployed_spectrum(conv, 8), deployed_spectrum(conv, 8, bn)
    gain = (bn.weight.abs() / (bn.running_var + bn.eps).sqrt()).detach()
    assert torch.allclose(scaled, plain * gain[:, None].to(plain.dtype))
    # a per-channel gain leaves each channel's condition number unchanged
    assert torch.allclose(deployed_channel_condition_numbers(scaled), deployed_channel_condition_numbers(plain))
    assert torch.allclose(deployed_channel_condition_numbers(plain),
                          channel_condition_numbers(conv.weight.detach().double(), 8))
