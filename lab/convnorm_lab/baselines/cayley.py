r"""Orthogonal convolutions by the Cayley transform (Trockman & Kolter 2021).

A circular convolution with weight :math:`W` acts on each 2-D frequency
:math:`\omega` as the matrix :math:`\hat W(\omega) \in \mathbb C^{C_O \times C_I}`. The
layer replaces it by its Cayley transform: for :math:`C_O \ge C_I`, writing
:math:`\hat W = \begin{bmatrix} U \\ V \end{bmatrix}` with :math:`U` square and
:math:`A = U - U^* + V^* V`,

.. math:: Q(\omega) = \begin{bmatrix} (I + A)^{-1}(I - A) \\ -2 V (I + A)^{-1} \end{bmatrix},
   \qquad Q^* Q = I

(for :math:`C_O < C_I` the transform of :math:`\hat W^*` is transposed back, giving
:math:`Q Q^* = I`). Because every frequency gets an orthonormal matrix the whole
layer is orthogonal (an isometry when :math:`C_O \ge C_I`). :math:`\hat W` is first
scaled to :math:`\alpha \hat W / \|\hat W\|_F` with a learned :math:`\alpha`. Stride 2 is
an orthogonal 2x2 space-to-depth rearrangement (``pixel_unshuffle``) of the input
followed by the stride-1 layer on :math:`4 C_I` channels, as in the original. The
convolution is circular (periodic padding), and a matrix inverse per frequency per
forward makes it slow: the paper includes it for the run-time comparison.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from convnorm.validation import check_positive_int


def cayley(w: torch.Tensor) -> torch.Tensor:
    """Cayley transform of a batch of complex matrices ``(..., C_out, C_in)`` (see the
    module docstring): orthonormal columns if ``C_out >= C_in``, else rows."""
    c_out, c_in = w.shape[-2:]
    if c_in > c_out:
        return cayley(w.mH).mH
    u, v = w[..., :c_in, :], w[..., c_in:, :]
    eye = torch.eye(c_in, dtype=w.dtype, device=w.device)
    a = u - u.mH + v.mH @ v
    inv = torch.linalg.inv(eye + a)
    return torch.cat([inv @ (eye - a), -2 * v @ inv], dim=-2)


class CayleyConv2d(nn.Module):
    """An orthogonal ``kernel_size`` convolution (stride 1 or 2, circular padding)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 bias: bool = True):
        super().__init__()
        check_positive_int("in_channels", in_channels)
        check_positive_int("out_channels", out_channels)
        check_positive_int("kernel_size", kernel_size)
        if stride not in (1, 2):
            raise ValueError(f"stride must be 1 or 2, got {stride}")
        self.stride = stride
        self.kernel_size = kernel_size
        c_in = in_channels * stride * stride
        self.weight = nn.Parameter(torch.empty(out_channels, c_in, kernel_size, kernel_size))
        nn.init.xavier_uniform_(self.weight)
        self.alpha = nn.Parameter(self.weight.detach().norm().reshape(()))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None

    def frequency_matrices(self, size: int) -> torch.Tensor:
        """The orthogonal :math:`Q(\\omega)`, shape ``(size, size//2 + 1, C_out, C_in)``."""
        k = self.kernel_size
        padded = F.pad(self.weight, (0, size - k, 0, size - k))
        # centre the kernel at the origin so the layer is a same-size (not shifted) conv
        padded = torch.roll(padded, shifts=(-(k // 2), -(k // 2)), dims=(2, 3))
        # the FFT of the flipped kernel: correlation, as nn.Conv2d computes
        spectrum = torch.fft.rfft2(padded).conj().permute(2, 3, 0, 1)
        spectrum = self.alpha * spectrum / self.weight.norm()
        return cayley(spectrum)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 2:
            x = F.pixel_unshuffle(x, 2)
        n1, n2 = x.shape[-2:]
        if n1 != n2:
            raise ValueError(f"CayleyConv2d needs square inputs, got {n1}x{n2}")
        q = self.frequency_matrices(n1)
        xf = torch.fft.rfft2(x).permute(2, 3, 1, 0)  # (n, n//2+1, C_in, B)
        y = torch.fft.irfft2((q @ xf).permute(3, 2, 0, 1), s=(n1, n2))
        return y if self.bias is None else y + self.bias[:, None, None]
