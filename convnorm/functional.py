r"""The ConvNorm layer as a function: convolution, spectral normalization, affine, stride.

Notation as in :mod:`convnorm.fourier`: weight :math:`a \in \mathbb{R}^{C_O \times C_I/g
\times m}` (``m`` the kernel size, one or two dims), input :math:`x` of spatial size
:math:`n`, padding :math:`p`, stride :math:`s`, and per output channel :math:`k` the
summed autocorrelation :math:`r_k = \sum_i a_{ki} \star a_{ki}`.

What is computed is the equation, the paper's appendix procedure made exact (Liu et al. 2021):
:func:`convnorm.reference.conv_norm_reference` states it step by step, and every computation
here is tested against it. With circular padding (:math:`p = (m - 1)/2`, ``m`` odd) output
channel :math:`k` applies :math:`Q_k = (A_k A_k^\top)^{-1/2} A_k` (with :math:`\varepsilon = 0`), so
:math:`Q_k Q_k^\top = I`; with zero padding the full output of size :math:`L = n + m - 1` is
normalized at size :math:`L`, then cropped and strided. The affine kernel :math:`\rho_k` (the
paper's :math:`r_k`; renamed because :math:`r_k` is the autocorrelation here) is a circular
cross-correlation at size :math:`L` centred on tap :math:`\lfloor (m_\rho - 1)/2 \rfloor`, before
the crop, as in the paper's Algorithm 1.

Dilation :math:`d` is exact: the kernel is treated as its zero-stuffed version of size
:math:`d(m-1)+1` (whose autocorrelation is :math:`r_k` zero-stuffed). Groups are exact:
:math:`A_k` only involves the input channels of its group, so the sum in :math:`r_k`
runs over those.

How it is computed. :func:`conv_norm` checks its arguments, then prepares the layer for this
input (``convnorm._engine``): the :class:`ComputationPolicy` in force makes a plan
(``ComputationPolicy.plan``, the one place where the computation, its filter, its transforms and
its chunks are chosen; :func:`chosen_computation` says which computation; :func:`use_policy`
and :func:`computation` set the policy for a block of code), and the fixed matrices the plan
needs come from caches. The prepared layer takes the kernels' summed autocorrelation (or the
layer's running average of it), computes :math:`\hat v` from it by one product with a cosine
basis (:func:`~convnorm.fourier.normalizer_from_autocorrelation`'s formula) and hands it to one
of three computations of the same output:

- ``"pointwise"`` (1x1 kernels): :math:`\hat v_k` is the constant
  :math:`(\sum_i a_{ki}^2 + \varepsilon)^{-1/2}`, folded into the weight of one convolution;
- ``"spatial"``: the direct convolution gives :math:`y`, whose spectrum is multiplied by
  one spectrum per channel (normalizer, affine kernel and crop in one), then transformed back
  on the strided output grid only: by fused GPU kernels where Triton runs (one read of
  :math:`y`, one write of the output, in the activations' dtype), by dense DFT matrices on a
  CPU for small sizes, by FFTs otherwise;
- ``"frequency_domain"`` (2D, one group, no dilation; on a CPU for strided layers and maps up
  to 32x32): no spatial convolution at all, one matrix product per frequency, which costs
  fewer operations than the full-size, unstrided convolution the procedure needs; with the
  policy's ``frequency_domain_gemms``, by real DFT matrices and one batched product over the
  frequencies (``convnorm._frequency_gemm``), the form for a GPU's tensor cores.

:class:`~convnorm.layers.ConvNorm2d` keeps its prepared layer from call to call while the input's
shape, dtype and device, the policy, grad mode and autocast stay the same, so its forward passes
few Python frames and dispatches about as many operators as the authors' algorithm;
:func:`clear_caches` frees every cached matrix.

Stop-gradient (the argument ``stop_gradient``): by default :math:`\hat v_k` is computed from
the *detached* weight, so the weight gradient flows through the convolution only (the
paper's choice). Mixed precision: under ``torch.autocast`` the normalizer runs in float32, and
so does the whole computation (FFTs of half-precision data lose too much), the result cast to
the autocast dtype like the output of a convolution under autocast; with the fused filter the
convolution runs in the autocast dtype instead and the filter reads it in that dtype,
accumulating in float32 (``ComputationPolicy.float32_convolution`` keeps it in float32); the
frequency domain by matrix products (``ComputationPolicy.frequency_domain_gemms``) runs its
transforms and products in the autocast dtype, accumulating in float32, with the normalizer and
the kernels' spectra folded in float32.
float16 and bfloat16 inputs outside autocast (a ``model.half()``) are computed in float32 too
and the result cast back to their dtype, except by the fused filter, which takes them as they are.

The layers' running average (``running_autocorrelation``, ``num_steps_tracked``) is passed in
and updated in place here when ``training``, as ``torch.nn.functional.batch_norm`` updates
BatchNorm's running statistics; the layer keeps the buffers and computes the averaging
factor.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from ._caches import clear_caches, exporting, outside_export
from ._engine import autocast_dtype, averaged_autocorrelation, plan_of, prepare
from ._geometry import PADDING_MODES, check_dtypes, layer_geometry
from ._policy import COMPUTATIONS, FILTERS, ComputationPolicy, computation, current_policy, use_policy
from .precision import HALF_DTYPES
from .validation import check_non_negative, check_tensor, check_weight

__all__ = [
    "COMPUTATIONS", "FILTERS", "HALF_DTYPES", "PADDING_MODES", "ComputationPolicy", "chosen_computation",
    "clear_caches", "computation", "conv_norm", "conv_norm1d", "conv_norm2d", "current_policy",
    "normalizing_autocorrelation", "use_policy",
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
    stop_gradient: bool = True,
    running_autocorrelation: torch.Tensor | None = None,
    num_steps_tracked: torch.Tensor | None = None,
    training: bool = False,
    averaging_factor: torch.Tensor | float | None = None,
) -> torch.Tensor:
    r"""Normalized convolution (ConvNorm), 1D or 2D: see the module docstring for the math.

    Args:
        input: ``(N, C_in, n)`` or ``(N, C_in, n_1, n_2)``, or one sample without the batch axis
            (``(C_in, *n)``, as ``conv2d`` takes it).
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
        stop_gradient: compute :math:`\hat v` from ``weight.detach()`` (default, as the
            paper); if False the gradient also flows through :math:`\hat v`.
        running_autocorrelation: ``(C_out, *(2 * kernel - 1))``, a running average of the
            summed autocorrelation of the (undilated) kernels, or None to normalize with the
            weight's own. See :func:`normalizing_autocorrelation` for how it is used and
            updated with ``num_steps_tracked`` (int64 scalar), ``training`` and
            ``averaging_factor`` (:math:`\mu_u`, needed when ``training``).

    Returns:
        ``(N, C_out, *out)`` with ``out = (n + 2 p - d (m - 1) - 1) // s + 1``, the same
        shape and memory format as the convolution with these arguments (``(C_out, *out)`` for
        an input without the batch axis).

    Raises:
        ValueError: naming the argument, for anything the procedure is not defined for; for an
            ``input`` that does not fit ``weight`` (its shape, channels, size, dtype; naming both
            dtypes when ``input`` and ``weight`` differ outside ``torch.autocast``) a
            :class:`~convnorm.validation.InputError`, also ``F.conv2d``'s ``RuntimeError``.
        TypeError: naming the type, for an ``input`` that is not a tensor.
    """
    unbatched = isinstance(input, torch.Tensor) and isinstance(weight, torch.Tensor) and input.dim() == weight.dim() - 1
    if unbatched:  # one sample, as torch.nn.functional.conv2d takes it: a batch of one
        input = input.unsqueeze(0)
    deployed = exporting()
    with outside_export():  # exported: sizes as ints and matrices as constants, not recorded
        geometry = layer_geometry(input, weight, stride, padding, dilation, groups, padding_mode, bias, affine_weight)
        eps = check_non_negative("eps", eps)
        autocast = autocast_dtype(input.device.type)
        check_dtypes(input, weight, autocast)
        if running_autocorrelation is not None:
            _check_running_average(weight, running_autocorrelation, num_steps_tracked, training, averaging_factor)
        stop_gradient = stop_gradient or not (weight.requires_grad and torch.is_grad_enabled())
        prepared = prepare(input.dtype, input.device, tuple(weight.shape), geometry, eps,
                           None if affine_weight is None else tuple(affine_weight.shape[1:]), stop_gradient,
                           current_policy(), autocast, deployed)
    factor = None
    if running_autocorrelation is not None and training:
        factor = torch.as_tensor(averaging_factor, device=running_autocorrelation.device,
                                 dtype=running_autocorrelation.dtype)
    out = prepared.run(input, weight, bias, affine_weight, running_autocorrelation, num_steps_tracked, training,
                       factor)
    return out.squeeze(0) if unbatched else out


def normalizing_autocorrelation(current: torch.Tensor, running_autocorrelation: torch.Tensor,
                                num_steps_tracked: torch.Tensor, training: bool,
                                averaging_factor: torch.Tensor | float | None = None) -> torch.Tensor:
    r"""The summed autocorrelation a layer with a running average normalizes with.

    In training, ``current`` (the weight's own, :math:`r`), after the running average
    :math:`\bar r` is updated in place, :math:`\bar r \leftarrow f\, r + (1 - f)\, \bar r` with
    :math:`f` = ``averaging_factor``, and ``num_steps_tracked`` advanced by one; both are left
    as they are if :math:`r` is not finite. In evaluation, :math:`\bar r` once a training step
    has updated it, else ``current``. ``torch.where``, not a Python branch, so a captured CUDA
    graph keeps the choice and nothing synchronises with the host."""
    factor = None
    if training:
        factor = torch.as_tensor(averaging_factor, device=running_autocorrelation.device,
                                 dtype=running_autocorrelation.dtype)
    with torch.no_grad():
        return averaged_autocorrelation(current, running_autocorrelation, num_steps_tracked, training, factor)


def _check_running_average(weight: torch.Tensor, running_autocorrelation, num_steps_tracked, training: bool,
                           averaging_factor) -> None:
    """``ValueError`` naming the argument unless the running average's arguments fit ``weight``."""
    expected = (weight.shape[0], *(2 * k - 1 for k in weight.shape[2:]))
    if tuple(getattr(running_autocorrelation, "shape", ())) != expected:
        raise ValueError(f"running_autocorrelation must have shape {expected}, "
                         f"got {tuple(getattr(running_autocorrelation, 'shape', ()))}")
    check_tensor("num_steps_tracked", num_steps_tracked)
    if training and averaging_factor is None:
        raise ValueError("averaging_factor must be given to update running_autocorrelation in training")


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
    - ``"spatial"``: the full convolution, then the per-channel filter (fused GPU kernels
      where Triton runs, dense DFT matrices on a CPU for small 2D sizes, FFTs otherwise).

    The gradient flows through :math:`\hat v` (which only the spatial computation allows)
    when ``stop_gradient`` is False, ``weight`` requires grad and grad mode is on. Under
    ``torch.autocast``, and for float16/bfloat16 inputs, the input counts as float32, as
    :func:`conv_norm` computes in it.
    Raises the ``ValueError`` that :func:`conv_norm` raises for the same arguments."""
    geometry = layer_geometry(input, weight, stride, padding, dilation, groups, padding_mode)
    stop_gradient = stop_gradient or not (weight.requires_grad and torch.is_grad_enabled())
    return plan_of(input, tuple(weight.shape), geometry, stop_gradient, current_policy()).computation


def conv_norm2d(input: torch.Tensor, weight: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """:func:`conv_norm` for 2D: input ``(N, C_in, H, W)``, weight ``(C_out, C_in/g, m_1, m_2)``."""
    check_weight(weight, (2,))
    return conv_norm(input, weight, *args, **kwargs)


def conv_norm1d(input: torch.Tensor, weight: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """:func:`conv_norm` for 1D: input ``(N, C_in, n)``, weight ``(C_out, C_in/g, m)``."""
    check_weight(weight, (1,))
    return conv_norm(input, weight, *args, **kwargs)
