r"""The ConvNorm layer as a function: convolution, spectral normalization, affine, stride.

Notation as in :mod:`convnorm.fourier`: weight :math:`a \in \mathbb{R}^{C_O \times C_I/g
\times m}` (``m`` the kernel size, one or two dims), input :math:`x` of spatial size
:math:`n`, padding :math:`p`, stride :math:`s`, and per output channel :math:`k` the
summed autocorrelation :math:`r_k = \sum_i a_{ki} \star a_{ki}`.

What is computed (the paper's appendix B, made exact; Liu et al. 2021):

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

``1 × 1`` kernels
    :math:`\hat v_k` is the constant :math:`(\sum_i a_{ki}^2 + \varepsilon)^{-1/2}`: the
    output channel is divided by the norm of its kernel. The scale is folded into the
    weight of one direct convolution (no FFT).

Dilation :math:`d` is exact: the kernel is treated as its zero-stuffed version of size
:math:`d(m-1)+1` (whose autocorrelation is :math:`r_k` zero-stuffed). Groups are exact:
:math:`A_k` only involves the input channels of its group, so the sum in :math:`r_k`
runs over those.

How it is computed (fast path). The direct convolution (oneDNN) gives :math:`y`; its
half spectrum is multiplied by a single per-channel spectrum
:math:`G_k(\omega) = \hat v_k(\omega)\,\hat\rho_k(\omega)\,e^{2\pi i \omega c/L}` that
also carries the crop offset :math:`c = m - 1 - p` as a phase, so the crop becomes
"keep the first samples". On a CPU, for the small sizes of CIFAR-like maps (2D, every
:math:`L \le` ``DENSE_DFT_MAX_LENGTH``) the transforms are dense DFT matrices applied
by matrix products, which beats an FFT of such short, often prime-factored, lengths
there (on a GPU, cuFFT's batched FFTs beat many tiny batched products); the inverse
matrices keep only the output rows and columns :math:`s t`, so crop and stride cost nothing. Otherwise ``rfftn``/``irfftn`` are used,
and a stride :math:`s` that divides :math:`L` along the first spatial axis is folded
into the spectrum (the DFT of :math:`z[s\,\cdot]` is the mean of the :math:`s` aliased
sub-spectra), so the inverse FFT runs at size :math:`L/s` there.

On a CPU, strided 2D layers and those with inputs of at most ``FREQUENCY_DOMAIN_MAX_SIZE``
(32) per axis (one group, no dilation: every layer of a CIFAR ResNet) skip the spatial
convolution altogether: :mod:`convnorm.frequency_domain` computes
the same output as one complex matrix product per frequency, which costs fewer flops than
the full-size, unstrided convolution the appendix procedure needs. The power spectrum
:math:`\mathcal F_L r_k` (:func:`~convnorm.fourier.autocorrelation_power_spectrum`) and the
kernel spectra come from cached bases by one matrix product each (few operations per
layer, which matters on a GPU where each is a kernel launch).

Stop-gradient: by default :math:`\hat v_k` is computed from the *detached* weight, so the
weight gradient flows through the convolution only (the paper's choice). Mixed
precision: under ``torch.autocast`` the whole computation runs in float32 (FFTs of
half-precision data lose too much) and the result is cast to the autocast dtype, like
the output of a convolution under autocast; float16 and bfloat16 inputs outside autocast
(a ``model.half()``) are computed in float32 too and the result cast back to their dtype.
"""
from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from .fourier import autocorrelation_power_spectrum, complex_dtype, kernel_autocorrelation
from . import frequency_domain
from .frequency_domain import FrequencyDomainConvNorm

PADDING_MODES = ("zeros", "circular")
_CONV = {1: F.conv1d, 2: F.conv2d}


def _tuple(name: str, value: int | Sequence[int], d: int, minimum: int) -> tuple[int, ...]:
    values = (value,) * d if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    if len(values) != d or any(isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in values):
        kind = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{name} must be a {kind} int or a tuple of {d} such ints, got {value!r}")
    return values


def conv_geometry(
    kernel_size: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int] | str,
    dilation: Sequence[int],
    padding_mode: str,
) -> tuple[int, ...]:
    """Check that the appendix procedure is defined for these arguments; return the padding.

    Resolves ``padding='same'``/``'valid'`` to integers and raises ``ValueError`` (naming
    the argument) for anything ConvNorm cannot honour exactly: other padding modes,
    zeros padding larger than ``dilation * (kernel_size - 1)`` (the full output would
    not contain the requested one), circular padding other than half the (odd) effective
    kernel (the operator would not be a circulant on the input), ``'same'`` with a
    stride or an even effective kernel.
    """
    if padding_mode not in PADDING_MODES:
        raise ValueError(
            f"padding_mode must be one of {PADDING_MODES} (ConvNorm is defined for zero and "
            f"circular padding only), got padding_mode={padding_mode!r}"
        )
    span = tuple(dl * (k - 1) + 1 for k, dl in zip(kernel_size, dilation))
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * len(span)
        if padding != "same":
            raise ValueError(f"padding must be an int, a tuple, 'same' or 'valid', got {padding!r}")
        if any(s != 1 for s in stride):
            raise ValueError(f"padding='same' requires stride 1, got stride={tuple(stride)}")
        if any(m % 2 == 0 for m in span):
            raise ValueError(f"padding='same' needs an odd effective kernel size, got {span}")
        padding = tuple((m - 1) // 2 for m in span)
    if padding_mode == "zeros" and any(p > m - 1 for p, m in zip(padding, span)):
        raise ValueError(
            f"padding must be at most dilation * (kernel_size - 1) = {tuple(m - 1 for m in span)} "
            f"with padding_mode='zeros', got padding={tuple(padding)}"
        )
    if padding_mode == "circular" and any(2 * p != m - 1 for p, m in zip(padding, span)):
        raise ValueError(
            "padding must equal (dilation * (kernel_size - 1)) / 2 with padding_mode='circular' "
            f"(an odd effective kernel {span}), got padding={tuple(padding)}"
        )
    return tuple(padding)


def shifted_kernel_spectrum(kernel: torch.Tensor, shift: Sequence[int], size: Sequence[int]) -> torch.Tensor:
    r"""Half spectrum :math:`\sum_j \rho[j]\, e^{2\pi i \langle\omega, j + \text{shift}\rangle / L}`.

    This is the multiplier, on the ``rfftn`` grid of size ``size`` (:math:`L`), of the
    circular cross-correlation :math:`y[t] = \sum_j \rho[j]\, x[t + j + \text{shift}]`.
    Computed with one small DFT matrix per axis (the kernel has few taps).

    Args:
        kernel: ``(C, *taps)``, one or two tap dimensions.
        shift: one int per tap dimension.
        size: :math:`L`, one int per tap dimension.

    Returns:
        Complex ``(C, L_1, …, L_d // 2 + 1)``.
    """
    d = kernel.dim() - 1
    result = kernel.to(complex_dtype(kernel.dtype))
    for axis, (taps, sh, n) in enumerate(zip(kernel.shape[1:], shift, size), start=1):
        freqs = torch.arange(n // 2 + 1 if axis == d else n, device=kernel.device, dtype=kernel.dtype)
        lags = torch.arange(taps, device=kernel.device, dtype=kernel.dtype) + sh
        basis = torch.polar(torch.ones((), dtype=kernel.dtype, device=kernel.device),
                            2 * math.pi * torch.outer(lags, freqs) / n)
        result = torch.movedim(torch.tensordot(torch.movedim(result, axis, -1), basis, dims=1), -1, axis)
    return result


@functools.lru_cache(maxsize=128)
def _kernel_basis(taps: tuple[int, ...], shift: tuple[int, ...], length: tuple[int, ...],
                  dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``(Π taps, 2F)`` real: :func:`shifted_kernel_spectrum` of each unit kernel (real and
    imaginary parts interleaved), so that ``kernel @ basis`` is the spectrum of ``kernel``."""
    units = torch.eye(math.prod(taps), dtype=torch.float64).reshape(-1, *taps)
    spectra = torch.view_as_real(shifted_kernel_spectrum(units, shift, length))
    return spectra.reshape(math.prod(taps), -1).to(dtype=dtype, device=device)


def _kernel_spectrum(kernel: torch.Tensor, shift, length) -> torch.Tensor:
    """:func:`shifted_kernel_spectrum` of ``kernel`` ``(C, *taps)`` by one product with the
    cached :func:`_kernel_basis`."""
    c, *taps = kernel.shape
    basis = _kernel_basis(tuple(taps), tuple(shift), tuple(length), kernel.dtype, kernel.device)
    half = (*length[:-1], length[-1] // 2 + 1)
    return torch.view_as_complex((kernel.reshape(c, -1) @ basis).reshape(c, *half, 2))


HALF_DTYPES = (torch.float16, torch.bfloat16)
"""Dtypes computed in float32 and cast back (FFTs of half-precision data lose too much, and
``torch.fft`` takes no ``bfloat16``)."""


def _fp32_region(input: torch.Tensor):
    """Disable autocast (if on) and report the dtype to return after computing in float32:
    under autocast the dtype a conv would return; otherwise the input's dtype if it is one of
    ``HALF_DTYPES`` (a ``model.half()``), else None (computed in the input's dtype; also on
    device types without autocast, such as ``meta``)."""
    device_type = input.device.type
    if torch.amp.is_autocast_available(device_type) and torch.is_autocast_enabled(device_type):
        return torch.autocast(device_type, enabled=False), torch.get_autocast_dtype(device_type)
    return contextlib.nullcontext(), input.dtype if input.dtype in HALF_DTYPES else None


def _as_float(t: torch.Tensor | None, dtype: torch.dtype | None) -> torch.Tensor | None:
    return t if t is None or dtype is None or not t.is_floating_point() else t.float()


def _checked_arguments(input, weight, stride, padding, dilation, groups, padding_mode):
    """Check the shapes and convolution arguments of :func:`conv_norm` (``ValueError`` naming
    the argument); return ``stride``, ``padding`` and ``dilation`` as tuples."""
    d = weight.dim() - 2
    if d not in (1, 2):
        raise ValueError(f"weight must have shape (C_out, C_in, k) or (C_out, C_in, k_h, k_w), got {tuple(weight.shape)}")
    if input.dim() != d + 2:
        layout = "(N, C_in, n)" if d == 1 else "(N, C_in, H, W)"
        raise ValueError(f"input must have shape {layout}, got {tuple(input.shape)}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or weight.shape[0] % groups:
        raise ValueError(f"groups must be a positive int dividing C_out = {weight.shape[0]}, got {groups!r}")
    if input.shape[1] != weight.shape[1] * groups:
        raise ValueError(
            f"input has {input.shape[1]} channels, expected C_in = {weight.shape[1] * groups} "
            f"(weight {tuple(weight.shape)}, groups={groups})"
        )
    stride = _tuple("stride", stride, d, 1)
    dilation = _tuple("dilation", dilation, d, 1)
    if not isinstance(padding, str):
        padding = _tuple("padding", padding, d, 0)
    return stride, conv_geometry(tuple(weight.shape[2:]), stride, padding, dilation, padding_mode), dilation


def _normalization_geometry(size, m, padding, stride, padding_mode):
    """``(length, offset, out_size)``: the normalization size :math:`L` (``size`` + ``m`` - 1,
    or ``size`` for circular padding), the crop offset :math:`m - 1 - p` (0 for circular) and
    the output size, for an effective kernel ``m``; ``ValueError`` if the input is too small."""
    if padding_mode == "circular":
        if any(k > n for k, n in zip(m, size)):
            raise ValueError(f"kernel size {m} (with dilation) is larger than the input size {size}")
        length, offset = tuple(size), (0,) * len(size)
    else:
        length = tuple(n + k - 1 for n, k in zip(size, m))
        offset = tuple(k - 1 - p for k, p in zip(m, padding))
    out_size = tuple((n + 2 * p - k) // s + 1 for n, p, k, s in zip(size, padding, m, stride))
    if any(o < 1 for o in out_size):
        raise ValueError(f"input size {tuple(size)} is too small for kernel {m} with padding {padding}")
    return length, offset, out_size


def _effective_kernel(weight: torch.Tensor, dilation) -> tuple[int, ...]:
    """The dilated kernel's size :math:`d (m - 1) + 1` per axis."""
    return tuple(dl * (k - 1) + 1 for k, dl in zip(weight.shape[2:], dilation))


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
    device and dtype; its values are not read) under the current rule (the
    ``FREQUENCY_DOMAIN_*`` settings, or a :func:`computation` block):

    - ``"pointwise"``: a 1x1 kernel, one convolution with the kernel scaled by its norm;
    - ``"frequency_domain"``: :mod:`convnorm.frequency_domain`, one complex matrix product
      per frequency;
    - ``"spatial"``: the full convolution, then the per-channel filter (dense DFT matrices
      on a CPU for small 2D sizes, FFTs otherwise).

    The gradient flows through :math:`\hat v` (which only the spatial computation allows)
    when ``stop_gradient`` is False, ``weight`` requires grad and grad mode is on. Under
    ``torch.autocast``, and for float16/bfloat16 inputs, the input counts as float32, as
    :func:`conv_norm` computes in it.
    Raises the ``ValueError`` that :func:`conv_norm` raises for the same arguments."""
    stride, padding, dilation = _checked_arguments(input, weight, stride, padding, dilation, groups, padding_mode)
    m = _effective_kernel(weight, dilation)
    length = _normalization_geometry(tuple(input.shape[2:]), m, padding, stride, padding_mode)[0]
    if _fp32_region(input)[1] is not None:  # autocast or half precision: computed in float32
        input = input.new_empty(1, dtype=torch.float32).expand(input.shape)
    differentiable = not stop_gradient and weight.requires_grad and torch.is_grad_enabled()
    return _computation(input, m, length, groups, dilation, stride, differentiable)


def _computation(input: torch.Tensor, m, length, groups: int, dilation, stride, differentiable: bool) -> str:
    r"""The decision of :func:`chosen_computation` for checked arguments (``m`` the effective
    kernel, ``length`` the normalization size, ``differentiable`` whether :math:`\hat v` needs
    a gradient); :func:`conv_norm` computes what it returns."""
    if all(k == 1 for k in m):
        return "pointwise"
    return "frequency_domain" if _use_frequency_domain(input, groups, dilation, length, stride, differentiable) else "spatial"


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
        eps: :math:`\varepsilon \ge 0` in :math:`\hat v_k = (s_k + \varepsilon)^{-1/2}`.
        affine_weight: ``(C_out, *taps)`` affine kernels :math:`\rho_k` (any tap count up
            to the normalization size), or None for no affine transform.
        autocorrelation: ``(C_out, *(2 * kernel - 1))`` summed autocorrelation of the
            (undilated) kernels to normalize with, e.g. a running average; None
            computes it from ``weight``.
        stop_gradient: compute :math:`\hat v` from ``weight.detach()`` (default, as the
            paper); if False the gradient also flows through :math:`\hat v`.

    Returns:
        ``(N, C_out, *out)`` with ``out = (n + 2 p - d (m - 1) - 1) // s + 1``, the same
        shape as the convolution with these arguments.
    """
    stride, padding, dilation = _checked_arguments(input, weight, stride, padding, dilation, groups, padding_mode)
    if not eps >= 0:
        raise ValueError(f"eps must be non-negative, got {eps}")
    d, kernel = weight.dim() - 2, tuple(weight.shape[2:])
    if affine_weight is not None and (affine_weight.dim() != d + 1 or affine_weight.shape[0] != weight.shape[0]):
        raise ValueError(f"affine_weight must have shape (C_out, *taps) with C_out = {weight.shape[0]}, "
                         f"got {tuple(affine_weight.shape)}")
    expected = (weight.shape[0], *(2 * k - 1 for k in kernel))
    if autocorrelation is not None and tuple(autocorrelation.shape) != expected:
        raise ValueError(f"autocorrelation must have shape {expected}, got {tuple(autocorrelation.shape)}")

    region, out_dtype = _fp32_region(input)
    with region:
        input, weight, bias, affine_weight, autocorrelation = (
            _as_float(t, out_dtype) for t in (input, weight, bias, affine_weight, autocorrelation))
        if autocorrelation is None:
            autocorrelation = kernel_autocorrelation(weight.detach() if stop_gradient else weight)
        out = _conv_norm(input, weight, bias, stride, padding, dilation, groups, padding_mode, eps,
                         affine_weight, autocorrelation)
    return out if out_dtype is None else out.to(out_dtype)


def _conv_norm(input, weight, bias, stride, padding, dilation, groups, padding_mode, eps,
               affine_weight, autocorrelation):
    """The computation, arguments already checked and tuples (see :func:`conv_norm`)."""
    d = weight.dim() - 2
    conv = _CONV[d]
    c_out = weight.shape[0]
    size = tuple(input.shape[2:])
    m = _effective_kernel(weight, dilation)
    length, offset, out_size = _normalization_geometry(size, m, padding, stride, padding_mode)
    way = _computation(input, m, length, groups, dilation, stride, autocorrelation.requires_grad)

    if way == "pointwise":  # 1x1: a scalar per output channel, folded into the weight
        scale = (autocorrelation.reshape(c_out) + eps).rsqrt()
        if affine_weight is not None:
            if affine_weight[0].numel() != 1:
                raise ValueError(f"affine_weight of a 1x1 layer must have one tap per channel, "
                                 f"got {tuple(affine_weight.shape)}")
            scale = scale * affine_weight.reshape(c_out)
        weight = weight * scale.reshape(c_out, *([1] * (d + 1)))
        return conv(input, weight, bias, stride, 0, dilation, groups)

    gain = (autocorrelation_power_spectrum(autocorrelation, length, dilation=dilation) + eps).rsqrt()
    if affine_weight is not None:
        taps = tuple(affine_weight.shape[1:])
        if any(t > n for t, n in zip(taps, length)):
            raise ValueError(f"affine kernel {taps} is larger than the normalization size {length}")
        shift = tuple(c - (t - 1) // 2 for c, t in zip(offset, taps))
    else:
        affine_weight = torch.ones(c_out, *([1] * d), dtype=input.dtype, device=input.device)
        shift = offset
    if way == "frequency_domain":
        conv_shift = tuple(-p for p in padding) if padding_mode == "circular" else tuple(1 - k for k in m)
        constants = _frequency_domain_constants(size, length, stride, out_size, m, conv_shift,
                                                tuple(affine_weight.shape[1:]), shift, input.dtype, input.device)
        z = FrequencyDomainConvNorm.apply(input, weight, affine_weight, gain, constants)
        return z if bias is None else z + bias.reshape(c_out, 1, 1)
    geometry = (shift, length, stride, out_size)
    if padding_mode == "circular":
        pad = [p for p in reversed(padding) for _ in range(2)]
        y = conv(F.pad(input, pad, mode="circular"), weight, None, 1, 0, dilation, groups)
    else:
        y = conv(input, weight, None, 1, tuple(k - 1 for k in m), dilation, groups)
    if gain.requires_grad:  # no stop-gradient: let autograd differentiate through v-hat too
        z = _filtered(y, _multiplier(affine_weight, gain, geometry), geometry, _use_dense(y, length))[1]
    else:
        z = _SpectralFilter.apply(y, affine_weight, gain, geometry)
    if bias is not None:
        z = z + bias.reshape(c_out, *([1] * d))
    return z


def _sample(spectrum: torch.Tensor, length, stride, out_size) -> torch.Tensor:
    r"""Inverse ``rfftn`` of ``spectrum`` at size ``length``, then ``z[s t]`` for ``t < out_size``.

    A stride dividing the first axis of a 2D signal is folded into the spectrum: the DFT
    of :math:`z[s\,\cdot]` is the mean of the :math:`s` aliased sub-spectra."""
    d = len(length)
    first = stride[0]
    if d == 2 and first > 1 and length[0] % first == 0:
        spectrum = spectrum.unflatten(-2, (first, length[0] // first)).mean(-3)
        z = torch.fft.irfft(torch.fft.ifft(spectrum, dim=-2), n=length[1], dim=-1)
        return z[..., : out_size[0], : (out_size[1] - 1) * stride[1] + 1 : stride[1]]
    z = torch.fft.irfftn(spectrum, s=length, dim=tuple(range(-d, 0)))
    return z[(..., *(slice(0, (o - 1) * s + 1, s) for o, s in zip(out_size, stride)))]


def _embed_spectrum(grad: torch.Tensor, length, stride) -> torch.Tensor:
    r"""``rfftn`` of the adjoint of :func:`_sample`'s sampling: ``grad`` placed at positions
    ``s t`` of a zero signal of size ``length``. The spectrum of a signal upsampled by
    :math:`s` along an axis is the spectrum at size :math:`L/s` repeated :math:`s` times."""
    d = len(length)
    first = stride[0]
    fold = d == 2 and first > 1 and length[0] % first == 0
    size = (length[0] // first if fold else length[0],) + tuple(length[1:])
    steps = (1 if fold else first,) + tuple(stride[1:])
    dims = tuple(range(-d, 0))
    if all(s == 1 for s in steps):  # placed at the start of each axis: rfftn's zero padding does it
        spectrum = torch.fft.rfftn(grad, s=size, dim=dims)
    else:
        full = grad.new_zeros(*grad.shape[:-d], *size)
        full[(..., *(slice(0, (o - 1) * s + 1, s) for o, s in zip(grad.shape[-d:], steps)))] = grad
        spectrum = torch.fft.rfftn(full, dim=dims)
    return spectrum.repeat(*([1] * (spectrum.dim() - 2)), first, 1) if fold else spectrum


def _multiplier(affine_weight, gain, geometry) -> torch.Tensor:
    r"""The per-channel half spectrum :math:`M = \hat v \hat\rho` (crop offset included)."""
    shift, length = geometry[:2]
    return gain * _kernel_spectrum(affine_weight, shift, length)


def _filtered(y: torch.Tensor, multiplier: torch.Tensor, geometry, dense: bool) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(Y, z)``: the half spectrum :math:`Y` of ``y`` and
    :math:`z = \operatorname{sample}_s(\mathcal F^{-1}[M Y])`, by dense DFT matrices if ``dense``
    (:func:`_use_dense`), else FFTs. Differentiable by autograd (used as such without stop-gradient)."""
    _, length, stride, out_size = geometry
    if dense:
        matrices = _dft_matrices(tuple(length), tuple(stride), tuple(out_size), y.dtype, y.device)
        spectrum = _dense_rfft2(y, matrices)
        return spectrum, _dense_irfft2_sample(spectrum * multiplier, matrices)
    spectrum = torch.fft.rfftn(y, dim=tuple(range(-len(length), 0)))
    return spectrum, _sample(spectrum * multiplier, length, stride, out_size)


DENSE_DFT_MAX_LENGTH = 50
"""Largest normalization size :math:`L` (per axis, 2D layers) for which the transforms are
dense DFT matrix products rather than FFTs (measured faster on a CPU up to about this size)."""


@functools.lru_cache(maxsize=32)
def _dft_matrices(length: tuple[int, int], stride: tuple[int, int], out_size: tuple[int, int],
                  dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, ...]:
    r"""Dense DFT matrices for a 2D signal of size :math:`L = (L_0, L_1)`, :math:`K = L_1 // 2 + 1`.

    Returns, in ``dtype`` (their complex counterpart where complex):

    - ``rfft_cols`` ``(L_1, 2K)``: ``y @ rfft_cols`` is :math:`\sum_t y[t] e^{-2\pi i k t/L_1}`
      (``rfft`` along the last axis), real and imaginary parts interleaved;
    - ``dft_rows`` ``(L_0, L_0)``: :math:`e^{-2\pi i a b/L_0}` (``fft`` along the rows);
    - ``idft_rows`` ``(O_0, L_0)``: :math:`e^{2\pi i a s_0 u/L_0}/L_0`, the inverse ``fft``
      evaluated at rows :math:`s_0 u` only;
    - ``irfft_cols`` ``(2K, O_1)``: the inverse ``rfft`` (weights 1 at :math:`k = 0` and
      :math:`L_1/2`, 2 elsewhere) evaluated at columns :math:`s_1 v` only;

    and the adjoints used by the backward pass (transposes, conjugate transposes).
    Angles are reduced modulo :math:`2\pi` in integers and computed in float64.
    """
    (l0, l1), (s0, s1), (o0, o1) = length, stride, out_size
    k = l1 // 2 + 1
    cdtype = complex_dtype(dtype)

    def angle(a: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
        return 2 * math.pi * (torch.outer(a, b) % n).double() / n

    rows, cols, freqs = torch.arange(l0), torch.arange(l1), torch.arange(k)
    theta = angle(cols, freqs, l1)
    rfft_cols = torch.stack([theta.cos(), -theta.sin()], -1).reshape(l1, 2 * k)
    dft_rows = torch.polar(torch.ones(l0, l0, dtype=torch.float64), -angle(rows, rows, l0))
    idft_rows = torch.polar(torch.full((o0, l0), 1 / l0, dtype=torch.float64), angle(torch.arange(o0) * s0, rows, l0))
    weight = torch.full((k, 1), 2.0, dtype=torch.float64)
    weight[0] = 1
    if l1 % 2 == 0:
        weight[-1] = 1
    theta = angle(freqs, torch.arange(o1) * s1, l1)
    irfft_cols = (torch.stack([theta.cos(), -theta.sin()], 1) * (weight / l1)[:, :, None]).reshape(2 * k, o1)
    real = [m.to(dtype=dtype, device=device) for m in (rfft_cols, irfft_cols)]
    cplx = [m.to(dtype=cdtype, device=device) for m in (dft_rows, idft_rows)]
    return (real[0], cplx[0], cplx[1], real[1],
            real[0].T.contiguous(), cplx[0].mH.contiguous(), cplx[1].mH.contiguous(), real[1].T.contiguous())


@functools.lru_cache(maxsize=32)
def _frequency_domain_constants(size, length, stride, out_size, taps, conv_shift, affine_taps, shift,
                                dtype, device) -> frequency_domain.FrequencyDomainConstants:
    """:func:`convnorm.frequency_domain.frequency_domain_constants` of one layer geometry, cached."""
    return frequency_domain.frequency_domain_constants(
        size, length, _dft_matrices(length, stride, out_size, dtype, device),
        _kernel_basis(taps, conv_shift, length, dtype, device), _kernel_basis(affine_taps, shift, length, dtype, device))


FREQUENCY_DOMAIN_MAX_SIZE = 32
"""Largest input size (per axis) for which a stride-1 2D layer on a CPU is computed in the
frequency domain (:mod:`convnorm.frequency_domain`)."""

FREQUENCY_DOMAIN_STRIDED = True
"""Whether strided 2D layers on a CPU are computed in the frequency domain, whatever their
(dense-DFT) size. Measured with ``python benchmarks/bench_layer.py --per-layer`` (2-core
CPU, batch 32, ``benchmarks/results/bench_layer_per_layer.json``): the frequency domain is
faster for every strided layer of a CIFAR ResNet18 (the spatial computation needs the
unstrided full convolution) and for every stride-1 one, the 32x32 maps included (1.47x
against 1.57x their Conv2d at 375ba55; before the planar spectra the two tied alone, and the
whole training step was no slower with the limit of 32 than with 16:
``benchmarks/results/bench_compare_d3cdc7c_9c17927.json``), hence the limit of 32."""


FREQUENCY_DOMAIN_DEVICES = ("cpu",)
"""Device types on which the two settings above apply; elsewhere every layer is computed
spatially (on a GPU, cuFFT's transforms; see ``benchmarks/README.md`` for the measured
comparison)."""

COMPUTATIONS = {"spatial": (0, False, ()), "frequency_domain": (math.inf, True, ("cpu", "cuda"))}
"""``(FREQUENCY_DOMAIN_MAX_SIZE, FREQUENCY_DOMAIN_STRIDED, FREQUENCY_DOMAIN_DEVICES)`` that
force each computation on every eligible layer, on a CPU or a CUDA GPU."""


@contextlib.contextmanager
def computation(way: str):
    """Within the block, every layer the frequency-domain computation can take (2D, one group,
    no dilation, stop-gradient, float32/64, a normalization size up to
    ``DENSE_DFT_MAX_LENGTH``) is computed ``way``: ``"spatial"`` (full convolution, then the
    filter) or ``"frequency_domain"`` (:mod:`convnorm.frequency_domain`), whatever its size
    and stride, on a CPU or a CUDA GPU. Both give the same layer; this is for comparing them
    (tests, benchmarks, chapter 6). The package's rule is restored on exit.

    Raises:
        ValueError: if ``way`` is not a key of ``COMPUTATIONS``."""
    global FREQUENCY_DOMAIN_MAX_SIZE, FREQUENCY_DOMAIN_STRIDED, FREQUENCY_DOMAIN_DEVICES
    if way not in COMPUTATIONS:
        raise ValueError(f"way must be one of {sorted(COMPUTATIONS)}, got {way!r}")
    saved = FREQUENCY_DOMAIN_MAX_SIZE, FREQUENCY_DOMAIN_STRIDED, FREQUENCY_DOMAIN_DEVICES
    FREQUENCY_DOMAIN_MAX_SIZE, FREQUENCY_DOMAIN_STRIDED, FREQUENCY_DOMAIN_DEVICES = COMPUTATIONS[way]
    try:
        yield
    finally:
        FREQUENCY_DOMAIN_MAX_SIZE, FREQUENCY_DOMAIN_STRIDED, FREQUENCY_DOMAIN_DEVICES = saved


def _use_frequency_domain(input: torch.Tensor, groups: int, dilation, length, stride, differentiable: bool) -> bool:
    r"""Whether :mod:`convnorm.frequency_domain` computes this layer: on a device type of
    ``FREQUENCY_DOMAIN_DEVICES`` (a CPU), 2D, one group, no dilation, stop-gradient (the gain
    :math:`\hat v` not ``differentiable``), float32/64, a dense-DFT normalization size, and either
    strided (``FREQUENCY_DOMAIN_STRIDED``) or an input of at most ``FREQUENCY_DOMAIN_MAX_SIZE`` per axis."""
    return (input.device.type in FREQUENCY_DOMAIN_DEVICES and input.dim() == 4 and groups == 1
            and all(dl == 1 for dl in dilation) and not differentiable and input.dtype in (torch.float32, torch.float64)
            and max(length) <= DENSE_DFT_MAX_LENGTH
            and ((FREQUENCY_DOMAIN_STRIDED and max(stride) > 1) or max(input.shape[2:]) <= FREQUENCY_DOMAIN_MAX_SIZE))


def _use_dense(y: torch.Tensor, length) -> bool:
    """Dense DFT matrices on a CPU for 2D sizes up to ``DENSE_DFT_MAX_LENGTH``; FFTs otherwise
    (on a GPU, cuFFT's batched transforms beat many tiny batched matrix products)."""
    return (y.device.type == "cpu" and len(length) == 2 and max(length) <= DENSE_DFT_MAX_LENGTH
            and y.dtype in (torch.float32, torch.float64))


def _dense_rfft2(y: torch.Tensor, matrices) -> torch.Tensor:
    """``rfftn(y, dim=(-2, -1))`` by two matrix products (complex result)."""
    rfft_cols, dft_rows = matrices[:2]
    half = torch.view_as_complex((y @ rfft_cols).unflatten(-1, (-1, 2)))
    return torch.matmul(dft_rows, half)


def _dense_irfft2_sample(spectrum: torch.Tensor, matrices) -> torch.Tensor:
    """``irfftn`` of a half spectrum, evaluated at the output grid ``s t`` only."""
    idft_rows, irfft_cols = matrices[2:4]
    return torch.view_as_real(torch.matmul(idft_rows, spectrum)).flatten(-2) @ irfft_cols


class _SpectralFilter(torch.autograd.Function):
    r""":math:`z = \operatorname{sample}_s\bigl(\mathcal F^{-1}[\hat v \hat\rho\, \mathcal F y]\bigr)` with
    a hand-written backward that keeps only what it needs: the (small) multiplier
    :math:`M = \hat v \hat\rho` for the input gradient, plus the half spectrum :math:`Y` of
    the conv output (about the size of :math:`y`; keeping it saves a transform) when the
    affine kernel needs a gradient.

    Backward: the map is real-linear in :math:`y` with adjoint
    :math:`\mathcal F^{-1}[\overline{M}\,\mathcal F \operatorname{embed}_s(g)]` (on the dense
    path: the transposed, conjugate-transposed matrices in reverse order). Affine kernel:
    with :math:`G` the gradient of the product :math:`MY` (real coordinates), the gradient of
    :math:`M` is :math:`\sum_n \overline{Y} G`, pulled back to :math:`\rho` through the small
    map :math:`\rho \mapsto \hat v \hat\rho` (FFT path: the equivalent circular
    cross-correlation :math:`\partial/\partial\rho_k[j] = \sum_{n,t} \operatorname{embed}_s(g)[t]\,(v_k \circledast y)[t + j + \text{shift}]`).
    """

    @staticmethod
    def forward(ctx, y, affine_weight, gain, geometry):
        multiplier = _multiplier(affine_weight, gain, geometry)
        ctx.geometry = geometry
        ctx.dense = _use_dense(y, geometry[1])
        spectrum, z = _filtered(y, multiplier, geometry, ctx.dense)
        ctx.save_for_backward(spectrum if ctx.needs_input_grad[1] else None, affine_weight, gain, multiplier)
        return z

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        spectrum, affine_weight, gain, multiplier = ctx.saved_tensors
        shift, length, stride, out_size = ctx.geometry
        if ctx.dense:
            return _SpectralFilter._dense_backward(ctx, grad, spectrum, affine_weight, gain, multiplier)
        d = len(length)
        dims = tuple(range(-d, 0))
        grad_spectrum = _embed_spectrum(grad, length, stride)
        grad_y = grad_affine = None
        if ctx.needs_input_grad[0]:
            grad_y = torch.fft.irfftn(grad_spectrum * multiplier.conj(), s=length, dim=dims)
        if ctx.needs_input_grad[1]:
            cross = (grad_spectrum.conj() * spectrum).sum(0) * gain
            cross = torch.fft.irfftn(cross, s=length, dim=dims)  # c[tau] = sum_t g[t] (v*y)[t + tau]
            grad_affine = cross[(slice(None), *_lag_index(tuple(affine_weight.shape[1:]), tuple(shift),
                                                          tuple(length), grad.device))]
        return grad_y, grad_affine, None, None

    @staticmethod
    def _dense_backward(ctx, grad, spectrum, affine_weight, gain, multiplier):
        shift, length, stride, out_size = ctx.geometry
        matrices = _dft_matrices(tuple(length), tuple(stride), tuple(out_size), grad.dtype, grad.device)
        rfft_cols_t, dft_rows_h, idft_rows_h, irfft_cols_t = matrices[4:]
        # Adjoint of _dense_irfft2_sample: gradient of the product spectrum M Y.
        grad_product = torch.matmul(idft_rows_h, torch.view_as_complex((grad @ irfft_cols_t).unflatten(-1, (-1, 2))))
        grad_y = grad_affine = None
        if ctx.needs_input_grad[0]:  # adjoint of _dense_rfft2 applied to conj(M) G
            grad_y = torch.view_as_real(torch.matmul(dft_rows_h, grad_product * multiplier.conj())).flatten(-2) @ rfft_cols_t
        if ctx.needs_input_grad[1]:
            # M = v * sum_j rho[j] E_j, so d/d rho[j] = Re sum_w conj(dM) v E_j, with dM = sum_n conj(Y) G.
            weighted = torch.view_as_real(_sum_conj_products(spectrum, grad_product) * gain).flatten(1)
            taps = affine_weight.shape[1:]
            basis = _kernel_basis(tuple(taps), tuple(shift), tuple(length), grad.dtype, grad.device)
            grad_affine = (weighted @ basis.T).reshape(affine_weight.shape)
        return grad_y, grad_affine, None, None


@functools.lru_cache(maxsize=64)
def _lag_index(taps: tuple[int, ...], shift: tuple[int, ...], length: tuple[int, ...],
               device: torch.device) -> tuple[torch.Tensor, ...]:
    r"""Per axis the lags :math:`(j + \text{shift}) \bmod L`, :math:`0 \le j <` ``taps``, as an
    open mesh (cached on ``device``): ``c[:, *index]`` picks the taps of a circular
    cross-correlation ``c``."""
    lags = [(torch.arange(t) + sh) % n for t, sh, n in zip(taps, shift, length)]
    return tuple(index.to(device) for index in torch.meshgrid(*lags, indexing="ij"))


def _sum_conj_products(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_n \overline{a_n}\, b_n` over the first axis, accumulated sample by sample:
    no tensor of all the products is made (with ``a.conj()`` a conjugated copy of ``a`` would
    be, and the products then summed: three passes over memory instead of one)."""
    total = a.new_zeros(a.shape[1:])
    for a_n, b_n in zip(a, b):
        total.addcmul_(a_n.conj(), b_n)
    return total


def conv_norm2d(input: torch.Tensor, weight: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """:func:`conv_norm` for 2D: input ``(N, C_in, H, W)``, weight ``(C_out, C_in/g, k_h, k_w)``."""
    if weight.dim() != 4:
        raise ValueError(f"weight must have shape (C_out, C_in, k_h, k_w), got {tuple(weight.shape)}")
    return conv_norm(input, weight, *args, **kwargs)


def conv_norm1d(input: torch.Tensor, weight: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """:func:`conv_norm` for 1D: input ``(N, C_in, n)``, weight ``(C_out, C_in/g, k)``."""
    if weight.dim() != 3:
        raise ValueError(f"weight must have shape (C_out, C_in, k), got {tuple(weight.shape)}")
    return conv_norm(input, weight, *args, **kwargs)
