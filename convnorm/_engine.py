r"""A ConvNorm layer prepared once for an input signature, then run with few operations.

Everything :func:`convnorm.functional.conv_norm` decides about a call depends on the layer's
arguments and on the input's shape, dtype and device, the policy in force, grad mode and
autocast, never on the values: the checks, the :class:`~convnorm._policy.Plan`, and the fixed
matrices the computation applies (the kernels' lag map, the normalizer's cosine basis, the
affine kernel's basis, DFT matrices). :func:`prepare` makes all of that once into a
:class:`Prepared`, whose :meth:`~Prepared.run` then does only the arithmetic:

1. the summed autocorrelation :math:`r_k` of the kernels, from their Gram matrices
   (:func:`~convnorm.fourier.kernel_autocorrelation`'s method, its lag map kept);
2. the running average (:func:`averaged_autocorrelation`), when the layer keeps one;
3. the normalizer :math:`\hat v_k = (\mathcal F_L r_k + \varepsilon)^{-1/2}` by one product with
   the cosine basis (:func:`~convnorm.fourier.autocorrelation_power_spectrum`'s method), with
   :math:`\max(\cdot, \varepsilon)` in place of the clamp at 0 followed by
   :math:`+\varepsilon` (the same number: the product already holds :math:`+\varepsilon`), in the
   form the computation reads (:attr:`Computation.reads`): :math:`\hat v` on the half spectrum's
   grid, or the spatial filter's gain (each value twice; for the FFT filter the inverse
   transform's :math:`1/\prod L` folded in as a scale of the basis and of :math:`\varepsilon` by
   :math:`(\prod L)^2`);
4. the computation the plan names (:attr:`~convnorm._policy.Plan.method`), one class each in
   :data:`REGISTRY`: :class:`Pointwise`, :class:`Spatial` (the convolution, then the filter),
   :class:`FrequencyDomain` (chunked) and :class:`FrequencyGemms` (by matrix products in the
   plan's ``gemm_dtype``). Each makes its constants once, when the layer is prepared; the plan,
   made once per layer shape, says why it chose it (:attr:`~convnorm._policy.Plan.reason`).
   In a program traced for deployment (``torch.export``, ``torch.onnx.export``,
   ``torch.jit.trace``: :func:`convnorm._caches.exporting`) the plan is
   the spatial computation with the planar filter, plain real operations that every exporter
   and runtime takes, and its matrices are constants of the traced program; in evaluation the
   running average is read from its buffer in the program, so the program follows the buffers
   it is given.

A layer keeps its :class:`Prepared` and uses it while the signature and policy stay the same
(:class:`convnorm.layers.ConvNorm2d`), so a forward call passes few Python frames and
dispatches about as many operators as the authors' algorithm; the functional form looks its
prepared layer up in a cache on every call. Nothing prepared under tracing (``torch.compile``,
``torch.export``: fake or symbolic tensors) is kept (:func:`convnorm._caches.tracing`), except
what a layer that ``torch.compile`` traces at a static size prepares outside the trace, of real
tensors (:func:`prepare_at_trace_time`), so that the compiled program reads its constants.
"""
from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from typing import ClassVar, cast

import torch
import torch.nn.functional as F

from ._caches import cached
from ._compat import autocast_available, disable_current_modes
from ._frequency_domain import FrequencyDomainConvNorm, chunked, frequency_domain_constants
from ._frequency_gemm import frequency_gemm_conv_norm, products_constants
from ._geometry import CONV, LayerGeometry
from ._policy import EXPORTED_FILTER, ComputationPolicy, Plan
from ._spatial import SpectralFilter, gain_scale, spatial_conv_norm, spatial_filter
from .dft import cosine_basis
from .fourier import autocorrelation_by_convolution, kernel_autocorrelation, lag_map
from .precision import FLOAT_DTYPES

_functorch_active = torch._C._are_functorch_transforms_active
"""Whether a ``torch.func`` transform (``grad``, ``vmap``, ...) is running: one C call (the
check ``torch.autograd.Function.apply`` makes itself)."""


def averaged_autocorrelation(current: torch.Tensor, running: torch.Tensor, steps: torch.Tensor, training: bool,
                             factor: torch.Tensor | None) -> torch.Tensor:
    r"""The autocorrelation a layer with a running average normalizes with (all ``(C, P)``).

    In training, ``current`` (:math:`r`), after ``running`` (:math:`\bar r`) is updated in place,
    :math:`\bar r \leftarrow \bar r + f (r - \bar r)` with :math:`f` = ``factor`` (a tensor of
    ``running``'s dtype), and ``steps`` advanced by one; both are left as they are if :math:`r` is
    not finite (:math:`\bar r` is then lerped to itself, which leaves it unchanged). In evaluation,
    :math:`\bar r` once a training step has updated it, else ``current``. ``torch.where``, not a
    Python branch, so a captured CUDA graph keeps the choice and nothing synchronises with the host."""
    if training:
        if factor is None:
            raise ValueError("factor must be a tensor in training: the running average's weight of the new value")
        finite = (current * 0 == 0).all()  # x * 0 is 0 for finite x, NaN for inf and NaN: isfinite's meaning
        update = current.detach() if current.requires_grad else current
        if update.dtype != running.dtype:
            update = update.to(running.dtype)
        running.lerp_(torch.where(finite, update, running), factor)
        steps.add_(finite)
        return current
    return torch.where(steps > 0, running, current)


@cached(maxsize=32)
def ramp_table(ramp_steps: int, ramp_floor: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    r"""``(ramp_steps + 1,)``: the running average's factor :math:`\mu_u` at every step
    :math:`u \le T` (:meth:`convnorm.layers.ConvNorm2d.ramp_factor`'s formula, in float64, then
    ``dtype``): one index per training step instead of a cosine's few operations. The layer reads
    it by ``index_select`` with the step count (a ``(1,)`` factor), not ``take``: inductor compiles
    no ``take`` with a 0-dim index."""
    u = torch.arange(ramp_steps + 1, dtype=torch.float64)
    factor = (0.5 * (1 + torch.cos(math.pi * u / ramp_steps))).clamp(min=ramp_floor)
    return factor.to(dtype=dtype, device=device)


class Computation:
    r"""One way to compute the layer once the normalizer is known: the constants it needs, made
    once for one plan (``__init__``), and the arithmetic of one call (``__call__``). A subclass
    says on which grid the normalizer is computed for it and in what form it reads it
    (:attr:`reads`): :math:`\hat v` itself, or the spatial filter's gain."""

    __slots__ = ("relayout",)
    reads: ClassVar[str] = "v_hat"
    r"""The normalizer's form :meth:`__call__` reads: ``"v_hat"`` (:math:`\hat v` on the half
    spectrum's grid, ``(C, *half)``) or ``"gain"`` (the spatial filter's, :mod:`convnorm._spatial`)."""
    relayout: bool
    """Whether its output is contiguous whatever the input's memory format, so that the engine
    turns it back to channels-last for a channels-last input, as a convolution keeps it."""

    def __init__(self, plan: Plan, geometry: LayerGeometry, taps: tuple[int, ...], computing: torch.dtype,
                 device: torch.device) -> None:
        self.relayout = True

    def normalizer_grid(self, geometry: LayerGeometry) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(dilation, size)``: the kernels' dilation and the normalization size the normalizer is
        computed at (:func:`~convnorm.dft.cosine_basis`'s)."""
        return geometry.dilation, geometry.length

    def __call__(self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                 affine_weight: torch.Tensor, normalizer: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class Pointwise(Computation):
    r"""1x1 kernels: the summed autocorrelation is the squared norm :math:`\sum_i a_{ki}^2`, so
    :math:`\hat v_k = (\sum_i a_{ki}^2 + \varepsilon)^{-1/2}` is the same at every frequency and the
    affine kernel has one tap: both are per-channel scales, folded into the weight of one
    convolution (no transform)."""

    __slots__ = ("convolve",)

    def __init__(self, plan: Plan, geometry: LayerGeometry, taps: tuple[int, ...], computing: torch.dtype,
                 device: torch.device) -> None:
        self.relayout = False  # the convolution keeps the input's memory format
        self.convolve = functools.partial(CONV[len(geometry.size)], stride=geometry.stride, padding=0,
                                          dilation=geometry.dilation, groups=geometry.groups)

    def normalizer_grid(self, geometry: LayerGeometry) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """One frequency: :math:`\\hat v` is a constant."""
        ones = (1,) * len(geometry.size)
        return ones, ones

    def __call__(self, input, weight, bias, affine_weight, normalizer):
        scale = (normalizer.view(-1) * affine_weight.view(-1)).view(-1, *([1] * (weight.dim() - 1)))
        return self.convolve(input, weight * scale, bias)


class Spatial(Computation):
    """The full convolution, then the per-channel filter (:mod:`convnorm._spatial`), the plan's
    filter; the fused filter's convolution in the plan's ``convolution_dtype``. It reads the
    filter's gain (:mod:`convnorm._spatial`)."""

    __slots__ = ("geometry", "computing", "convolve", "convolution_dtype", "spec", "hand_written")
    reads: ClassVar[str] = "gain"

    def __init__(self, plan: Plan, geometry: LayerGeometry, taps: tuple[int, ...], computing: torch.dtype,
                 device: torch.device) -> None:
        # the fused kernels keep the input's memory format; the transforms return contiguous tensors
        self.relayout = plan.filter != "fused"
        self.geometry, self.computing = geometry, computing
        self.convolve = full_convolution(geometry)
        self.convolution_dtype = plan.convolution_dtype
        filter = cast(str, plan.filter)  # set for every spatial plan
        self.spec = spatial_filter(geometry, filter, taps, computing, device, plan.products_by_sample,
                                   plan.dot_precision)
        # the filter's hand-written backward, with the stop-gradient; the planar filter has none
        self.hand_written = plan.stop_gradient and filter != EXPORTED_FILTER

    def __call__(self, input, weight, bias, affine_weight, normalizer):
        if _functorch_active():  # torch.func: plain operations, no custom backward
            return by_operations(self, input, weight, bias, affine_weight, normalizer, self.spec.filter)
        if self.convolution_dtype is not None:  # the fused filter's, in its dtype
            input, weight = input.to(self.convolution_dtype), weight.to(self.convolution_dtype)
        y = self.convolve(input, weight)
        if self.hand_written:
            return SpectralFilter.apply(y, affine_weight, bias, (normalizer, self.spec))
        return spatial_conv_norm(y, affine_weight, normalizer, bias, self.spec)


class FrequencyDomain(Computation):
    """One complex matrix product per frequency, chunked (:mod:`convnorm._frequency_domain`)."""

    __slots__ = ("geometry", "computing", "v_hat_shape", "constants", "convolve")

    def __init__(self, plan: Plan, geometry: LayerGeometry, taps: tuple[int, ...], computing: torch.dtype,
                 device: torch.device) -> None:
        self.relayout = True
        self.geometry, self.computing = geometry, computing
        self.v_hat_shape = half_spectrum_shape(geometry)
        self.constants = chunked(frequency_domain_constants(geometry, taps, computing, device, plan.dense_input,
                                                            plan.dense_output), plan.frequencies_per_chunk)
        self.convolve = full_convolution(geometry)  # torch.func's computation (by_operations)

    def __call__(self, input, weight, bias, affine_weight, normalizer):
        if _functorch_active():  # torch.func: plain operations, no custom backward
            return by_operations(self, input, weight, bias, affine_weight, normalizer, None)
        out = FrequencyDomainConvNorm.apply(input, weight, affine_weight,
                                            (normalizer.view(self.v_hat_shape), self.constants))
        return out if bias is None else out + bias.view(-1, 1, 1)


class FrequencyGemms(Computation):
    """The frequency domain by matrix products only, in the plan's ``gemm_dtype``
    (:mod:`convnorm._frequency_gemm`): plain operations, which ``torch.func`` takes as they are."""

    __slots__ = ("v_hat_shape", "constants")

    def __init__(self, plan: Plan, geometry: LayerGeometry, taps: tuple[int, ...], computing: torch.dtype,
                 device: torch.device) -> None:
        self.relayout = False  # channels-last in, channels-last out, by its own layout
        self.v_hat_shape = half_spectrum_shape(geometry)
        self.constants = products_constants(geometry, taps, cast(torch.dtype, plan.gemm_dtype), device)

    def __call__(self, input, weight, bias, affine_weight, normalizer):
        return frequency_gemm_conv_norm(input, weight, bias, affine_weight, normalizer.view(self.v_hat_shape),
                                        self.constants)


REGISTRY: dict[str, type[Computation]] = {"pointwise": Pointwise, "spatial": Spatial,
                                          "frequency_domain": FrequencyDomain, "frequency_gemms": FrequencyGemms}
"""Each computation's class, by the name a plan gives it (:attr:`convnorm._policy.Plan.method`)."""


def half_spectrum_shape(geometry: LayerGeometry) -> tuple[int, ...]:
    """``(-1, L_0, ..., L_{d-1} // 2 + 1)``: :math:`\\hat v` viewed on the ``rfftn`` grid."""
    length = geometry.length
    return (-1, *length[:-1], length[-1] // 2 + 1)


def full_convolution(geometry: LayerGeometry) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The full convolution :math:`y = a \\star x` at the normalization size :math:`L`: zero
    padding :math:`m - 1` on each side, or the circular padding then a valid convolution."""
    conv = CONV[len(geometry.size)]
    if geometry.padding_mode == "circular":
        return functools.partial(_circular_convolution, conv, geometry)
    return functools.partial(conv, bias=None, stride=1, padding=tuple(m - 1 for m in geometry.kernel),
                             dilation=geometry.dilation, groups=geometry.groups)


def _circular_convolution(conv: Callable[..., torch.Tensor], geometry: LayerGeometry, input: torch.Tensor,
                          weight: torch.Tensor) -> torch.Tensor:
    """The circular convolution at size :math:`L = n`: circular padding, then a valid convolution."""
    pad = [p for p in reversed(geometry.padding) for _ in range(2)]
    return conv(F.pad(input, pad, mode="circular"), weight, None, 1, 0, geometry.dilation, geometry.groups)


def by_operations(computation: Spatial | FrequencyDomain, input: torch.Tensor, weight: torch.Tensor,
                  bias: torch.Tensor | None, affine_weight: torch.Tensor, normalizer: torch.Tensor,
                  filter: str | None) -> torch.Tensor:
    """The layer by plain operations that autograd and ``torch.func`` differentiate (the custom
    backward functions take no ``torch.func`` transform): the full convolution, then the filter by
    real DFT matrices (2D: the planar filter of exported programs) or FFTs (1D, whose dense
    matrices would grow as the square of the signal's length), the normalizer taken as the
    constant it is with the stop-gradient. ``normalizer`` is what ``computation`` reads: the gain of
    the spatial ``filter``, or :math:`\\hat v` (``filter`` None), turned into this filter's gain."""
    geometry = computation.geometry
    planar = EXPORTED_FILTER if len(geometry.size) == 2 else "fft"
    spec = spatial_filter(geometry, planar, tuple(affine_weight.shape[1:]), computation.computing, input.device,
                          False, None)
    gain = normalizer
    if filter != planar:  # the normalizer again, as this filter reads it
        v_hat = normalizer if filter is None else normalizer[:, ::2] / gain_scale(filter, geometry)
        gain = v_hat.reshape(normalizer.shape[0], -1).repeat_interleave(2, dim=1) * gain_scale(planar, geometry)
    return spatial_conv_norm(computation.convolve(input, weight), affine_weight, gain, bias, spec)


class Prepared:
    """One layer on one input signature under one policy: its plan, the normalizer's constants,
    the plan's :class:`Computation` (:data:`REGISTRY`), and :meth:`run`. Made by :func:`prepare`."""

    __slots__ = ("policy", "plan", "computing", "cast", "out_dtype", "autocast_device", "exporting", "lag_map",
                 "basis", "eps_term", "unit_affine", "stop_gradient", "computation", "run")

    def __init__(self, input: torch.Tensor, weight_shape: tuple[int, ...], geometry: LayerGeometry, eps: float,
                 affine_taps: tuple[int, ...] | None, stop_gradient: bool, policy: ComputationPolicy,
                 autocast_dtype: torch.dtype | None, exporting: bool):
        self.policy, self.stop_gradient = policy, stop_gradient
        plan = self.plan = policy.plan(input, weight_shape, geometry, stop_gradient, autocast_dtype, exporting)
        device, d = input.device, len(geometry.size)
        fused = plan.filter == "fused"
        # The normalizer, and every computation but the fused filter, in float32 for half-precision
        # data and under autocast (transforms of half-precision data lose too much), else in the data's dtype.
        computing = self.computing = (torch.float32 if autocast_dtype is not None or input.dtype not in FLOAT_DTYPES
                                      else input.dtype)
        self.cast = None if fused or computing == input.dtype else computing
        data = plan.convolution_dtype or input.dtype  # what the fused filter reads and writes
        returned = autocast_dtype or input.dtype  # a convolution's dtype: the autocast dtype, else the input's
        produced = data if fused else plan.gemm_dtype or computing
        self.out_dtype = None if returned == produced else returned
        self.autocast_device, self.exporting = device.type, exporting
        c_out, kernel = weight_shape[0], tuple(weight_shape[2:])
        lags = tuple(2 * k - 1 for k in kernel)
        self.lag_map = None if autocorrelation_by_convolution(kernel) else lag_map(kernel, computing, device)
        taps = affine_taps if affine_taps is not None else (1,) * d
        self.unit_affine = torch.ones(c_out, *taps, dtype=computing, device=device)  # a layer without one
        computation = self.computation = REGISTRY[plan.method](plan, geometry, taps, computing, device)
        dilation, size = computation.normalizer_grid(geometry)
        basis = cosine_basis(lags, dilation, size, True, computing, device)
        scale = 1.0
        if computation.reads == "gain":  # each value twice, the FFT filter's 1/prod(L) folded in
            basis, scale = basis.repeat_interleave(2, dim=1), gain_scale(plan.filter, geometry)
        self.basis = basis / scale**2
        self.eps_term = torch.tensor(eps / scale**2, dtype=computing, device=device)
        self.run = self._computed if autocast_dtype is None else self._without_autocast

    def _without_autocast(self, *args) -> torch.Tensor:
        """:meth:`_computed` with autocast off: every computation picks its own dtypes. Switched off
        and on by ``torch.set_autocast_enabled``, one C call each way (``torch.compile`` traces
        them), not by ``torch.autocast``'s context manager, whose seven Python frames would take a
        warm forward beyond 20; in a program traced for deployment by the context manager, which
        ``torch.export`` records as a region of its program."""
        device = self.autocast_device
        if self.exporting:
            with torch.autocast(device, enabled=False):
                return self._computed(*args)
        torch.set_autocast_enabled(device, False)
        try:
            return self._computed(*args)
        finally:
            torch.set_autocast_enabled(device, True)

    def _computed(self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                  affine_weight: torch.Tensor | None, running: torch.Tensor | None, steps: torch.Tensor | None,
                  training: bool, factor: torch.Tensor | None) -> torch.Tensor:
        r"""The layer's output: ``run(input, weight, bias, affine_weight, running, steps, training,
        factor)``, with the running average ``running`` ``(C, *lags)`` (or None: the weight's own
        autocorrelation) and its step count ``steps``: updated when ``training`` with the
        averaging ``factor`` (a tensor of ``running``'s dtype), else used as
        :func:`averaged_autocorrelation` says; ``steps`` None in evaluation means the caller knows
        the average has been trained, and it alone is used. The normalizer
        :math:`(\mathcal F_L r + \varepsilon)^{-1/2}` is computed in the form the computation
        reads (:attr:`Computation.reads`), then the computation runs."""
        to = self.cast
        if to is not None:
            input, weight = input.to(to), weight.to(to)
            bias = None if bias is None else bias.to(to)
        kernels = weight if weight.dtype == self.computing else weight.to(self.computing)
        if affine_weight is None:
            affine_weight = self.unit_affine
        elif affine_weight.dtype != self.computing:
            affine_weight = affine_weight.to(self.computing)
        grad_mode = torch.is_grad_enabled()
        # With the stop-gradient the normalizer is a constant: nothing of it is recorded (torch.no_grad's
        # switch itself, without its context manager's Python frames on the hot path).
        torch._C._set_grad_enabled(grad_mode and not self.stop_gradient)
        try:
            if running is None or steps is not None:  # the weight's own autocorrelation, perhaps averaged
                if self.lag_map is None:
                    r = kernel_autocorrelation(kernels, by_convolution=True).view(kernels.shape[0], -1)
                else:
                    flat = kernels.reshape(kernels.shape[0], kernels.shape[1], -1)
                    r = torch.bmm(flat.transpose(1, 2), flat).view(flat.shape[0], -1) @ self.lag_map
                if running is not None and steps is not None:
                    r = averaged_autocorrelation(r, running.view(r.shape), steps, training, factor)
            else:  # a layer known to have trained: its average alone
                r = running.view(running.shape[0], -1)
                if r.dtype != self.computing:
                    r = r.to(self.computing)
            normalizer = torch.addmm(self.eps_term, r, self.basis).clamp_min(self.eps_term).rsqrt()
        finally:
            torch._C._set_grad_enabled(grad_mode)
        out = self.computation(input, weight, bias, affine_weight, normalizer)
        if self.computation.relayout and input.dim() == 4 and not input.is_contiguous() \
                and input.is_contiguous(memory_format=torch.channels_last):
            out = out.contiguous(memory_format=torch.channels_last)  # the input's layout, as a convolution keeps
        return out if self.out_dtype is None else out.to(self.out_dtype)


def autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype ``torch.autocast`` computes in on ``device_type`` now, or None where it is off
    (or does not exist, as on ``meta``)."""
    if autocast_available(device_type) and torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return None


def prepare(dtype: torch.dtype, device: torch.device, weight_shape: tuple[int, ...], geometry: LayerGeometry,
            eps: float, affine_taps: tuple[int, ...] | None, stop_gradient: bool, policy: ComputationPolicy,
            autocast: torch.dtype | None, exporting: bool) -> Prepared:
    """The :class:`Prepared` layer for an input of ``dtype`` on ``device``, a weight of
    ``weight_shape``, checked ``geometry`` and ``eps``, an affine kernel of ``affine_taps`` (None:
    none), the effective stop-gradient, the ``policy``, ``torch.autocast`` to ``autocast`` (or
    None), in a program traced for deployment if ``exporting``. Kept in a cache (layers of the
    same shape share it), except while :func:`tracing`.

    Raises:
        ValueError: if ``exporting`` with a spatial size left dynamic (symbolic)."""
    if exporting and not all(isinstance(n, int) for n in geometry.size):
        raise ValueError(f"input must have a static spatial size to be exported, got {tuple(geometry.size)}: the "
                         "layer's DFT matrices are constants of the program, made for one size (leave the batch "
                         "dimension alone dynamic)")
    return _prepared(dtype, device, weight_shape, geometry, eps, affine_taps, stop_gradient, policy, autocast,
                     exporting)


@cached(maxsize=256)
def _prepared(dtype, device, weight_shape, geometry, eps, affine_taps, stop_gradient, policy, autocast,
              exporting) -> Prepared:
    like = torch.empty((), dtype=dtype, device=device)  # what the plan reads of the input: dtype and device
    # the constants are built with autocast off, in the dtypes asked for
    off = torch.autocast(device.type, enabled=False) if autocast is not None else contextlib.nullcontext()
    with off:
        return Prepared(like, weight_shape, geometry, eps, affine_taps, stop_gradient, policy, autocast, exporting)


def prepare_at_trace_time(dtype: torch.dtype, device: torch.device, weight_shape: tuple[int, ...],
                          geometry: LayerGeometry, eps: float, affine_taps: tuple[int, ...] | None,
                          stop_gradient: bool, policy: ComputationPolicy, autocast: torch.dtype | None) -> Prepared:
    """:func:`prepare`'s :class:`Prepared` (not exported) while ``torch.compile`` traces, for a
    caller that Dynamo does not trace (``torch.compiler.assume_constant_result``): built once, of
    real tensors (the fake-tensor mode set aside), kept in :func:`prepare`'s cache, so that the
    compiled program reads its constants instead of building them at every call."""
    with disable_current_modes():
        return _prepared.kept(dtype, device, weight_shape, geometry, eps, affine_taps, stop_gradient,  # type: ignore[attr-defined]
                              policy, autocast, False)


def plan_of(input: torch.Tensor, weight_shape: tuple[int, ...], geometry: LayerGeometry, stop_gradient: bool,
            policy: ComputationPolicy) -> Plan:
    """The plan :func:`prepare` would make, without building anything."""
    return policy.plan(input, weight_shape, geometry, stop_gradient, autocast_dtype(input.device.type))


__all__ = ["REGISTRY", "Computation", "FrequencyDomain", "FrequencyGemms", "Pointwise", "Prepared", "Spatial",
           "autocast_dtype", "averaged_autocorrelation", "plan_of", "prepare", "prepare_at_trace_time", "ramp_table"]
