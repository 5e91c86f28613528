"""The frequency domain by matrix products only (convnorm._frequency_gemm): the layer and its
gradients in float64 to the reference's rounding; in bfloat16 and float16 under CPU autocast,
rounded as on a GPU, within bounds set by the dtypes' rounding; chosen by the policy where it
can take the layer (groups and dilation fall back to the spatial computation); nearly all its
multiply-adds in the autocast dtype; traced by torch.compile without a graph break."""
from __future__ import annotations

import collections
import math
from dataclasses import replace

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

import convnorm._engine
from convnorm._frequency_gemm import frequency_gemm_conv_norm
from convnorm._geometry import layer_geometry
from convnorm.functional import ComputationPolicy, conv_norm, use_policy
from convnorm.layers import ConvNorm2d
from convnorm.reference import conv_norm_reference

POLICY = replace(ComputationPolicy().forcing("frequency_domain"), frequency_domain_gemms=True)

# size, kernel, stride, padding, padding mode, affine taps
CASES = [
    ((8, 8), 3, 1, 1, "zeros", (3, 3)),
    ((8, 8), 3, 2, 1, "zeros", (3, 3)),
    ((5, 7), 3, 2, 1, "zeros", (2, 3)),     # L = 7 (prime) by 9 (odd)
    ((1, 1), 3, 1, 1, "zeros", (1, 1)),     # a 1x1 map
    ((6, 6), 3, 1, 1, "circular", (3, 3)),  # L = n
    ((9, 9), 5, 2, 2, "zeros", (2, 4)),     # even affine taps: the centre's offset
]


def layer(case, n=2, c_in=3, c_out=4, low_pass=False, seed=0, dtype=torch.float64):
    """Input, weight, bias and affine kernel of a layer of ``case``, and its arguments."""
    size, kernel, stride, padding, mode, taps = case
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c_in, *size, generator=g, dtype=dtype)
    w = torch.randn(c_out, c_in, kernel, kernel, generator=g, dtype=dtype)
    if low_pass:  # a box kernel plus 1 %: its spectrum nearly vanishes, where v-hat is largest
        w = torch.ones_like(w) + 0.01 * w
    b = torch.randn(c_out, generator=g, dtype=dtype)
    r = torch.randn(c_out, *taps, generator=g, dtype=dtype)
    return (x, w, b, r), dict(stride=stride, padding=padding, padding_mode=mode)


@pytest.fixture
def calls(monkeypatch):
    """How many times the layer ran by matrix products."""
    counted = collections.Counter()

    def counting(*args):
        counted["gemm"] += 1
        return frequency_gemm_conv_norm(*args)

    monkeypatch.setattr(convnorm._engine, "frequency_gemm_conv_norm", counting)
    return counted


def run(tensors, arguments, autocast=None):
    """The layer's output by matrix products and the leaves it differentiates."""
    leaves = [t.detach().clone().requires_grad_() for t in tensors]
    x, w, b, r = leaves
    with use_policy(POLICY), torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        return conv_norm(x, w, b, affine_weight=r, **arguments), leaves


def reference(tensors, arguments):
    leaves = [t.detach().double().requires_grad_() for t in tensors]
    x, w, b, r = leaves
    return conv_norm_reference(x, w, b, affine_weight=r, **arguments), leaves


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_float64_is_the_reference_layer(case, channels_last, calls):
    """Output and every gradient (input, weight, bias, affine kernel) within 1e-10 of the
    reference in float64 (they differ by float64 rounding, about 1e-14); the output in the
    input's memory format."""
    tensors, arguments = layer(case)
    if channels_last:
        tensors = (tensors[0].contiguous(memory_format=torch.channels_last), *tensors[1:])
    out, leaves = run(tensors, arguments)
    want, want_leaves = reference(tensors, arguments)
    assert calls["gemm"] == 1 and out.dtype == torch.float64
    assert out.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    torch.testing.assert_close(out, want, rtol=0, atol=1e-10)
    grad = torch.randn_like(want)
    for got, expected in zip(torch.autograd.grad(out, leaves, grad), torch.autograd.grad(want, want_leaves, grad)):
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-10)


def relative(got: torch.Tensor, want: torch.Tensor) -> float:
    got, want = got.detach().double(), want.detach()
    return float((got - want).norm() / want.norm())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("low_pass", [False, True])
@pytest.mark.parametrize("case", [((12, 12), 3, 1, 1, "zeros", (3, 3)), ((7, 7), 3, 2, 1, "zeros", (3, 3))])
def test_half_precision_is_within_its_rounding(case, low_pass, dtype, calls):
    r"""Under CPU autocast (the products rounded as on a GPU) the output, in the autocast dtype,
    is within :math:`1.25\,\epsilon` of the float64 layer in relative Frobenius norm, and each
    gradient within :math:`3.75\,\epsilon` (:math:`\epsilon` the dtype's machine epsilon:
    9.8e-3 and 2.9e-2 for bfloat16, 1.2e-3 and 3.7e-3 for float16), on random and low-pass
    kernels alike. Why these bounds: the data are rounded about seven times on the way (input,
    two transforms, folded kernels, products, two inverse transforms), each by at most
    :math:`\epsilon/2` relative, errors of random sign that add in norm (measured: about
    :math:`0.75\,\epsilon`); nothing amplifies them, since the folded kernels are bounded by the
    affine kernel's spectrum and the normalizer is folded in float32. The gradients take the
    same path back and sum the rounded products over samples and frequencies once more
    (measured: at most :math:`0.95\,\epsilon`). The stride-2 layer reads a channels-last input."""
    tensors, arguments = layer(case, n=8, c_in=16, c_out=16, low_pass=low_pass, dtype=torch.float32)
    if arguments["stride"] == 2:
        tensors = (tensors[0].contiguous(memory_format=torch.channels_last), *tensors[1:])
    out, leaves = run(tensors, arguments, autocast=dtype)
    want, want_leaves = reference(tensors, arguments)
    assert calls["gemm"] == 1 and out.dtype == dtype
    eps = torch.finfo(dtype).eps
    assert relative(out, want) <= 1.25 * eps
    grad = torch.randn(want.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    got = torch.autograd.grad(out, leaves, grad.to(dtype))
    for name, g, expected in zip("xwbr", got, torch.autograd.grad(want, want_leaves, grad)):
        assert relative(g, expected) <= 3.75 * eps, name


def plan(size, policy=POLICY, dtype=torch.float32, groups=1, dilation=1, autocast=None):
    x = torch.empty(2, 4, size, size, dtype=dtype)
    w = torch.empty(4, 4 // groups, 3, 3, dtype=dtype)
    geometry = layer_geometry(x, w, 1, dilation, dilation, groups, "zeros")
    return policy.plan(x, tuple(w.shape), geometry, True, autocast)


def test_the_policy_chooses_the_products_where_they_take_the_layer():
    """The products run in the autocast dtype under autocast, else in the computation's dtype
    (float32 for half-precision data); groups and dilation go to the spatial computation, which
    takes them (and gives the reference's layer); the default policy never chooses them."""
    assert plan(8, autocast=torch.bfloat16).gemm_dtype == torch.bfloat16
    assert plan(8, autocast=torch.float16).gemm_dtype == torch.float16
    assert plan(8, dtype=torch.float64).gemm_dtype == torch.float64
    assert plan(8, dtype=torch.bfloat16).gemm_dtype == torch.float32
    chosen = plan(8)
    assert chosen.computation == "frequency_domain" and chosen.frequencies_per_chunk is None
    for fallback in (plan(8, groups=2), plan(8, dilation=2)):
        assert fallback.computation == "spatial" and fallback.gemm_dtype is None
    assert plan(8, policy=ComputationPolicy()).gemm_dtype is None
    assert ComputationPolicy().frequency_domain_gemms is False
    with pytest.raises(ValueError, match="frequency_domain_gemms"):
        ComputationPolicy(frequency_domain_gemms=1)
    g = torch.Generator().manual_seed(3)
    x, w = torch.randn(2, 4, 6, 6, generator=g, dtype=torch.float64), torch.randn(4, 2, 3, 3, generator=g,
                                                                                  dtype=torch.float64)
    with use_policy(POLICY):
        grouped = conv_norm(x, w, padding=2, dilation=2, groups=2)
    torch.testing.assert_close(grouped, conv_norm_reference(x, w, padding=2, dilation=2, groups=2))


FFTS = (torch.ops.aten._fft_r2c.default, torch.ops.aten._fft_c2r.default, torch.ops.aten._fft_c2c.default)


class MultiplyAdds(TorchDispatchMode):
    """Multiply-adds by dtype: the matrix products' as a FLOP counter counts them (half its
    flops), and, apart, the FFTs' at :math:`2.5\\, n \\log_2 n` per transform of :math:`n`
    complex points (:math:`5 n \\log_2 n` flops, the usual count; half that for real data)."""

    def __init__(self):
        super().__init__()
        self.products, self.ffts = collections.Counter(), 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func._overloadpacket in flop_registry:
            self.products[args[0].dtype] += flop_registry[func._overloadpacket](*args, **kwargs, out_val=out) // 2
        elif func in FFTS:
            assert args[0].dtype in (torch.float32, torch.complex64)  # the kernels' spectra: float32
            larger = max(args[0], out, key=torch.Tensor.numel)
            points = math.prod(larger.shape[d] for d in args[1])
            complex_points = larger.numel() if larger.is_complex() else larger.numel() / 2
            self.ffts += 2.5 * complex_points * math.log2(max(points, 2))
        return out


@pytest.mark.parametrize("n, channels, size, stride", [(2, 8, 8, 1), (16, 32, 8, 1), (16, 32, 16, 2)])
def test_most_multiply_adds_are_in_half_precision(n, channels, size, stride):
    """Forward and backward under bfloat16 autocast: at least 80 % of the matrix products'
    multiply-adds in bfloat16 (about 89 % at batch 2, 99 % at 16; the rest: the normalizer's
    small float32 products). The kernels' float32 FFTs do not shrink with the batch: at
    batch 16, counted too, bfloat16 still does at least 80 % of all."""
    g = torch.Generator().manual_seed(4)
    x = torch.randn(n, channels, size, size, generator=g, requires_grad=True)
    w = torch.randn(channels, channels, 3, 3, generator=g, requires_grad=True)
    r = torch.randn(channels, 3, 3, generator=g, requires_grad=True)
    b = torch.randn(channels, generator=g, requires_grad=True)
    with use_policy(POLICY):
        conv_norm(x, w, b, stride=stride, padding=1, affine_weight=r)  # the constants built outside the count
        with MultiplyAdds() as counted:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = conv_norm(x, w, b, stride=stride, padding=1, affine_weight=r)
            out.backward(torch.randn(out.shape, generator=g, dtype=out.dtype))
    products = sum(counted.products.values())
    half = counted.products[torch.bfloat16]
    assert set(counted.products) == {torch.bfloat16, torch.float32}
    assert half >= 0.8 * products
    if n >= 16:
        assert half >= 0.8 * (products + counted.ffts)


def test_the_layer_trains_with_the_products_under_autocast(calls):
    """ConvNorm2d with its running average, under bfloat16 autocast: the products run, the
    output is bfloat16 like a convolution's, and the weight and affine kernel get gradients."""
    torch.manual_seed(5)
    module = ConvNorm2d(4, 6, 3, padding=1, affine=True)
    x = torch.randn(3, 4, 8, 8)
    with use_policy(POLICY), torch.autocast("cpu", dtype=torch.bfloat16):
        out = module(x)
        module(x)
    assert calls["gemm"] == 2 and out.dtype == torch.bfloat16
    out.float().square().sum().backward()
    assert module.weight.grad.dtype == torch.float32 and module.weight.grad.abs().sum() > 0
    affine = [p for name, p in module.named_parameters() if "affine" in name]
    assert affine and all(p.grad is not None and p.grad.abs().sum() > 0 for p in affine)


@pytest.mark.compile
def test_torch_compile_traces_the_layer_whole():
    """A ConvNorm2d under bfloat16 autocast in one graph (``fullgraph``: no host
    synchronisation, no branch on values), with the same output and gradient as eager."""
    torch.manual_seed(6)
    eager, traced = ConvNorm2d(4, 6, 3, stride=2, padding=1), ConvNorm2d(4, 6, 3, stride=2, padding=1)
    traced.load_state_dict(eager.state_dict())
    compiled = torch.compile(traced, backend="aot_eager", fullgraph=True)
    x = torch.randn(2, 4, 8, 8)
    with use_policy(POLICY), torch.autocast("cpu", dtype=torch.bfloat16):
        outs = compiled(x), eager(x)
    assert outs[0].dtype == torch.bfloat16
    torch.testing.assert_close(*outs)
    for out in outs:
        out.float().sum().backward()
    torch.testing.assert_close(traced.weight.grad, eager.weight.grad)
