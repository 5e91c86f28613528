r"""Exact singular values of circular 1D and 2D convolution layers, with and without ConvNorm.

A multichannel layer with weight :math:`a \in \mathbb{R}^{C_O \times C_I \times m_1 \times m_2}`
acting *circularly* on images of size :math:`n = (n_1, n_2)` is a linear map
:math:`\mathbb{R}^{C_I n_1 n_2} \to \mathbb{R}^{C_O n_1 n_2}` whose matrix is a
:math:`C_O \times C_I` array of doubly block-circulant blocks. The 2D DFT
diagonalises every block at once, so the operator is unitarily equivalent to a block
diagonal matrix with one :math:`C_O \times C_I` block per frequency
:math:`\omega = (\omega_1, \omega_2)`:

.. math:: \begin{aligned}
          \hat A(\omega)_{ki} &= \hat a_{ki}(\omega), \\
          \sigma(\text{layer}) &= \bigcup_{\omega} \sigma\bigl(\hat A(\omega)\bigr)
          \end{aligned}

(Sedghi, Gupta and Long, 2019); a 1D layer is the same with one axis. PyTorch's
cross-correlation conjugates :math:`\hat A(\omega)` and multiplies it by a phase, which changes
no singular value. Since the weight is real, :math:`\hat A(-\omega) = \overline{\hat A(\omega)}`,
so the half-spectrum of ``torch.fft.rfftn`` holds every distinct block.

ConvNorm multiplies row :math:`k` of every block by :math:`\hat v_k(\omega) =
(s_k(\omega) + \varepsilon)^{-1/2}` (see :mod:`convnorm.fourier`), which gives each row
unit norm when :math:`\varepsilon = 0`. Output channel :math:`k` alone is the wide
operator :math:`A_k = [C_{a_{k1}} \cdots C_{a_{kC_I}}]`, with singular values
:math:`\sqrt{s_k(\omega)}` over all :math:`\omega`: its condition number is
:math:`\sqrt{\max_\omega s_k / \min_\omega s_k}`.

The per-frequency matrices are small (at most a few hundred rows), and the batched LAPACK calls
on them run on torch's threads, however many the caller sets (``torch.set_num_threads``).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from .fourier import kernel_autocorrelation, kernel_power_spectrum, normalizer_from_autocorrelation, normalizer_spectrum
from .functional import normalizing_autocorrelation
from .layers import ConvNorm1d, ConvNorm2d
from .validation import as_size, check_finite, check_kernel_fits, check_non_negative, check_weight

__all__ = [
    "conv_spectrum",
    "convnorm_spectrum",
    "spectrum_singular_values",
    "conv_singular_values",
    "convnorm_singular_values",
    "channel_condition_numbers",
    "layer_spectral_norm",
    "operator_matrix",
    "LayerSpectrum",
    "analyse_conv_layers",
    "deployed_channel_condition_numbers",
    "deployed_spectrum",
]


def _checked_size(weight: torch.Tensor, input_size: int | Sequence[int]) -> tuple[int, ...]:
    """``input_size`` as one int per kernel axis of ``weight``, once ``weight`` (a finite
    ``(C_out, C_in, *kernel)`` tensor) and the size are checked and the kernel fits."""
    size = as_size("input_size", input_size, check_weight(weight))
    check_finite("weight", weight)
    check_kernel_fits(weight.shape[2:], size, "input")
    return size


def conv_spectrum(weight: torch.Tensor, input_size: int | Sequence[int]) -> torch.Tensor:
    r"""The per-frequency matrices :math:`\hat A(\omega)_{ki} = \hat a_{ki}(\omega)` of the circular conv layer.

    Each kernel is zero-padded (at the start of each axis) to ``input_size`` and
    transformed with ``rfftn``; the kernel must fit in the signal.

    Args:
        weight: ``(C_out, C_in, m)`` or ``(C_out, C_in, m_1, m_2)`` real tensor.
        input_size: the circular signal size :math:`n` (or one int for every axis).

    Returns:
        complex ``(n_1, n_2 // 2 + 1, C_out, C_in)`` (1D: ``(n // 2 + 1, C_out, C_in)``): one
        :math:`C_O \times C_I` matrix per frequency of the half-spectrum.
    """
    return _conv_spectrum(weight, _checked_size(weight, input_size))


def _conv_spectrum(weight: torch.Tensor, size: tuple[int, ...]) -> torch.Tensor:
    """:func:`conv_spectrum` of a checked ``weight`` and ``size`` (:func:`_checked_size`)."""
    real = weight if weight.is_floating_point() else weight.double()
    axes = tuple(range(2, weight.dim()))
    return torch.fft.rfftn(real, s=size, dim=axes).permute(*axes, 0, 1)


def convnorm_spectrum(weight: torch.Tensor, input_size: int | Sequence[int], eps: float = 0.0) -> torch.Tensor:
    r"""The per-frequency matrices of the ConvNorm layer: :math:`\hat v_k(\omega)\,\hat a_{ki}(\omega)`.

    With ``eps = 0`` every row of every matrix has unit Euclidean norm (a frequency
    where a channel's kernels all vanish gives ``nan``; use ``eps > 0`` there).
    Same shape as :func:`conv_spectrum`.
    """
    size = _checked_size(weight, input_size)
    eps = check_non_negative("eps", eps)
    return _conv_spectrum(weight, size) * _row_gain(normalizer_spectrum(weight.detach(), size, eps))


def _row_gain(gain: torch.Tensor) -> torch.Tensor:
    """A per-channel, per-frequency gain ``(C_out, *half spectrum)`` laid out to multiply the rows
    of per-frequency matrices ``(*half spectrum, C_out, C_in)``."""
    return gain.movedim(0, -1).unsqueeze(-1)


def _full_grid_index(size: tuple[int, ...], device: torch.device) -> tuple[torch.Tensor, ...]:
    """Map every frequency of the full grid of ``size`` to its half-spectrum partner: a
    frequency past the middle of the last axis is the conjugate of :math:`-\\omega`."""
    grids = torch.meshgrid(*[torch.arange(n, device=device) for n in size], indexing="ij")
    mirrored = grids[-1] > size[-1] // 2
    return tuple(torch.where(mirrored, (-grid) % n, grid) for grid, n in zip(grids, size))


def spectrum_singular_values(spectrum: torch.Tensor, input_size: int | Sequence[int]) -> torch.Tensor:
    r"""All singular values of the circular layer whose half-spectrum is ``spectrum``.

    Computes ``torch.linalg.svdvals`` of every :math:`C_O \times C_I` block of the
    half-spectrum (one batched call) and repeats each block's values for its mirrored
    frequency :math:`-\omega`, whose block is the complex conjugate.

    Args:
        spectrum: complex ``(n_1, n_2 // 2 + 1, C_out, C_in)`` (or ``(n // 2 + 1, C_out, C_in)``),
            e.g. from :func:`conv_spectrum`.
        input_size: :math:`n`; needed because the last size is not recoverable from the
            half-spectrum.

    Returns:
        ``(\prod n \cdot \min(C_O, C_I),)`` real tensor, sorted in decreasing order: the
        singular values, with multiplicity, of the dense operator.
    """
    size = as_size("input_size", input_size, spectrum.dim() - 2 if spectrum.dim() in (3, 4) else 2)
    half = (*size[:-1], size[-1] // 2 + 1)
    if spectrum.dim() not in (3, 4) or tuple(spectrum.shape[:-2]) != half:
        raise ValueError(f"spectrum must have shape {(*half, 'C_out', 'C_in')} for input_size {size}, "
                         f"got {tuple(spectrum.shape)}")
    values = torch.linalg.svdvals(spectrum.contiguous())  # (*half, min(C_O, C_I))
    return values[_full_grid_index(size, values.device)].flatten().sort(descending=True).values


def conv_singular_values(weight: torch.Tensor, input_size: int | Sequence[int]) -> torch.Tensor:
    r"""Exact singular values of the circular conv layer ``weight`` on signals of ``input_size``.

    :math:`\sigma(\text{layer}) = \bigcup_\omega \sigma(\hat A(\omega))`: one batched
    ``rfftn`` of the kernels and one batched ``svdvals``. Valid for a stride-1,
    ungrouped, undilated layer with circular padding (the padding amount only shifts
    the output, which leaves the singular values unchanged).

    Args:
        weight: ``(C_out, C_in, m_1, m_2)`` or ``(C_out, C_in, m)``.
        input_size: :math:`n` or an int; each kernel side must be at most the signal's.

    Returns:
        ``(\prod n \cdot \min(C_O, C_I),)``, sorted in decreasing order.

    Example:
        >>> w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
        >>> conv_singular_values(w, 8).shape
        torch.Size([192])
    """
    return spectrum_singular_values(conv_spectrum(weight, input_size), input_size)


def convnorm_singular_values(
    weight: torch.Tensor, input_size: int | Sequence[int], eps: float = 0.0
) -> torch.Tensor:
    """Singular values of the circular layer after ConvNorm (see :func:`convnorm_spectrum`).

    Same shape and order as :func:`conv_singular_values`.
    """
    return spectrum_singular_values(convnorm_spectrum(weight, input_size, eps), input_size)


def channel_condition_numbers(
    weight: torch.Tensor, input_size: int | Sequence[int], normalized: bool = False, eps: float = 0.0
) -> torch.Tensor:
    r"""Condition number of each output channel's operator :math:`A_k` (or :math:`Q_k`), 1D or 2D.

    :math:`A_k A_k^\top` is circulant with eigenvalues :math:`s_k(\omega)`, so
    :math:`\kappa(A_k) = \sqrt{\max_\omega s_k(\omega) / \min_\omega s_k(\omega)}`. With
    ``normalized=True`` the spectrum is that of :math:`Q_k = P_k A_k`,
    :math:`s_k / (s_k + \varepsilon)`, whose condition number is 1 when ``eps = 0``.

    Returns:
        ``(C_out,)``; ``inf`` for a channel whose spectrum vanishes somewhere.
    """
    size = _checked_size(weight, input_size)
    eps = check_non_negative("eps", eps)
    power = kernel_power_spectrum(weight.detach(), size)  # (C_out, *half spectrum)
    if normalized:
        power = power / (power + eps)
    flat = power.flatten(1)
    return (flat.amax(1) / flat.amin(1)).sqrt()


def deployed_spectrum(module: nn.Module, input_size: int | Sequence[int],
                      batchnorm: nn.BatchNorm2d | None = None) -> torch.Tensor:
    r"""Per-frequency matrices of the operator a trained conv layer applies in evaluation mode.

    For a plain convolution (``nn.Conv2d``, or one under a weight parametrization such as
    spectral normalization or ONI: its ``weight`` is the normalized one) that is
    :math:`\hat A(\omega)`. For a :class:`~convnorm.layers.ConvNorm2d` it is

    .. math::

        \begin{aligned}
        M(\omega) &= \operatorname{diag}_k\big(|\hat g_k(\omega)|\,\bar v_k(\omega)\big)\,\hat A(\omega), \\
        \bar v_k &= (\mathcal F_n(\bar r_k) + \varepsilon)^{-1/2},
        \end{aligned}

    with :math:`\bar r_k` the autocorrelation the layer normalizes with in evaluation mode
    (:func:`~convnorm.functional.normalizing_autocorrelation`: the running average, or the
    current one before any training step) and :math:`\hat g_k` the spectrum of the affine
    kernel, so it analyses what the network computes at test time rather than the raw
    :math:`P_k A_k`. Only the moduli of the diagonal factors enter: a unimodular
    diagonal (the affine kernel's phase) leaves the singular values unchanged. A
    ``batchnorm`` that follows in evaluation mode multiplies row :math:`k` by
    :math:`|\gamma_k| / \sqrt{\sigma_k^2 + \varepsilon}`, a gain that no
    normalization of the kernels bounds. Layers are taken at stride 1 as circular
    operators at ``input_size`` (as in :func:`conv_singular_values`).

    Returns:
        complex ``(n_1, n_2 // 2 + 1, C_out, C_in)`` in float64: pass it to
        :func:`spectrum_singular_values` or :func:`deployed_channel_condition_numbers`.
    """
    if getattr(module, "groups", 1) != 1 or any(d != 1 for d in getattr(module, "dilation", (1,))):
        raise ValueError("module must have groups=1 and dilation=1 (the operator analysed here)")
    weight = cast(torch.Tensor, module.weight).detach().double()
    size = _checked_size(weight, input_size)
    spectrum = _conv_spectrum(weight, size)
    gain = torch.ones(weight.shape[0], *spectrum.shape[:-2], dtype=torch.float64, device=weight.device)
    if isinstance(module, (ConvNorm1d, ConvNorm2d)):
        r = normalizing_autocorrelation(kernel_autocorrelation(weight), module.running_autocorrelation,
                                        module.num_steps_tracked, training=False)
        gain = gain * normalizer_from_autocorrelation(r, size, module.eps)
        if module.affine_weight is not None:
            axes = tuple(range(1, weight.dim() - 1))
            gain = gain * torch.fft.rfftn(module.affine_weight.detach().double(), s=size, dim=axes).abs()
    if batchnorm is not None:
        running_var = cast(torch.Tensor, batchnorm.running_var)  # a BatchNorm in evaluation keeps it
        scale = batchnorm.weight.detach().double() / (running_var.double() + batchnorm.eps).sqrt()
        gain = gain * scale.abs().reshape(-1, *[1] * len(size))
    return spectrum * _row_gain(gain)


def deployed_channel_condition_numbers(spectrum: torch.Tensor) -> torch.Tensor:
    r"""Condition number of each output channel's operator from per-frequency matrices
    (e.g. :func:`deployed_spectrum`): channel :math:`k` alone is the circular operator
    with eigenvalues :math:`\|M(\omega)_{k,:}\|^2` of its Gram matrix, so
    :math:`\kappa_k = \max_\omega \|M(\omega)_{k,:}\| / \min_\omega \|M(\omega)_{k,:}\|`
    (the mirrored half of the spectrum repeats the same norms). Returns ``(C_out,)``."""
    rows = spectrum.abs().square().sum(-1).flatten(0, -2)  # (frequencies, C_out)
    return (rows.amax(0) / rows.amin(0)).sqrt()


def layer_spectral_norm(
    weight: torch.Tensor, input_size: int | Sequence[int], normalized: bool = False, eps: float = 0.0
) -> torch.Tensor:
    r"""Largest singular value of the circular layer (1D or 2D), :math:`\max_\omega \|\hat A(\omega)\|_2`.

    With ``normalized=True``, that of the ConvNorm layer, which is at most
    :math:`\sqrt{C_O}` because every row of :math:`\hat v \odot \hat A(\omega)` has unit norm.
    Computed as :math:`\sqrt{\lambda_{\max}}` of the smaller Gram matrix per frequency.
    """
    spectrum = convnorm_spectrum(weight, input_size, eps) if normalized else conv_spectrum(weight, input_size)
    # sigma_max^2 is the largest eigenvalue of the smaller Gram matrix (cheaper than an SVD)
    gram = spectrum.mH @ spectrum if spectrum.shape[-1] <= spectrum.shape[-2] else spectrum @ spectrum.mH
    top = torch.linalg.eigvalsh(gram)[..., -1]
    return top.amax().clamp_min(0).sqrt()


def operator_matrix(fn: Callable[[torch.Tensor], torch.Tensor], input_shape: Sequence[int]) -> torch.Tensor:
    r"""The dense matrix :math:`M` of a linear map ``fn``, with :math:`M \operatorname{vec}(x) =
    \operatorname{vec}(\mathrm{fn}(x))`.

    ``fn`` is applied once to a batch holding every standard basis tensor of shape
    ``input_shape`` (so ``fn`` must accept a leading batch dimension); column ``j`` of
    the result is ``fn(e_j)`` flattened. Use it on small sizes only: the batch has
    ``prod(input_shape)`` entries.

    Returns:
        float64 ``(prod(output_shape), prod(input_shape))``.
    """
    shape = tuple(int(s) for s in input_shape)
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"input_shape must be a non-empty tuple of positive ints, got {input_shape!r}")
    numel = math.prod(shape)
    basis = torch.eye(numel, dtype=torch.float64).reshape(numel, *shape)
    return fn(basis).reshape(numel, -1).T.contiguous()


@dataclass(frozen=True)
class LayerSpectrum:
    """Spectral summary of one conv layer, vanilla and after ConvNorm (``eps = 0``).

    Attributes:
        name: module name in the model.
        shape: weight shape ``(C_out, C_in, m_1, m_2)``.
        input_size: spatial size of the layer's input, at which the circular operator is taken.
        spectral_norm / spectral_norm_convnorm: largest singular value of the layer.
        condition_number / condition_number_convnorm: per-channel condition number,
            averaged over output channels.
    """

    name: str
    shape: tuple[int, ...]
    input_size: tuple[int, int]
    spectral_norm: float
    spectral_norm_convnorm: float
    condition_number: float
    condition_number_convnorm: float


def _summarise(name: str, weight: torch.Tensor, size: tuple[int, int]) -> LayerSpectrum:
    w = weight.detach()
    return LayerSpectrum(
        name=name,
        shape=tuple(w.shape),
        input_size=size,
        spectral_norm=float(layer_spectral_norm(w, size)),
        spectral_norm_convnorm=float(layer_spectral_norm(w, size, normalized=True)),
        condition_number=float(channel_condition_numbers(w, size).mean()),
        condition_number_convnorm=float(channel_condition_numbers(w, size, normalized=True).mean()),
    )


def _is_conv2d(module: nn.Module) -> bool:
    weight = getattr(module, "weight", None)
    return isinstance(module, nn.Conv2d) or (
        isinstance(weight, torch.Tensor) and weight.dim() == 4 and hasattr(module, "kernel_size")
    )


def analyse_conv_layers(
    model: nn.Module, input_size: int | Sequence[int], in_channels: int = 3, skip_pointwise: bool = True
) -> list[LayerSpectrum]:
    r"""Spectral norm and mean channel condition number of every 2D conv layer of ``model``.

    One forward pass of a zero image of size ``input_size`` records the spatial size
    each conv layer sees; each layer is then analysed as the stride-1 circular
    operator at that size (the analysis of the paper's Figure 2, after Sedghi et al.).

    Args:
        model: any ``nn.Module``; conv layers are ``nn.Conv2d`` instances or modules
            with a 4D ``weight`` and a ``kernel_size`` attribute.
        input_size: the model's input image size.
        in_channels: channels of the dummy input.
        skip_pointwise: leave out 1x1 convolutions (in a ResNet, the projection shortcuts).

    Raises:
        ValueError: for grouped or dilated conv layers, whose operator is not the one
            analysed here.
    """
    size = as_size("input_size", input_size, 2)
    in_channels = int(in_channels)
    convs = [(name, m) for name, m in model.named_modules() if _is_conv2d(m)]
    for name, m in convs:
        if getattr(m, "groups", 1) != 1 or tuple(getattr(m, "dilation", (1, 1))) != (1, 1):
            raise ValueError(f"conv layer {name!r} is grouped or dilated; only groups=1, dilation=1 are supported")
    seen: dict[str, tuple[int, int]] = {}

    def record(name: str):
        def hook(_module: nn.Module, args: tuple) -> None:
            seen.setdefault(name, tuple(args[0].shape[-2:]))
        return hook

    hooks = [m.register_forward_pre_hook(record(name)) for name, m in convs]
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            param = next(model.parameters(), None)
            dtype = param.dtype if param is not None else torch.float32
            model(torch.zeros(1, in_channels, *size, dtype=dtype))
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return [
        _summarise(name, m.weight, seen[name])
        for name, m in convs
        if name in seen and not (skip_pointwise and tuple(m.weight.shape[2:]) == (1, 1))
    ]

