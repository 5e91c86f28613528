"""How :func:`convnorm.functional.conv_norm` computes a layer: an explicit, immutable policy,
set for a block of code by a context manager, and the :class:`Plan` it makes for one call.

Three computations give the same layer (see :mod:`convnorm.functional`): ``"pointwise"``
(1x1 kernels), ``"spatial"`` (the full convolution, then the per-channel filter) and
``"frequency_domain"`` (one matrix product per frequency). The spatial computation's filter
runs by FFTs, by dense DFT matrix products, or as fused GPU kernels (:data:`FILTERS`); in a
program traced for deployment, by real matrix products (``"planar"``, :data:`EXPORTED_FILTER`). Which
is fastest, and how each transforms and chunks its work, depends on the device and the layer's
size, so every such choice is a field of a :class:`ComputationPolicy`, and
:meth:`ComputationPolicy.plan` is the one place that makes them: the computations receive its
:class:`Plan` as plain values. The policy
in force is held per thread (a :class:`threading.local`, which ``torch.compile`` traces and
guards on): each thread sees its own, :func:`use_policy` sets it for a ``with`` block only
and restores the previous one on exit, whatever happens, and nothing else can change it.
"""
from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import NamedTuple

import torch

from ._fused_filter import fits as fused_filter_fits
from ._geometry import LayerGeometry
from .precision import FLOAT_DTYPES

COMPUTATIONS = ("frequency_domain", "spatial")
"""The computations :func:`computation` can force on every layer that can take either."""

FILTERS = ("fft", "dense", "fused")
"""How the spatial computation filters the full convolution: FFTs, dense DFT matrix products,
or fused GPU kernels (``convnorm._fused_filter``) that read the convolution once and write
the layer's output once."""

KNOWN_GOOD_FILTER = "fft"
"""The filter a GPU computes with until a benchmark there shows another one correct and faster:
FFTs (cuFFT), timed on a CUDA GPU (``bench_layer_per_layer_cuda_batch128.json``) and exact to
float32's rounding on every geometry. The fused kernels are not the default anywhere until a
stored GPU record shows them correct and faster on that class of GPU; a window trains with its
own benchmark's choice (:meth:`ComputationPolicy.filtering`)."""

EXPORTED_FILTER = "planar"
"""The filter of a program traced for deployment (``torch.export``, ``torch.onnx.export``,
``torch.jit.trace``): the dense DFTs as real matrix products on the real and imaginary planes,
by plain operations that every exporter and runtime takes (no complex tensor, no FFT, no custom
autograd function, no strided view, no ``out=``), differentiated by autograd. Not one of
:data:`FILTERS`: a computation of its own for deployment, not a choice of speed. Its matrices hold
about :math:`L_0^2 + L_1^2` numbers per plane (:math:`L_1^2` for a 1D signal): small for images,
large for long 1D signals."""


class Plan(NamedTuple):
    """How one call of :func:`convnorm.functional.conv_norm` computes, decided by
    :meth:`ComputationPolicy.plan` before anything is computed."""

    computation: str
    """``"pointwise"``, ``"spatial"`` or ``"frequency_domain"``."""
    filter: str | None
    """Spatial: how the filter runs, one of :data:`FILTERS`, or :data:`EXPORTED_FILTER` in a
    program traced for deployment; None for the other computations."""
    products_by_sample: bool
    """Spatial with dense transforms: the affine gradient's products are summed sample by
    sample, the running sum kept in a CPU's cache (else one product of all and one sum, as a
    GPU takes them: a loop would launch a kernel per sample)."""
    dense_input: bool
    """Frequency domain: the input is transformed by one dense 2D map (else per axis)."""
    dense_output: bool
    """Frequency domain: the output likewise."""
    frequencies_per_chunk: int | None
    """Frequency domain: how many frequencies' kernel spectra are built at once; None for all."""
    convolution_dtype: torch.dtype | None
    """Fused filter under ``torch.autocast``: the dtype the convolution runs in (the autocast
    dtype, on the tensor cores, unless the policy keeps it in float32); None elsewhere."""
    dot_precision: str | None
    """Fused filter: the precision of the kernels' products (``"ieee"`` or ``"tf32"``)."""
    stop_gradient: bool
    """Whether :math:`\\hat v` is a constant in the backward pass (the hand-written backward
    functions take it so)."""
    reason: str
    """Why the policy chose this computation and filter, in words: the rule that decided, with
    the sizes and fields it compared."""
    gemm_dtype: torch.dtype | None = None
    """Frequency domain by matrix products only (``ComputationPolicy.frequency_domain_gemms``):
    the dtype of its transforms and per-frequency products, the autocast dtype under
    ``torch.autocast``; None for the chunked computation (``convnorm._frequency_domain``)."""

    @property
    def method(self) -> str:
        """The name of the class that computes it in ``convnorm._engine.REGISTRY``: the
        computation, or ``"frequency_gemms"`` for the frequency domain by matrix products."""
        return "frequency_gemms" if self.gemm_dtype is not None else self.computation


@dataclass(frozen=True)
class ComputationPolicy:
    """How :func:`convnorm.functional.conv_norm` computes the layers that more than one
    computation can compute. Each field is measured where it says so: the repository's
    benchmarks time the choice and keep the figures, with the processor they ran on and what
    they show; ``dense_transform_devices`` and ``fused_filter_devices`` are measured on a CPU,
    not yet on a GPU (a GPU window's benchmark times every filter there and picks the fastest
    correct one).

    A 1x1 kernel is always ``"pointwise"``. A layer goes to the frequency domain if it is
    on one of ``frequency_domain_devices``, 2D, has one group and no dilation, keeps the
    stop-gradient (the frequency domain's backward treats :math:`\\hat v` as a constant),
    is computed in float32 or float64, normalizes at a size of at most
    ``dense_dft_max_length`` per axis, and is either strided (if
    ``frequency_domain_strided``) or has an input of at most ``frequency_domain_max_size``
    per axis. Every other layer is computed spatially. The frequency domain runs chunked
    (``convnorm._frequency_domain``), or by matrix products in the autocast dtype if
    ``frequency_domain_gemms`` (``convnorm._frequency_gemm``).
    """

    frequency_domain_devices: tuple[str, ...] = ("cpu",)
    """Device types on which the frequency domain may be used. A CPU only: on a CUDA GPU
    the spatial computation with cuFFT was faster for every layer of a CIFAR ResNet18
    (``bench_layer_per_layer_cuda_batch128.json``)."""
    frequency_domain_max_size: float = 32
    """Largest input size (per axis) of a stride-1 layer computed in the frequency domain:
    on a CPU every stride-1 layer of a CIFAR ResNet18 was at least as fast there, the 32x32
    ones about as fast (``bench_layer_per_layer.json``); for larger maps the spatial
    computation's cost grows more slowly."""
    frequency_domain_strided: bool = True
    """Whether strided layers go to the frequency domain whatever their size: the spatial
    computation needs the full, unstrided convolution, the frequency domain computes the
    strided output only (``bench_layer_per_layer.json``: 0.6-0.7 of the spatial time)."""
    dense_dft_max_length: int = 50
    """Largest normalization size :math:`L` (per axis, 2D) whose transforms are dense DFT
    matrix products rather than FFTs (on ``dense_transform_devices``): at these sizes, often
    with large prime factors, the products are faster on a CPU. The frequency domain needs them."""
    dense_transform_devices: tuple[str, ...] = ("cpu",)
    """Device types on which the spatial computation transforms small 2D layers by dense DFT
    matrices. A CPU only: there the products are faster than FFTs (``bench_layer_per_layer.json``);
    on a CUDA GPU no benchmark has timed the two against each other yet: a GPU window's
    calibration times the ConvNorm+BN step both ways (``alternatives`` in its record) and the
    window trains with the faster (:meth:`filtering`)."""
    dense_2d_max_pixels: int = 64
    """Largest map (input or output, in pixels) that the frequency domain transforms by one
    dense 2D product instead of one product per axis, which are too small there for the
    matrix library (``bench_compare_056432f_d3cdc7c.json``)."""
    chunk_bytes: int = 8 * 2**20
    """Bytes of kernel spectra the frequency domain builds at once on a CPU: few enough to
    stay in the processor's cache while the products read them. On other devices it builds
    them all at once (a GPU has no such cache to stay in, and each chunk costs several kernel
    launches)."""
    fused_filter_devices: tuple[str, ...] = ()
    """Device types on which the spatial computation's filter runs as fused Triton kernels
    (``convnorm._fused_filter``): one read of the convolution's output and one write of the
    layer's, in the activations' dtype, instead of an FFT round trip in float32 with its
    copies. None by default: no stored GPU record shows them correct and faster yet, so a GPU
    takes the :data:`KNOWN_GOOD_FILTER`; ``filtering("fused", "cuda")`` asks for them. Even
    then a layer takes them only where they run (:func:`convnorm._fused_filter.fits`: a CUDA GPU
    whose capability and shared memory fit the compiled kernels, or a CPU under Triton's
    interpreter, for tests) and takes the next filter elsewhere."""
    float32_convolution: bool = False
    """Fused filter under ``torch.autocast``: keep the convolution in float32 instead of the
    autocast dtype, in every layer, whatever its input's dtype (from the second layer on, a
    network's activations are already in the autocast dtype). The normalizer amplifies a
    low-pass kernel's rounding (its gain reaches :math:`\varepsilon^{-1/2}` where the kernel's
    spectrum vanishes), so whoever needs the float32 result there can keep it at the
    convolution's float32 cost."""
    fused_float32_precision: str = "ieee"
    """The fused kernels' product precision for float32 data: ``"ieee"`` (float32, the
    accuracy of the other filters) or ``"tf32"`` (TensorFloat-32's 10-bit mantissa, faster on
    tensor cores). Half-precision data always takes ``"tf32"``: its own rounding is coarser."""
    frequency_domain_gemms: bool = False
    """Compute the frequency domain by matrix products only (``convnorm._frequency_gemm``): real
    DFT matrices and one batched product over the frequencies, in the autocast dtype under
    ``torch.autocast`` (float32 accumulation), the form for a GPU's tensor cores; else by the
    chunked computation (``convnorm._frequency_domain``), in float32 under autocast. Off until a
    GPU benchmark has timed it beside the spatial computation."""
    def __post_init__(self) -> None:
        for name in ("frequency_domain_devices", "dense_transform_devices", "fused_filter_devices"):
            devices = getattr(self, name)
            if isinstance(devices, str) or not all(isinstance(d, str) for d in devices):
                raise ValueError(f"{name} must be a tuple of device types such as ('cpu',), got {devices!r}")
            object.__setattr__(self, name, tuple(devices))
        for name in ("frequency_domain_max_size", "dense_dft_max_length", "dense_2d_max_pixels", "chunk_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        if self.fused_float32_precision not in ("ieee", "tf32"):
            raise ValueError(f"fused_float32_precision must be 'ieee' or 'tf32', got {self.fused_float32_precision!r}")
        for name in ("float32_convolution", "frequency_domain_gemms"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")

    def plan(self, input: torch.Tensor, weight_shape: tuple[int, ...], geometry: LayerGeometry,
             stop_gradient: bool, autocast_dtype: torch.dtype | None = None, exporting: bool = False) -> Plan:
        r"""The :class:`Plan` for a layer of weight shape ``weight_shape`` and ``geometry`` on
        ``input`` (its shape, device and dtype: the dtype of the data), with the gradient
        flowing through :math:`\hat v` unless ``stop_gradient``, under ``torch.autocast`` to
        ``autocast_dtype`` if given. Every computation but the fused filter computes half-precision
        data and autocast regions in float32. In a program traced for deployment (``exporting``),
        every layer but a pointwise one is computed spatially with the :data:`EXPORTED_FILTER`,
        whatever the policy: the other computations need complex tensors, FFTs, buffers written
        in place, or custom kernels."""
        d = len(geometry.size)
        device = input.device.type
        on_cpu = device == "cpu"
        computed = torch.float32 if autocast_dtype is not None or input.dtype not in FLOAT_DTYPES else input.dtype
        small = max(geometry.length) <= self.dense_dft_max_length
        if all(k == 1 for k in geometry.kernel):
            computation, reason = "pointwise", "a 1x1 kernel: per-channel scales of one convolution"
        elif exporting:
            computation, reason = "spatial", "traced for deployment: the exporters' plain operations"
        else:
            refusal = self._frequency_domain_refusal(device, geometry, stop_gradient, small)
            computation = "spatial" if refusal else "frequency_domain"
            reason = refusal or (f"frequency domain: strided (stride {geometry.stride}) on {device}"
                                 if self.frequency_domain_strided and max(geometry.stride) > 1 else
                                 f"frequency domain: input {geometry.size} within frequency_domain_max_size "
                                 f"{self.frequency_domain_max_size:g} on {device}")
        filter = convolution_dtype = precision = None
        if computation == "spatial":
            if autocast_dtype is None:
                data = input.dtype
            else:  # the escape hatch reads no input's dtype: the stem's and every later layer's alike
                data = torch.float32 if self.float32_convolution else autocast_dtype
            fused_precision = self.fused_float32_precision if data == torch.float32 else "tf32"
            if exporting:
                filter = EXPORTED_FILTER
            elif (device in self.fused_filter_devices and d == 2 and stop_gradient and data != torch.float64
                    and fused_filter_fits(input.device, geometry.length, data, fused_precision)):
                filter = "fused"
                convolution_dtype = data if autocast_dtype is not None else None
                precision = fused_precision
                reason += f"; the fused filter: {device} in fused_filter_devices and the kernels fit"
            elif device in self.dense_transform_devices and d == 2 and small:
                filter = "dense"
                reason += (f"; the dense filter: {device} in dense_transform_devices, L {geometry.length} within "
                           f"dense_dft_max_length {self.dense_dft_max_length}")
            else:
                filter = "fft"
                reason += "; the FFT filter"
        gemm_dtype = None
        if computation == "frequency_domain" and self.frequency_domain_gemms:
            gemm_dtype = autocast_dtype or computed
            reason += f", by matrix products in {gemm_dtype} (frequency_domain_gemms)"
        frequency_domain = computation == "frequency_domain" and gemm_dtype is None
        bytes_per_frequency = 2 * weight_shape[0] * weight_shape[1] * torch.empty((), dtype=computed).element_size()
        return Plan(
            computation, filter, products_by_sample=filter == "dense" and on_cpu,
            dense_input=frequency_domain and math.prod(geometry.size) <= self.dense_2d_max_pixels,
            dense_output=frequency_domain and math.prod(geometry.out_size) <= self.dense_2d_max_pixels,
            frequencies_per_chunk=max(1, self.chunk_bytes // bytes_per_frequency) if frequency_domain and on_cpu
            else None, convolution_dtype=convolution_dtype, dot_precision=precision, stop_gradient=stop_gradient,
            reason=reason, gemm_dtype=gemm_dtype)

    def _frequency_domain_refusal(self, device: str, geometry: LayerGeometry, stop_gradient: bool,
                                  small: bool) -> str | None:
        """Why a layer of ``geometry`` on ``device`` is computed spatially, not in the frequency
        domain (the first condition of the class docstring's rule it fails), or None if the
        frequency domain takes it."""
        if device not in self.frequency_domain_devices:
            return f"spatial: {device} not in frequency_domain_devices {self.frequency_domain_devices}"
        if len(geometry.size) != 2:
            return "spatial: the frequency domain takes 2D layers"
        if geometry.groups != 1:
            return f"spatial: groups={geometry.groups} (the frequency domain takes one group)"
        if any(dl != 1 for dl in geometry.dilation):
            return f"spatial: dilation {geometry.dilation} (the frequency domain takes none)"
        if not stop_gradient:
            return "spatial: the gradient flows through v-hat (the frequency domain takes it as a constant)"
        if not small:
            return f"spatial: L {geometry.length} beyond dense_dft_max_length {self.dense_dft_max_length}"
        if not (self.frequency_domain_strided and max(geometry.stride) > 1) \
                and max(geometry.size) > self.frequency_domain_max_size:
            return (f"spatial: input {geometry.size} beyond frequency_domain_max_size "
                    f"{self.frequency_domain_max_size:g}")
        return None

    def keeps_channels_last(self, device_type: str) -> bool:
        """Whether ConvNorm layers on ``device_type`` read and write channels-last activations as
        they are, in mixed precision (the only precision a network runs channels-last in): where
        their filter is fused (its kernels read and write through strides) at every size it
        takes; the FFT and dense-matrix filters transform the spatial axes of a contiguous tensor,
        so a channels-last network would be converted at every ConvNorm layer. The frequency
        domain by matrix products (``frequency_domain_gemms``) transforms channels-last tensors
        as they are, wherever it takes every layer (``forcing("frequency_domain")``)."""
        if self.frequency_domain_gemms and device_type in self.frequency_domain_devices \
                and self.frequency_domain_max_size == math.inf and self.frequency_domain_strided:
            return True
        data = torch.float32 if self.float32_convolution else torch.bfloat16
        precision = self.fused_float32_precision if self.float32_convolution else "tf32"
        return device_type in self.fused_filter_devices and fused_filter_fits(torch.device(device_type), None, data,
                                                                               precision)

    def changes(self) -> dict[str, object]:
        """The fields in which this policy differs from the default one, as JSON values
        (tuples as lists): what a run record notes of how its layers were computed."""
        default = ComputationPolicy()
        return {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(self).items()
                if value != getattr(default, name)}

    def filtering(self, filter: str, device_type: str) -> ComputationPolicy:
        """This policy with the spatial computation's filter on ``device_type`` (e.g. ``"cuda"``)
        ``filter``, one of :data:`FILTERS`, wherever that filter can take the layer (the fused
        kernels up to ``MAX_LENGTH`` of ``convnorm._fused_filter`` (64), dense matrices up to
        ``dense_dft_max_length``; FFTs beyond): the same layer, computed another way. A GPU
        window's benchmark times each on its GPU and trains with the fastest correct one
        (``benchmarks/bench_gpu.py``); ``"fused"`` on a CPU runs Triton's interpreter (tests)."""
        if filter not in FILTERS:
            raise ValueError(f"filter must be one of {list(FILTERS)}, got {filter!r}")
        if not isinstance(device_type, str):
            raise ValueError(f"device_type must be a device type such as 'cuda', got {device_type!r}")

        def devices(field: tuple[str, ...], chosen: bool) -> tuple[str, ...]:
            return tuple(d for d in field if d != device_type) + ((device_type,) if chosen else ())

        return replace(self, fused_filter_devices=devices(self.fused_filter_devices, filter == "fused"),
                       dense_transform_devices=devices(self.dense_transform_devices, filter == "dense"))

    def forcing(self, way: str) -> ComputationPolicy:
        """This policy with every layer that can take either computation computed ``way``
        (``"spatial"`` or ``"frequency_domain"``, the latter whatever its size and stride,
        on a CPU or a CUDA GPU)."""
        if way == "spatial":
            return replace(self, frequency_domain_devices=())
        if way == "frequency_domain":
            return replace(self, frequency_domain_devices=("cpu", "cuda"), frequency_domain_max_size=math.inf,
                           frequency_domain_strided=True)
        raise ValueError(f"way must be one of {list(COMPUTATIONS)}, got {way!r}")


class _PolicyInForce(threading.local):
    """The policy of each thread, the default one until :func:`use_policy` sets another."""

    def __init__(self) -> None:
        self.policy = ComputationPolicy()


IN_FORCE = _PolicyInForce()


def current_policy() -> ComputationPolicy:
    """The policy in force in this thread: the default unless inside :func:`use_policy` or
    :func:`computation`."""
    return IN_FORCE.policy


@contextlib.contextmanager
def use_policy(policy: ComputationPolicy) -> Iterator[ComputationPolicy]:
    """Compute with ``policy`` inside the ``with`` block (in this thread only: threads started
    inside it, ``nn.DataParallel``'s replicas among them, start with the default policy);
    the previous policy is back on exit, also after an exception.

    Example::

        >>> from dataclasses import replace
        >>> with use_policy(replace(current_policy(), frequency_domain_max_size=16)):
        ...     pass  # stride-1 maps above 16x16 are computed spatially here
    """
    if not isinstance(policy, ComputationPolicy):
        raise ValueError(f"policy must be a ComputationPolicy, got {type(policy).__name__}")
    previous, IN_FORCE.policy = IN_FORCE.policy, policy
    try:
        yield policy
    finally:
        IN_FORCE.policy = previous


def computation(way: str) -> contextlib.AbstractContextManager[ComputationPolicy]:
    """Within the ``with`` block, every layer the frequency domain can compute (2D, one group,
    no dilation, stop-gradient, float32/64, a normalization size up to
    ``dense_dft_max_length``) is computed ``way``: ``"spatial"`` or ``"frequency_domain"``,
    whatever its size and stride, on a CPU or a CUDA GPU. Both give the same layer; this is
    for comparing them (tests, benchmarks, chapter 6).

    Raises:
        ValueError: if ``way`` is not one of ``COMPUTATIONS``."""
    return use_policy(current_policy().forcing(way))
