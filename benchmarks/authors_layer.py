"""The authors' ConvNorm algorithm, re-expressed on ``torch.fft``: the run-time baseline.

Their released layer no longer runs (it calls ``torch.rfft``, removed in PyTorch 1.8), so
this is a plain port of its *algorithm*, written here from its semantics, for timing
only:

1. the convolution at stride 1 with padding :math:`k-1` (the "full" output, of size
   :math:`H+k-1`);
2. :math:`\\hat v_k = (\\sum_i |\\mathrm{FFT2}(a_{ki})|^2 + \\epsilon)^{-1/2}` at that full
   size, from the detached weights (stop-gradient); a 1x1 kernel takes the scalar
   :math:`(\\sum_i a_{ki}^2 + \\epsilon)^{-1/2}`;
3. the output normalized as ``irfft2(rfft2(y) * v)``, cropped by :math:`k-1-p` on each
   side, then strided (``[..., ::s, ::s]``);
4. the affine transform: a depthwise :math:`k \\times k` convolution with bias;
5. in training, a running average of :math:`\\hat v` with the cosine ramp (used in
   evaluation).

The :math:`\\epsilon` (which their code lacks) only keeps an all-zero kernel finite. It
is the appendix procedure, as :func:`convnorm.functional.conv_norm` computes it, done the
direct way; the package's layer gives the same values (``benchmarks/test_authors_layer.py``).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from convnorm.layers import ConvNorm2d


class AuthorsConvNorm2d(nn.Module):
    """The authors' algorithm for a square kernel, dilation 1, one group, zero padding."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, bias: bool = True, eps: float = 1e-5, ramp_steps: int = 40000,
                 ramp_floor: float = 0.01):
        super().__init__()
        self.k, self.stride, self.padding, self.eps = kernel_size, stride, padding, eps
        self.ramp_steps, self.ramp_floor = ramp_steps, ramp_floor
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size, kernel_size))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        self.affine = nn.Conv2d(out_channels, out_channels, kernel_size, padding=(kernel_size - 1) // 2,
                                groups=out_channels, bias=True)
        self.register_buffer("running_v", torch.zeros(0))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def _v(self, size: tuple[int, int]) -> torch.Tensor:
        w = self.weight.detach()
        if self.k == 1:
            return (w.square().sum((1, 2, 3)) + self.eps).rsqrt()[:, None, None]
        power = torch.fft.rfft2(w, s=size).abs().square().sum(1)
        return (power + self.eps).rsqrt()  # (C_out, H_full, W_full // 2 + 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k, p = self.k, self.padding
        y = F.conv2d(x, self.weight, None, 1, k - 1)
        size = tuple(y.shape[-2:])
        v = self._v(size)
        if self.training:
            with torch.no_grad():
                t = self.steps.clamp(max=self.ramp_steps).double()
                f = (0.5 * (1 + torch.cos(math.pi * t / self.ramp_steps))).clamp(min=self.ramp_floor).float()
                self.running_v = v.clone() if self.running_v.shape != v.shape else torch.lerp(self.running_v, v, f)
                self.steps += 1
        elif self.running_v.shape == v.shape:
            v = self.running_v
        if k == 1:
            y = y * v
        else:
            y = torch.fft.irfft2(torch.fft.rfft2(y) * v, s=size)
        crop = k - 1 - p
        if crop:
            y = y[..., crop:-crop, crop:-crop]
        y = y[..., ::self.stride, ::self.stride]
        y = self.affine(y)
        return y if self.bias is None else y + self.bias[:, None, None]


def with_authors_layers(model: nn.Module) -> nn.Module:
    """``model`` with every :class:`~convnorm.layers.ConvNorm2d` replaced, in place, by an
    :class:`AuthorsConvNorm2d` of the same shape and weights (affine kernels start as
    identities with zero bias in both)."""
    for name, child in model.named_children():
        if isinstance(child, ConvNorm2d):
            k = child.kernel_size[0]
            layer = AuthorsConvNorm2d(child.in_channels, child.out_channels, k, child.stride[0], child.padding[0],
                                      bias=child.bias is not None, eps=child.eps).to(child.weight.device)
            with torch.no_grad():
                layer.weight.copy_(child.weight)
                layer.affine.weight.zero_()
                layer.affine.weight[:, 0, (k - 1) // 2, (k - 1) // 2] = 1
                layer.affine.bias.zero_()
                if child.bias is not None:
                    layer.bias.copy_(child.bias)
            setattr(model, name, layer)
        else:
            with_authors_layers(child)
    return model
