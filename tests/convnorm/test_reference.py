"""convnorm.reference: the equation, checked against the paper's definitions with dense matrices
and no Fourier transform. Circular padding: each output channel is P_k A_k with
P_k = (A_k A_k^T + eps I)^(-1/2). Zero padding: the full output normalized by the same P_k of the
circular operator at the full size L, then cropped and strided. The affine kernel is a centred
circular cross-correlation before the crop, the bias comes last, and the stop-gradient keeps P_k
out of the weight gradient. (The fast computations are compared with this function in
test_functional.py.)"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from convnorm.functional import conv_norm
from convnorm.reference import conv_norm_reference
from convnorm.spectral import operator_matrix

CONV = {1: F.conv1d, 2: F.conv2d}


def circular_operator(w, size, dilation, groups):
    """Dense matrix of x -> the circular cross-correlation of x (C_in, *size) with w at size n."""
    d = len(size)
    span = [dilation * (k - 1) for k in w.shape[2:]]
    pad = [q for s in reversed(span) for q in (0, s)]
    return operator_matrix(lambda x: CONV[d](F.pad(x, pad, mode="circular"), w, dilation=dilation, groups=groups),
                           (w.shape[1] * groups, *size))


def normalizers(w, size, dilation, groups, eps):
    """P_k = (A_k A_k^T + eps I)^(-1/2) of every output channel of the circular operator at ``size``."""
    a = circular_operator(w, size, dilation, groups)
    rows = a.shape[0] // w.shape[0]
    blocks = []
    for k in range(w.shape[0]):
        a_k = a[k * rows:(k + 1) * rows]
        evals, evecs = torch.linalg.eigh(a_k @ a_k.T)
        blocks.append(evecs @ torch.diag((evals + eps).rsqrt()) @ evecs.T)
    return torch.block_diag(*blocks)


CASES = [
    # d, n, k, padding, stride, dilation, groups
    (1, (9,), 3, 1, 1, 1, 1),
    (1, (8,), 4, 2, 2, 1, 1),
    (1, (10,), 3, 3, 1, 2, 2),
    (2, (5, 4), 3, 1, 1, 1, 1),
    (2, (4, 5), 2, 0, 2, 1, 1),
    (2, (5, 5), 3, 2, 1, 1, 2),
]


@pytest.mark.parametrize("d, n, k, padding, stride, dilation, groups", CASES)
def test_zero_padding_normalizes_the_full_output_then_crops_and_strides(d, n, k, padding, stride, dilation, groups):
    torch.manual_seed(sum(n) + k)
    c_in, c_out, eps = 2 * groups, 2 * groups, 1e-3
    w = torch.randn(c_out, c_in // groups, *[k] * d, dtype=torch.float64)
    m = dilation * (k - 1) + 1
    length = tuple(s + m - 1 for s in n)
    full = operator_matrix(lambda x: CONV[d](x, w, padding=m - 1, dilation=dilation, groups=groups), (c_in, *n))
    normalized = (normalizers(w, length, dilation, groups, eps) @ full).reshape(c_out, *length, -1)
    keep = tuple(slice(m - 1 - padding, m - 1 - padding + stride * (o - 1) + 1, stride)
                 for o in ((s + 2 * padding - m) // stride + 1 for s in n))
    want = normalized[(slice(None), *keep)].reshape(-1, normalized.shape[-1])
    got = operator_matrix(lambda x: conv_norm_reference(x, w, None, stride, padding, dilation, groups, eps=eps),
                          (c_in, *n))
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("d, n, k, stride, dilation, groups", [(1, (7,), 3, 1, 1, 1), (1, (9,), 3, 2, 2, 1),
                                                              (2, (4, 5), 3, 1, 1, 2), (2, (5, 6), 3, 2, 1, 1)])
def test_circular_padding_is_the_normalized_operator(d, n, k, stride, dilation, groups):
    """Each output channel is P_k A_k (a tight frame when eps = 0), then strided."""
    torch.manual_seed(sum(n))
    c_in, c_out, eps = 2 * groups, 2 * groups, 1e-3
    w = torch.randn(c_out, c_in // groups, *[k] * d, dtype=torch.float64)
    p = dilation * (k - 1) // 2
    a = operator_matrix(lambda x: CONV[d](F.pad(x, [p] * 2 * d, mode="circular"), w, dilation=dilation,
                                          groups=groups), (c_in, *n))
    normalized = (normalizers(w, n, dilation, groups, eps) @ a).reshape(c_out, *n, -1)
    want = normalized[(slice(None), *[slice(None, None, stride)] * d)].reshape(-1, a.shape[1])
    got = operator_matrix(lambda x: conv_norm_reference(x, w, None, stride, p, dilation, groups, "circular", eps),
                          (c_in, *n))
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("taps", [(3, 3), (2, 4), (1, 1)])
def test_affine_kernel_is_a_centred_circular_cross_correlation_before_the_crop(taps):
    """With nothing cropped (padding m - 1, stride 1), the affine kernel's output is the sum of
    the normalized output circularly shifted by each tap's lag j - (t - 1) // 2; a crop and a
    stride then apply to that sum, and the bias comes last."""
    torch.manual_seed(1)
    x, w = torch.randn(2, 3, 6, 5, dtype=torch.float64), torch.randn(4, 3, 3, 3, dtype=torch.float64)
    rho, bias = torch.randn(4, *taps, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    plain = conv_norm_reference(x, w, padding=2)
    want = sum(rho[:, i, j, None, None] * torch.roll(plain, (-(i - (taps[0] - 1) // 2), -(j - (taps[1] - 1) // 2)),
                                                     (2, 3))
               for i in range(taps[0]) for j in range(taps[1]))
    torch.testing.assert_close(conv_norm_reference(x, w, padding=2, affine_weight=rho), want)
    cropped = conv_norm_reference(x, w, bias, stride=2, padding=1, affine_weight=rho)
    torch.testing.assert_close(cropped, want[..., 1:-1:2, 1:-1:2] + bias[:, None, None])


def test_stop_gradient_keeps_the_normalizer_out_of_the_weight_gradient():
    """With the stop-gradient the weight gradient is that of the full convolution followed by
    a constant P_k; without it P_k's dependence on the weight adds a term."""
    torch.manual_seed(2)
    x = torch.randn(2, 2, 6, dtype=torch.float64)
    w = torch.randn(3, 2, 3, dtype=torch.float64, requires_grad=True)
    probe = torch.randn(2, 3, 6, dtype=torch.float64)
    p_fixed = normalizers(w.detach(), (8,), 1, 1, 1e-3)  # L = 6 + 3 - 1

    def fixed_normalizer(weight):
        full = F.conv1d(x, weight, padding=2).reshape(2, -1)  # (N, C_out L)
        return (full @ p_fixed.T).reshape(2, 3, 8)[..., 1:-1]

    (want,) = torch.autograd.grad((fixed_normalizer(w) * probe).sum(), w)
    (got,) = torch.autograd.grad((conv_norm_reference(x, w, padding=1, eps=1e-3) * probe).sum(), w)
    torch.testing.assert_close(got, want)
    (through,) = torch.autograd.grad(
        (conv_norm_reference(x, w, padding=1, eps=1e-3, stop_gradient=False) * probe).sum(), w)
    assert not torch.allclose(through, want)
    assert torch.autograd.gradcheck(lambda weight: conv_norm_reference(x, weight, padding=1, eps=1e-3,
                                                                       stop_gradient=False), (w,))


@pytest.mark.parametrize("name", ["input", "weight", "bias", "affine_weight"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64])
def test_takes_float32_and_float64_only(name, dtype):
    """Another dtype is a ValueError naming the argument, not an error from inside an FFT."""
    args = {"input": torch.randn(1, 2, 6), "weight": torch.randn(3, 2, 3), "bias": torch.randn(3),
            "affine_weight": torch.randn(3, 1)}
    args[name] = args[name].to(dtype)
    with pytest.raises(ValueError, match=f"^{name} must be "):
        conv_norm_reference(**args)


def test_computes_in_the_input_dtype_under_autocast():
    """Under autocast every step still runs in the input's dtype: the result is the one outside it,
    and conv_norm's (which computes in float32 there and returns the autocast dtype) rounded."""
    torch.manual_seed(3)
    x, w = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)
    want = conv_norm_reference(x, w, padding=1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = conv_norm_reference(x, w, padding=1)
        fast = conv_norm(x, w, padding=1)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    torch.testing.assert_close(fast, want.to(torch.bfloat16))
