"""convnorm.functional, the numbers: every computation of conv_norm equals the equation,
convnorm.reference.conv_norm_reference (itself checked against dense matrices in
test_reference.py), outputs and gradients; the circular layer is a tight frame per output
channel, stride is downsampling, 1x1 is division by the kernel norm, the weight gradient is
the stop-gradient one, and a running average normalizes as the weights it averages. Argument
errors are in test_functional_arguments.py, the choice of computation in
test_computation_policy.py."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from convnorm.fourier import kernel_autocorrelation
from convnorm.functional import conv_norm, conv_norm1d, conv_norm2d, current_policy, use_policy
from convnorm.reference import conv_norm_reference

CONV = {1: F.conv1d, 2: F.conv2d}


@pytest.fixture(params=["spatial", "frequency-domain", "frequency-domain-per-axis"])
def each_computation(request):
    """The test runs through each computation of conv_norm: the spatial one (full
    convolution, then the spectral filter) and the frequency domain (forced for every
    eligible layer, whatever its size and stride), the latter also with every map
    transformed axis by axis (no dense 2D transforms, which small maps otherwise get).
    Set for the test only, by the policy's context manager."""
    way = request.param.removesuffix("-per-axis").replace("-", "_")
    policy = current_policy().forcing(way)
    if request.param.endswith("per-axis"):
        policy = replace(policy, dense_2d_max_pixels=0)
    with use_policy(policy):
        yield request.param


ZEROS_CASES = [
    # d, n, k, padding, stride, dilation, groups
    (2, (8, 8), 3, 1, 1, 1, 1),
    (2, (7, 9), 3, 0, 1, 1, 1),
    (2, (8, 8), 3, 2, 1, 1, 1),
    (2, (8, 6), 3, 1, 2, 1, 1),   # L = 10, 8: stride folded into the spectrum
    (2, (9, 9), 3, 1, 2, 1, 1),   # L = 11: stride by slicing
    (2, (10, 10), 3, 1, 3, 1, 1),
    (2, (8, 8), 2, 1, 1, 1, 1),   # even kernel
    (2, (9, 8), 5, 2, 2, 1, 2),   # groups
    (2, (9, 9), 3, 2, 1, 2, 1),   # dilation
    (1, (11,), 3, 1, 1, 1, 1),
    (1, (10,), 4, 3, 2, 1, 1),
    (1, (12,), 3, 1, 1, 3, 2),
]


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("d, n, k, padding, stride, dilation, groups", ZEROS_CASES)
def test_zeros_mode_is_the_equation(d, n, k, padding, stride, dilation, groups):
    torch.manual_seed(0)
    x = torch.randn(2, 4, *n, dtype=torch.float64)
    w = torch.randn(6, 4 // groups, *([k] * d), dtype=torch.float64)
    b = torch.randn(6, dtype=torch.float64)
    got = conv_norm(x, w, b, stride, padding, dilation, groups, eps=0.0)
    want = conv_norm_reference(x, w, b, stride, padding, dilation, groups, eps=0.0)
    assert got.shape == CONV[d](x, w, b, stride, padding, dilation, groups).shape
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("d, n, k, stride", [(2, (8, 8), 3, 1), (2, (7, 8), 5, 2), (2, (9, 9), 3, 3), (1, (9,), 3, 2)])
def test_circular_mode_is_the_equation(d, n, k, stride):
    torch.manual_seed(1)
    x = torch.randn(2, 3, *n, dtype=torch.float64)
    w = torch.randn(5, 3, *([k] * d), dtype=torch.float64)
    got = conv_norm(x, w, None, stride, (k - 1) // 2, padding_mode="circular", eps=0.0)
    want = conv_norm_reference(x, w, None, stride, (k - 1) // 2, padding_mode="circular", eps=0.0)
    torch.testing.assert_close(got, want)


def operator_matrix(fn, c_in, size):
    """Dense matrix of a linear map (C_in, *size) -> (C_out, *out), from its basis images."""
    numel = c_in * size[0] * size[1]
    basis = torch.eye(numel, dtype=torch.float64).reshape(numel, c_in, *size)
    return fn(basis).reshape(numel, -1).T


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("n, k", [((6, 6), 3), ((5, 7), 3), ((6, 5), 5)])
def test_circular_mode_is_a_tight_frame_per_channel(n, k):
    """Q_k Q_kᵀ = I, and Q_k = (A_k A_kᵀ)^(-1/2) A_k, from the layer's own operator matrix."""
    torch.manual_seed(2)
    c_in, c_out, p = 3, 4, (k - 1) // 2
    w = torch.randn(c_out, c_in, k, k, dtype=torch.float64)
    q = operator_matrix(lambda x: conv_norm2d(x, w, padding=p, padding_mode="circular", eps=0.0), c_in, n)
    a = operator_matrix(lambda x: F.conv2d(F.pad(x, [p] * 4, mode="circular"), w), c_in, n)
    rows = n[0] * n[1]
    for ch in range(c_out):
        q_k, a_k = q[ch * rows:(ch + 1) * rows], a[ch * rows:(ch + 1) * rows]
        torch.testing.assert_close(q_k @ q_k.T, torch.eye(rows, dtype=torch.float64), rtol=0, atol=1e-10)
        evals, evecs = torch.linalg.eigh(a_k @ a_k.T)
        torch.testing.assert_close(q_k, evecs @ torch.diag(evals.rsqrt()) @ evecs.T @ a_k, rtol=0, atol=1e-9)


@pytest.mark.usefixtures("each_computation")
def test_eps_shrinks_the_frame_by_s_over_s_plus_eps():
    torch.manual_seed(3)
    w = torch.randn(1, 2, 3, 3, dtype=torch.float64)
    eps = 0.3
    q = operator_matrix(lambda x: conv_norm2d(x, w, padding=1, padding_mode="circular", eps=eps), 2, (5, 5))
    s = (torch.fft.fft2(w, s=(5, 5)).abs() ** 2).sum(1).flatten()
    torch.testing.assert_close(torch.linalg.eigvalsh(q @ q.T), (s / (s + eps)).sort().values)


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("mode, n, stride", [("zeros", (10, 10), 2), ("zeros", (9, 11), 2), ("zeros", (12, 12), 3),
                                             ("circular", (8, 8), 2), ("circular", (9, 8), 2)])
def test_stride_is_the_downsampled_stride_one_output(mode, n, stride):
    torch.manual_seed(4)
    x = torch.randn(2, 3, *n, dtype=torch.float64)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    rho = torch.randn(4, 3, 3, dtype=torch.float64)
    full = conv_norm2d(x, w, padding=1, padding_mode=mode, affine_weight=rho)
    strided = conv_norm2d(x, w, stride=stride, padding=1, padding_mode=mode, affine_weight=rho)
    torch.testing.assert_close(strided, full[..., ::stride, ::stride])


@pytest.mark.parametrize("stride", [1, 2])
def test_one_by_one_divides_each_channel_by_its_kernel_norm(stride):
    torch.manual_seed(5)
    x = torch.randn(2, 6, 7, 7, dtype=torch.float64)
    w = torch.randn(5, 6, 1, 1, dtype=torch.float64)
    want = F.conv2d(x, w, stride=stride) / w.flatten(1).norm(dim=1).reshape(1, 5, 1, 1)
    torch.testing.assert_close(conv_norm2d(x, w, stride=stride, eps=0.0), want)


@pytest.mark.usefixtures("each_computation")
def test_affine_kernel_is_a_circular_filter_before_the_crop():
    torch.manual_seed(6)
    x = torch.randn(2, 3, 8, 7, dtype=torch.float64)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    rho = torch.randn(4, 3, 3, dtype=torch.float64)
    got = conv_norm2d(x, w, padding=1, stride=2, affine_weight=rho, eps=0.0)
    torch.testing.assert_close(got, conv_norm_reference(x, w, None, 2, 1, eps=0.0, affine_weight=rho))
    delta = torch.zeros(4, 3, 3, dtype=torch.float64)
    delta[:, 1, 1] = 1
    torch.testing.assert_close(conv_norm2d(x, w, padding=1, affine_weight=delta), conv_norm2d(x, w, padding=1))


GRADIENT_CASES = [((7, 8), 2, "zeros"), ((8, 9), 2, "zeros"), ((9, 9), 1, "zeros"), ((8, 8), 2, "circular"),
                  ((7, 6), 3, "circular")]
LARGE_GRADIENT_CASES = [((50, 49), 2, "zeros"), ((51, 52), 2, "circular"), ((49, 50), 1, "zeros")]
"""Normalized at more than the policy's ``dense_dft_max_length`` per axis, so by FFTs (the GPU's
transforms) whatever the policy: with the stride folded into the spectrum (52 rows), not (51
rows), and stride 1."""


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("stop_gradient", [True, False])
@pytest.mark.parametrize("size, stride, mode", GRADIENT_CASES)
def test_gradients_match_the_reference(stop_gradient, size, stride, mode):
    """Input, weight and affine gradients (the hand-written backward with stop-gradient,
    autograd without) equal autograd through the equation."""
    gradients_match_the_reference(stop_gradient, size, stride, mode)


@pytest.mark.parametrize("stop_gradient", [True, False])
@pytest.mark.parametrize("size, stride, mode", LARGE_GRADIENT_CASES)
def test_gradients_match_the_reference_with_ffts(stop_gradient, size, stride, mode):
    """The same at the sizes only FFTs transform."""
    gradients_match_the_reference(stop_gradient, size, stride, mode)


def gradients_match_the_reference(stop_gradient, size, stride, mode):
    torch.manual_seed(7)
    x = torch.randn(2, 3, *size, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64, requires_grad=True)
    rho = torch.randn(4, 2, 3, dtype=torch.float64, requires_grad=True)
    out = conv_norm2d(x, w, None, stride, 1, padding_mode=mode, affine_weight=rho, eps=1e-3,
                      stop_gradient=stop_gradient)
    probe = torch.randn_like(out)
    want = conv_norm_reference(x, w, None, stride, 1, padding_mode=mode, eps=1e-3, affine_weight=rho,
                               stop_gradient=stop_gradient)
    grads = [torch.autograd.grad((o * probe).sum(), (x, w, rho)) for o in (out, want)]
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want)


def test_stop_gradient_drops_the_normalizer_term():
    """With the stop-gradient the weight gradient is the conv's gradient scaled by v:
    for a 1x1 kernel, d/da of <probe, (a/|a|) * x> is probe·x / |a|, not its projection."""
    torch.manual_seed(8)
    x = torch.randn(3, 4, 5, 5, dtype=torch.float64)
    w = torch.randn(1, 4, 1, 1, dtype=torch.float64, requires_grad=True)
    probe = torch.randn(3, 1, 5, 5, dtype=torch.float64)
    (g_stop,) = torch.autograd.grad((conv_norm2d(x, w, eps=0.0) * probe).sum(), w)
    (g_full,) = torch.autograd.grad((conv_norm2d(x, w, eps=0.0, stop_gradient=False) * probe).sum(), w)
    raw = (probe * x).sum((0, 2, 3)).reshape(1, 4, 1, 1)
    torch.testing.assert_close(g_stop, raw / w.norm())
    u = (w / w.norm()).detach()
    torch.testing.assert_close(g_full, (raw - (raw * u).sum() * u) / w.norm())


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_cpu_returns_the_autocast_dtype_from_float32_ffts(dtype):
    torch.manual_seed(9)
    x = torch.randn(2, 3, 8, 8)
    w = torch.randn(4, 3, 3, 3)
    with torch.autocast("cpu", dtype=dtype):
        got = conv_norm2d(x, w, padding=1)
        conv_dtype = F.conv2d(x, w, padding=1).dtype
    assert got.dtype == conv_dtype == dtype
    torch.testing.assert_close(got.float(), conv_norm2d(x, w, padding=1), rtol=1e-2, atol=2e-2)


def test_one_dimensional_wrapper_matches_generic():
    x = torch.randn(2, 3, 9, dtype=torch.float64)
    w = torch.randn(4, 3, 3, dtype=torch.float64)
    torch.testing.assert_close(conv_norm1d(x, w, padding=1), conv_norm(x, w, padding=1))


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("size", [(2, 2), (2, 5), (3, 4), (4, 3), (5, 2), (3, 3), (4, 4), (5, 5)])
def test_odd_and_even_sizes_are_the_equation(size):
    """Odd and even normalization sizes per axis, every pair of parities and every size from 2
    to 5 on each axis (with a 1x2 kernel too):
    output and input, weight and affine gradients equal the plain reference (in the
    frequency domain the repeated frequencies of the half spectrum are filled in as
    conjugates and their gradients folded back)."""
    torch.manual_seed(sum(size))
    x = torch.randn(2, 3, *size, dtype=torch.float64, requires_grad=True)
    for kernel, padding, stride in (((3, 3), 1, 1), ((2, 2), 0, 2), ((1, 2), 0, 1)):
        w = torch.randn(4, 3, *kernel, dtype=torch.float64, requires_grad=True)
        taps = [min(3, n + m - 1) for n, m in zip(size, kernel)]
        rho = torch.randn(4, *taps, dtype=torch.float64, requires_grad=True)
        out = conv_norm2d(x, w, None, stride, padding, affine_weight=rho, eps=1e-3)
        want = conv_norm_reference(x, w, None, stride, padding, eps=1e-3, affine_weight=rho)
        torch.testing.assert_close(out, want)
        probe = torch.randn_like(out)
        grads = [torch.autograd.grad((o * probe).sum(), (x, w, rho)) for o in (out, want)]
        for got, expected in zip(*grads):
            torch.testing.assert_close(got, expected)


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("stride", [1, 2])
def test_empty_batch_gives_an_empty_output_and_zero_gradients(stride):
    """Like nn.Conv2d, a batch of no samples is an empty output, and gradients of zero."""
    x = torch.randn(0, 3, 8, 8, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    rho = torch.randn(4, 3, 3, requires_grad=True)
    out = conv_norm2d(x, w, None, stride, 1, affine_weight=rho)
    assert out.shape == (0, 4, 8 // stride, 8 // stride)
    grad_w, grad_rho = torch.autograd.grad(out.sum(), (w, rho))
    assert not grad_w.any() and not grad_rho.any()


REFERENCE_CASES = [
    # d, n, k, padding, stride, dilation, groups, padding_mode, affine taps
    (2, (8, 8), 3, 1, 1, 1, 1, "zeros", (3, 3)),
    (2, (7, 9), 3, 0, 2, 1, 1, "zeros", (2, 3)),
    (2, (9, 8), 5, 2, 2, 1, 2, "zeros", (5, 1)),
    (2, (9, 9), 3, 2, 1, 2, 1, "zeros", (3, 3)),
    (2, (8, 7), 2, 1, 3, 1, 1, "zeros", (4, 4)),
    (2, (9, 8), 3, 1, 2, 1, 1, "circular", (3, 3)),
    (2, (9, 9), 3, 2, 1, 2, 3, "circular", (1, 1)),
    (2, (6, 6), 1, 0, 2, 1, 1, "zeros", (1, 1)),
    (1, (11,), 3, 1, 1, 1, 1, "zeros", (3,)),
    (1, (12,), 4, 3, 2, 2, 2, "zeros", (5,)),
    (1, (10,), 5, 2, 3, 1, 1, "circular", (2,)),
]


def reference_case(d, n, k, groups, affine_taps, seed):
    """Random float64 input, weight, bias and affine kernel (all requiring grad) of one case."""
    torch.manual_seed(seed)
    c_in, c_out = 3 * groups, 2 * groups
    x = torch.randn(2, c_in, *n, dtype=torch.float64, requires_grad=True)
    w = torch.randn(c_out, c_in // groups, *([k] * d), dtype=torch.float64, requires_grad=True)
    b = torch.randn(c_out, dtype=torch.float64, requires_grad=True)
    rho = torch.randn(c_out, *affine_taps, dtype=torch.float64, requires_grad=True)
    return x, w, b, rho


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("case", REFERENCE_CASES)
@pytest.mark.parametrize("stop_gradient", [True, False])
def test_every_computation_is_the_reference(case, stop_gradient):
    """conv_norm, however it computes a layer, equals conv_norm_reference: outputs to 1e-12 and
    input, weight, affine and bias gradients."""
    d, n, k, padding, stride, dilation, groups, mode, taps = case
    x, w, b, rho = reference_case(d, n, k, groups, taps, seed=len(n) + k)
    args = (b, stride, padding, dilation, groups, mode, 1e-3, rho)
    got, want = (f(x, w, *args, stop_gradient=stop_gradient) for f in (conv_norm, conv_norm_reference))
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    probe = torch.randn_like(got)
    grads = [torch.autograd.grad((o * probe).sum(), (x, w, rho, b)) for o in (got, want)]
    for a, e in zip(*grads):
        torch.testing.assert_close(a, e, rtol=1e-10, atol=1e-10)


@pytest.mark.usefixtures("each_computation")
@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_a_running_average_normalizes_as_the_weights_it_averages(case):
    """In evaluation, a running average of the autocorrelation normalizes as a weight whose
    autocorrelation it is: the average of r(a) and r(2a) is r(sqrt(2.5) a), so with eps = 0 the
    output is the equation's divided by sqrt(2.5); before any training step, the weight's own."""
    d, n, k, padding, stride, dilation, groups, mode, taps = case
    x, w, _, rho = reference_case(d, n, k, groups, taps, seed=len(n) + 2 * k)
    args = (None, stride, padding, dilation, groups, mode, 0.0, rho)
    running = 0.5 * kernel_autocorrelation(w.detach()) + 0.5 * kernel_autocorrelation(2 * w.detach())
    want = conv_norm_reference(x, w, *args)
    for steps, scale in ((1, 2.5 ** -0.5), (0, 1.0)):
        got = conv_norm(x, w, *args, running_autocorrelation=running, num_steps_tracked=torch.tensor(steps))
        torch.testing.assert_close(got, scale * want, rtol=1e-10, atol=1e-10)
