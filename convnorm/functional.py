r"""The ConvNorm layer as a function: convolution, spectral normalization, affine, stride.

Notation as in :mod:`convnorm.fourier`: weight :math:`a \in \mathbb{R}^{C_O \times C_I/g
\times m}` (``m`` the kernel size, one or two dims), input :math:`x` of spatial size
:math:`n`, padding :math:`p`, stride :math:`s`, and per output channel :math:`k` the
summed autocorrelation :math:`r_k = \sum_i a_{ki} \star a_{ki}`.

What is computed (the paper's appendix B, made exact; Liu et al. 2021), written out step by
step in :func:`conv_norm_reference`:

``padding_mode='zeros'`` (padding :math:`0 \le p \le m - 1`)
    1. the *full* cross-correlation :math:`y = a \star x` (input zero-padded by
       :math:`m - 1`), of size :math:`L = n + m - 1`;
    2. per channel the circular normalization at size :math:`L`,
       :math:`\tilde y_k = \mathcal{F}_L^{-1}\bigl[\hat v_k \odot \mathcal{F}_L y_k\bigr]`
       with :math:`\hat v_k = (\mathcal{F}_L r_k + \varepsilon)^{-1/2}`;
    3. the optional affine kernel :math:`\rho_k` (the paper's :math:`r_k`; renamed here
       because :math:`r_k` is the autocorrelation), applied as a *circular*
       cross-correlation at size :math:`L`, centred on index
       :math:`\lfloor (m_\rho - 1)/2 \rfloor` (so a centred delta is the identity), as in
       the paper's Algorithm 1;
    4. crop :math:`m - 1 - p` samples at the start (the output of ``nn.Conv2d`` with
       padding :math:`p` starts there) and keep every :math:`s`-th sample:
       :math:`z[t] = \bar y[m - 1 - p + s t]`, :math:`0 \le t < \lfloor (n + 2p - m)/s \rfloor + 1`;
    5. add the bias.

``padding_mode='circular'`` (padding :math:`p = (m - 1)/2`, ``m`` odd)
    The circular cross-correlation :math:`A_k x` at size :math:`n`, normalized at size
    :math:`n`: per output channel the layer applies
    :math:`Q_k = (A_k A_k^\top)^{-1/2} A_k` (with :math:`\varepsilon = 0`), so
    :math:`Q_k Q_k^\top = I`; then affine, stride and bias as above.

Dilation :math:`d` is exact: the kernel is treated as its zero-stuffed version of size
:math:`d(m-1)+1` (whose autocorrelation is :math:`r_k` zero-stuffed). Groups are exact:
:math:`A_k` only involves the input channels of its group, so the sum in :math:`r_k`
runs over those.

How it is computed. :func:`conv_norm` checks its arguments, then computes the same output
in one of three ways, chosen per layer by the :class:`ComputationPolicy` in force
(:func:`chosen_computation` says which; :func:`use_policy` and :func:`computation` set it for
a block of code):

- ``"pointwise"`` (1x1 kernels): :math:`\hat v_k` is the constant
  :math:`(\sum_i a_{ki}^2 + \varepsilon)^{-1/2}`, folded into the weight of one convolution;
- ``"spatial"``: the direct convolution gives :math:`y`, whose spectrum is multiplied by
  one spectrum per channel (normalizer, affine kernel and crop in one), then transformed back
  on the strided output grid only (dense DFT matrices on a CPU for small sizes, FFTs
  otherwise);
- ``"frequency_domain"`` (2D, one group, no dilation; on a CPU for strided layers and maps up
  to 32x32): no spatial convolution at all, one matrix product per frequency, which costs
  fewer operations than the full-size, unstrided convolution the procedure needs.

The power spectrum :math:`\mathcal F_L r_k`
(:func:`~convnorm.fourier.autocorrelation_power_spectrum`) and the kernel spectra come from
cached bases by one matrix product each; :func:`clear_caches` frees every cached matrix.

Stop-gradient: by default :math:`\hat v_k` is computed from the *detached* weight, so the
weight gradient flows through the convolution only (the paper's choice). Mixed
precision: under ``torch.autocast`` the whole computation runs in float32 (FFTs of
half-precision data lose too much) and the result is cast to the autocast dtype, like
the output of a convolution under autocast; float16 and bfloat16 inputs outside autocast
(a ``model.half()``) are computed in float32 too and the result cast back to their dtype.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ._caches import clear_caches
from ._frequency_domain import frequency_domain_conv_norm
from ._geometry import CONV, PADDING_MODES, LayerGeometry, layer_geometry
from ._pointwise import pointwise_conv_norm
from ._policy import (COMPUTATIONS, DENSE_DFT_MAX_LENGTH, FREQUENCY_DOMAIN_MAX_SIZE, ComputationPolicy, computation,
                      current_policy, use_policy)
from ._precision import HALF_DTYPES, as_float, fp32_region
from ._spatial import spatial_conv_norm
from ._validation import check_non_negative
from .fourier import autocorrelation_power_spectrum, kernel_autocorrelation
from .padding import dilate_kernel

__all__ = [
    "COMPUTATIONS", "DENSE_DFT_MAX_LENGTH", "FREQUENCY_DOMAIN_MAX_SIZE", "HALF_DTYPES", "PADDING_MODES",
    "ComputationPolicy", "chosen_computation", "clear_caches", "computation", "conv_norm", "conv_norm1d",
    "conv_norm2d", "conv_norm_reference", "current_policy", "use_policy",
]


def conv_norm(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] | str = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
    eps: float = 1e-5,
    affine_weight: torch.Tensor | None = None,
    autocorrelation: torch.Tensor | None = None,
    stop_gradient: bool = True,
) -> torch.Tensor:
    r"""Normalized convolution (ConvNorm), 1D or 2D: see the module docstring for the math.

    Args:
        input: ``(N, C_in, n)`` or ``(N, C_in, n_h, n_w)``.
        weight: ``(C_out, C_in / groups, *kernel)``; its number of kernel dims (1 or 2)
            selects 1D or 2D.
        bias: ``(C_out,)`` added last, or None.
        stride, padding, dilation, groups: as for ``torch.nn.functional.conv2d``;
            ``padding`` also accepts ``'same'`` and ``'valid'``.
        padding_mode: ``'zeros'`` or ``'circular'``.
        eps: :math:`\varepsilon \ge 0` (finite) in :math:`\hat v_k = (s_k + \varepsilon)^{-1/2}`.
        affine_weight: ``(C_out, *taps)`` affine kernels :math:`\rho_k` (any tap count up
            to the normalization size; one tap for a 1x1 kernel), or None for no affine
            transform.
        autocorrelation: ``(C_out, *(2 * kernel - 1))`` summed autocorrelation of the
            (undilated) kernels to normalize with, e.g. a running average; None
            computes it from ``weight``.
        stop_gradient: compute :math:`\hat v` from ``weight.detach()`` (default, as the
            paper); if False the gradient also flows through :math:`\hat v`.

    Returns:
        ``(N, C_out, *out)`` with ``out = (n + 2 p - d (m - 1) - 1) // s + 1``, the same
        shape as the convolution with these arguments.

    Raises:
        ValueError: naming the argument, for anything the procedure is not defined for.
    """
    geometry, eps = _checked(input, weight, bias, stride, padding, dilation, groups, padding_mode, eps,
                             affine_weight, autocorrelation)
    region, out_dtype = fp32_region(input)
    with region:
        input, weight, bias, affine_weight, autocorrelation = (
            as_float(t, out_dtype) for t in (input, weight, bias, affine_weight, autocorrelation))
        if autocorrelation is None:
            autocorrelation = kernel_autocorrelation(weight.detach() if stop_gradient else weight)
        out = _computed(input, weight, bias, geometry, eps, affine_weight, autocorrelation)
    return out if out_dtype is None else out.to(out_dtype)


def _computed(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, geometry: LayerGeometry,
              eps: float, affine_weight: torch.Tensor | None, autocorrelation: torch.Tensor) -> torch.Tensor:
    """:func:`conv_norm` of checked arguments, by the computation the policy in force chooses."""
    g = geometry
    policy = current_policy()  # read once: the whole call computes under one policy
    way = policy.choose(input, g.kernel, g.length, g.stride, g.dilation, g.groups, autocorrelation.requires_grad)
    if way == "pointwise":
        return pointwise_conv_norm(input, weight, bias, g, eps, affine_weight, autocorrelation)
    gain = (autocorrelation_power_spectrum(autocorrelation, g.length, dilation=g.dilation) + eps).rsqrt()
    if affine_weight is None:  # one tap of 1, centred: the identity
        affine_weight = torch.ones(weight.shape[0], *([1] * len(g.size)), dtype=input.dtype, device=input.device)
    # Tap j of the affine kernel reads the normalized full output at t + c + j - centre.
    shift = tuple(c - (t - 1) // 2 for c, t in zip(g.offset, affine_weight.shape[1:]))
    compute = frequency_domain_conv_norm if way == "frequency_domain" else spatial_conv_norm
    return compute(input, weight, bias, g, gain, affine_weight, shift, policy)


def conv_norm_reference(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] | str = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
    eps: float = 1e-5,
    affine_weight: torch.Tensor | None = None,
    autocorrelation: torch.Tensor | None = None,
    stop_gradient: bool = True,
) -> torch.Tensor:
    r"""The appendix procedure, step by step: what :func:`conv_norm` computes, written plainly.

    One full-size FFT per kernel and per signal, no caches, no choice of computation: slow,
    and meant for checking (the fast computations are tested against it) and for reading.
    Same arguments, checks and result as :func:`conv_norm`; computes in the input's dtype,
    which must be float32 or float64 (use float64 for checks), also under autocast.

    1. :math:`y = a \star x`: the full cross-correlation with the zero-stuffed (dilated)
       kernel, input zero-padded by :math:`m - 1` (size :math:`L = n + m - 1`), or the
       circular one at size :math:`L = n`;
    2. :math:`\hat v_k = (s_k + \varepsilon)^{-1/2}` with
       :math:`s_k = \sum_i |\mathcal F_L a_{ki}|^2` (or :math:`\mathcal F_L r_k` from a given
       ``autocorrelation``, wrapped onto size :math:`L`), and
       :math:`\tilde y_k = \mathcal F_L^{-1}[\hat v_k\, \mathcal F_L y_k]`;
    3. the affine kernel as a circular cross-correlation at size :math:`L` centred on tap
       :math:`\lfloor (m_\rho - 1)/2 \rfloor`:
       :math:`\bar y_k[t] = \sum_j \rho_k[j]\, \tilde y_k[t + j - \lfloor (m_\rho - 1)/2 \rfloor]`;
    4. :math:`z[t] = \bar y[c + s t]` with the crop :math:`c = m - 1 - p` (0 for circular);
    5. plus the bias.
    """
    g, eps = _checked(input, weight, bias, stride, padding, dilation, groups, padding_mode, eps,
                      affine_weight, autocorrelation)
    if input.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"conv_norm_reference computes in float32 or float64, got input of dtype {input.dtype}")
    d = len(g.size)
    dims = tuple(range(2, 2 + d))
    with fp32_region(input)[0]:  # no autocast: every step in the input's dtype
        kernel = dilate_kernel(weight, g.dilation)  # the dilated kernel, zero-stuffed
        # 1. the full (or circular) cross-correlation, of size L
        if g.padding_mode == "zeros":
            y = CONV[d](input, kernel, None, 1, tuple(m - 1 for m in g.kernel), 1, g.groups)
        else:
            y = CONV[d](F.pad(input, [p for p in reversed(g.padding) for _ in range(2)], mode="circular"), kernel,
                        groups=g.groups)
        # 2. the normalization: v-hat from the kernels' power spectrum at size L
        if autocorrelation is None:
            spectra = torch.fft.fftn(kernel.detach() if stop_gradient else kernel, s=g.length, dim=dims)
            power = (spectra.real ** 2 + spectra.imag ** 2).sum(1)
        else:  # r_k[tau] sits at index tau + k - 1; the dilated kernels' autocorrelation has it at lag d tau
            start = tuple(-(t // 2) * dl for t, dl in zip(autocorrelation.shape[1:], g.dilation))
            power = torch.fft.fftn(_wrapped(autocorrelation, start, g.dilation, g.length), dim=tuple(range(1, 1 + d))).real
        spectrum = torch.fft.fftn(y, dim=dims) * (power + eps).rsqrt()
        # 3. the affine kernel: a circular cross-correlation, multiplying by the conjugate spectrum
        if affine_weight is not None:
            start = tuple(-((t - 1) // 2) for t in affine_weight.shape[1:])
            rho = _wrapped(affine_weight, start, (1,) * d, g.length)
            spectrum = spectrum * torch.fft.fftn(rho, dim=tuple(range(1, 1 + d))).conj()
        full = torch.fft.ifftn(spectrum, dim=dims).real
        # 4. crop and stride
        z = full[(..., *(slice(c, c + (o - 1) * s + 1, s) for c, o, s in zip(g.offset, g.out_size, g.stride)))]
        # 5. bias
        return z if bias is None else z + bias.reshape(-1, *([1] * d))


def _wrapped(taps: torch.Tensor, start: tuple[int, ...], step: tuple[int, ...], length: tuple[int, ...]) -> torch.Tensor:
    """``(C, *taps)`` laid on a circle of size ``length``: tap ``j`` added at position
    ``(start + step * j) mod length`` per axis."""
    out = taps.new_zeros(taps.shape[0], *length)
    for j in itertools.product(*(range(t) for t in taps.shape[1:])):
        position = tuple((a + s * i) % n for a, s, i, n in zip(start, step, j, length))
        out[(slice(None), *position)] += taps[(slice(None), *j)]
    return out


def _checked(input, weight, bias, stride, padding, dilation, groups, padding_mode, eps, affine_weight,
             autocorrelation) -> tuple[LayerGeometry, float]:
    """The arguments of :func:`conv_norm` checked (``ValueError`` naming the argument): the
    layer's geometry and ``eps`` as a float."""
    geometry = layer_geometry(input, weight, stride, padding, dilation, groups, padding_mode)
    for name, tensor in (("input", input), ("weight", weight)):
        if not tensor.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor, got dtype {tensor.dtype}")
    eps = check_non_negative("eps", eps)
    c_out, d = weight.shape[0], weight.dim() - 2
    if bias is not None and (not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (c_out,)):
        raise ValueError(f"bias must have shape ({c_out},) or be None, got {getattr(bias, 'shape', bias)!r}")
    if affine_weight is not None:
        if not isinstance(affine_weight, torch.Tensor) or affine_weight.dim() != d + 1 or affine_weight.shape[0] != c_out:
            raise ValueError(f"affine_weight must have shape (C_out, *taps) with C_out = {c_out}, "
                             f"got {tuple(getattr(affine_weight, 'shape', ()))}")
        taps = tuple(affine_weight.shape[1:])
        if all(m == 1 for m in geometry.kernel) and any(t != 1 for t in taps):
            raise ValueError(f"affine_weight of a 1x1 layer must have one tap per channel, got {tuple(affine_weight.shape)}")
        if any(t > n for t, n in zip(taps, geometry.length)):
            raise ValueError(f"affine kernel {taps} is larger than the normalization size {geometry.length}")
    expected = (c_out, *(2 * k - 1 for k in weight.shape[2:]))
    if autocorrelation is not None and tuple(getattr(autocorrelation, "shape", ())) != expected:
        raise ValueError(f"autocorrelation must have shape {expected}, got {tuple(getattr(autocorrelation, 'shape', ()))}")
    return geometry, eps


def chosen_computation(
    input: torch.Tensor,
    weight: torch.Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] | str = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
    stop_gradient: bool = True,
) -> str:
    r"""How :func:`conv_norm` computes a layer with these arguments on ``input`` (its shape,
    device and dtype; its values are not read) under the policy in force
    (:func:`current_policy`):

    - ``"pointwise"``: a 1x1 kernel, one convolution with the kernel scaled by its norm;
    - ``"frequency_domain"``: one complex matrix product per frequency;
    - ``"spatial"``: the full convolution, then the per-channel filter (dense DFT matrices
      on a CPU for small 2D sizes, FFTs otherwise).

    The gradient flows through :math:`\hat v` (which only the spatial computation allows)
    when ``stop_gradient`` is False, ``weight`` requires grad and grad mode is on. Under
    ``torch.autocast``, and for float16/bfloat16 inputs, the input counts as float32, as
    :func:`conv_norm` computes in it.
    Raises the ``ValueError`` that :func:`conv_norm` raises for the same arguments."""
    g = layer_geometry(input, weight, stride, padding, dilation, groups, padding_mode)
    if fp32_region(input)[1] is not None:  # autocast or half precision: computed in float32
        input = input.new_empty(1, dtype=torch.float32).expand(input.shape)
    differentiable = not stop_gradient and weight.requires_grad and torch.is_grad_enabled()
    return current_policy().choose(input, g.kernel, g.length, g.stride, g.dilation, g.groups, differentiable)


def conv_norm2d(input: torch.Tensor, weight: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """:func:`conv_norm` for 2D: input ``(N, C_in, H, W)``, weight ``(C_out, C_in/g, k_h, k_w)``."""
    if not isinstance(weight, torch.Tensor) or weight.dim() != 4:
        raise ValueError(f"weight must have shape (C_out, C_in, k_h, k_w), got {tuple(getattr(weight, 'shape', ()))}")
    return conv_norm(input, weight, *args, **kwargs)


def conv_norm1d(input: torch.Tensor, weight: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """:func:`conv_norm` for 1D: input ``(N, C_in, n)``, weight ``(C_out, C_in/g, k)``."""
    if not isinstance(weight, torch.Tensor) or weight.dim() != 3:
        raise ValueError(f"weight must have shape (C_out, C_in, k), got {tuple(getattr(weight, 'shape', ()))}")
    return conv_norm(input, weight, *args, **kwargs)
