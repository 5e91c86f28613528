r"""The spatial computation's per-channel filter fused into one Triton kernel each way: the
dense-matrix filter of :mod:`convnorm._spatial` (``_filtered`` with ``dense=True`` and
``SpectralFilter.backward``'s dense branch) on a CUDA GPU, or on a CPU under
``TRITON_INTERPRET=1``.

Per sample :math:`n` and channel :math:`c`, on the full convolution's tile :math:`y`
(:math:`L_0 \times L_1`), with :math:`K = L_1/\!/2 + 1`, the channel's multiplier :math:`M`
(:math:`L_0 \times K`, complex) and the :class:`~convnorm._transforms.DenseDFT` matrices:

.. math::
    Y = \texttt{dft\_rows}\,(y\, \texttt{rfft\_cols}), \qquad
    z = \operatorname{re}\bigl(\texttt{idft\_rows}\,(M \circ Y)\bigr)\,\texttt{irfft\_cols}\ (+\, b_c),

and backward, with :math:`g = \partial\mathcal L/\partial z` and :math:`\Gamma` the gradient of
the product spectrum :math:`P = M \circ Y`:

.. math::
    \Gamma = \texttt{idft\_rows}^H (g\, \texttt{irfft\_cols}^\top), \qquad
    \partial\mathcal L/\partial y = \operatorname{re}\bigl(\texttt{dft\_rows}^H (\Gamma \circ \overline M)\bigr)\,
    \texttt{rfft\_cols}^\top, \qquad S_c = \sum_n \overline{Y_n} \circ \Gamma_n,

where a complex matrix times an interleaved real one (``rfft_cols``, ``irfft_cols``) means its
real and imaginary parts interleaved. :mod:`convnorm._fused_filter_kernels` gives the planar
real form the kernels compute (real and imaginary parts as separate float32 matrices).

Why one kernel: unfused, the filter is a chain of batched matrix products, each reading and
writing a tensor of the size of :math:`y` or of its spectrum (about eight passes over memory
forward). Fused, each layer reads :math:`y` once and writes :math:`z` once (backward: reads
:math:`g` and, for the products, :math:`y`, writes :math:`\partial\mathcal L/\partial y`); the
spectrum never leaves the chip, which is why the backward recomputes :math:`Y` rather than
reading a saved one. One program takes one channel and a block of samples: the matrices and the
channel's multiplier are loaded once per program and reused for every sample of the block, and
the products :math:`S` are summed in registers over the block and written once per program,
then summed over blocks by one deterministic ``sum`` (no atomics). ``tl.arange`` and ``tl.dot``
need power-of-two blocks of at least 16, so every size is padded (:func:`block_size`) with
zero-padded matrices and masked loads and stores.

What it costs: with the traffic down to one pass, the padded products are what is left. At
:math:`L = 34` (a 3x3 kernel on a 32x32 map; blocks of 64, 32 frequencies) the forward takes
2.2 MFLOP per tile, 4.6 times the 0.48 of unpadded products, against 4.4 KB of bfloat16 traffic
(500 FLOP a byte; 240 to 950 at :math:`L` = 18, 10, 6): above an H100's balance point (about
150 FLOP a byte with TF32 tensor cores, 20 with float32 FMA units), so the kernels are bound
by arithmetic, not memory, at CIFAR sizes. Compiled for sm_90 (triton 3.9, no GPU), blocks of 64
need every register a thread has: ``"tf32"`` spills 0.1-0.7 KB a thread and uses 88-132 KB of
shared memory, ``"ieee"`` (FMA products, whole operands in registers) spills 5-9 KB; blocks of
32 or less spill nothing.
"""
from __future__ import annotations

import os
from typing import NamedTuple

import torch
import torch.nn.functional as F

from ._caches import cached
from ._transforms import DenseDFT
from .validation import check_choice, check_positive_int, check_tensor

MAX_LENGTH = 64
"""Largest normalization size :math:`L` per axis: blocks of 64 already take every register a
thread has (see above), and the next block, 128, would hold four times as much; larger layers
take the FFTs."""

MIN_CAPABILITY = (8, 0)
"""Least CUDA compute capability the kernels run on: their TensorFloat-32 and bfloat16
products need the tensor cores of Ampere (sm_80) or later; compiled for a T4 (sm_75, Turing)
they get no tensor-core instruction (``tests/convnorm/test_fused_filter_compiled.py``)."""

SHARED_MEMORY = {(16, "half"): 10752, (16, "tf32"): 15360, (16, "ieee"): 16384,
                 (32, "half"): 32768, (32, "tf32"): 49152, (32, "ieee"): 49152,
                 (64, "half"): 135168, (64, "tf32"): 233472, (64, "ieee"): 196608}
"""Bytes of shared memory a program needs, by its largest block (:func:`block_size` of the
normalization size) and what it computes (:func:`_kind`: half-precision data, or float32 with
``"tf32"`` or ``"ieee"`` products): the largest over both kernels, compiled for sm_80 and
sm_90 with their default warps (``tests/convnorm/test_fused_filter_compiled.py`` compiles them
and checks this table). At blocks of 64 this is more than a consumer GPU's 99 KiB (sm_86,
sm_89) and, for float32, than an A100's 163 KiB; ``"tf32"`` float32 needs 228 KiB, more than
even a Hopper GPU's 227. A GPU whose blocks may opt in to less takes the next filter
(:func:`fits`)."""

PROGRAMS_PER_SM = 2
"""Programs per multiprocessor the samples are split for by default: a starting point, not a
measurement. ``benchmarks/bench_gpu.py`` sweeps it with the warps; a later default follows a
stored record of that sweep."""

WARPS = (1, 2, 4, 8, 16)
"""The warps per program a caller may ask for (Triton takes powers of two)."""

PRECISIONS = ("ieee", "tf32")
"""``tl.dot``'s ``input_precision``: float32 products (FMA units), or TensorFloat-32 (tensor
cores; operands rounded to 10-bit mantissas, about 1e-3 of the largest entry over the four
products). Not ``"tf32x3"``: it doubles the matrices' shared memory, and with blocks of 64
(:math:`L` and :math:`O` above 32) the backward needs 228-260 KB, more than a Hopper GPU's 227."""

DTYPES = (torch.float32, torch.bfloat16, torch.float16)
"""The dtypes of ``y`` and ``grad_z``: read as they are, computed in float32, written back in
``y``'s dtype."""


class FilterMatrices(NamedTuple):
    r"""The planar float32 matrices of one geometry (:func:`filter_matrices`), each ``(2, rows,
    cols)``: real plane then imaginary plane, zero-padded to :func:`block_size` along both axes
    (the kernels load them without masks)."""

    columns: torch.Tensor
    r""":math:`C^R, C^I` ``(2, L1p, Kp)``: :math:`\cos, -\sin(2\pi tk/L_1)`, ``rfft_cols``'s even and odd columns."""
    rows: torch.Tensor
    r""":math:`D^R, D^I` ``(2, L0p, L0p)``: :math:`\cos, -\sin(2\pi ab/L_0)`, ``dft_rows``'s parts."""
    inverse_rows: torch.Tensor
    """:math:`I^R, I^I` ``(2, O0p, L0p)``: ``idft_rows``'s real and imaginary parts."""
    inverse_columns: torch.Tensor
    """:math:`E^R, E^I` ``(2, Kp, O1p)``: ``irfft_cols``'s even and odd rows."""
    length: tuple[int, int]
    """The tile size :math:`(L_0, L_1)`."""
    out_size: tuple[int, int]
    """The output size :math:`(O_0, O_1)`."""


def available(device: torch.device | str) -> bool:
    """Whether the fused filter runs on ``device``: triton imports and the device is a CUDA
    GPU, or it is the CPU and ``TRITON_INTERPRET=1`` is set (then the kernels run in triton's
    interpreter, slowly: for tests). The variable must be set before the kernels are first
    launched in the process (when triton decorates them)."""
    device = torch.device(device)
    if not _triton_imports():
        return False
    return device.type == "cuda" or (device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1")


def fits(device: torch.device | str, length: tuple[int, ...] | None = None, dtype: torch.dtype | None = None,
         precision: str | None = None) -> bool:
    """Whether the fused kernels run here for a layer of normalization size ``length`` whose
    filter reads ``dtype`` with products in ``precision`` (None: for every size up to
    ``MAX_LENGTH``, every dtype, every precision): :func:`available`, at most ``MAX_LENGTH`` per
    axis, and on a CUDA GPU one of capability at least ``MIN_CAPABILITY`` whose shared memory
    per block holds what the kernels were compiled to need (``SHARED_MEMORY``). A GPU that does
    not fit takes the policy's next filter."""
    device = torch.device(device)
    length = (MAX_LENGTH, MAX_LENGTH) if length is None else tuple(length)
    if not available(device) or max(length) > MAX_LENGTH:
        return False
    if device.type != "cuda":
        return True  # the interpreter: no shared memory to fit
    capability, shared = _device_limits(device)
    block = block_size(max(length))
    kinds = [_kind(dtype, precision)] if dtype is not None and precision is not None else ["half", "tf32", "ieee"]
    return capability >= MIN_CAPABILITY and all(SHARED_MEMORY[block, kind] <= shared for kind in kinds)


def _kind(dtype: torch.dtype, precision: str) -> str:
    """What a program computes, as ``SHARED_MEMORY`` keys it: ``"half"`` for bfloat16 and
    float16 data (always ``"tf32"`` products), else float32's ``precision``."""
    return "half" if dtype in (torch.bfloat16, torch.float16) else precision


def _device_limits(device: torch.device) -> tuple[tuple[int, int], int]:
    """A CUDA GPU's compute capability and the shared memory a block may opt in to, in bytes."""
    properties = torch.cuda.get_device_properties(device)
    # the stub of torch._C._CudaDeviceProperties (torch/_C/__init__.pyi) lacks this field, which CUDA builds define
    optin = properties.shared_memory_per_block_optin  # type: ignore[attr-defined]
    return (properties.major, properties.minor), optin


def block_size(size: int) -> int:
    """The block a kernel gives a size: the next power of two, at least 16 (``tl.dot``'s least)."""
    return max(16, 1 << (size - 1).bit_length())


@cached(maxsize=32)
def filter_matrices(dft: DenseDFT) -> FilterMatrices:
    """The :class:`FilterMatrices` of ``dft`` (any real dtype; the planes are its matrices
    rounded to float32), on its device. Cached by the identity of ``dft`` (which
    :func:`~convnorm._transforms.dense_dft` caches in turn).

    Raises:
        ValueError: if the normalization size exceeds ``MAX_LENGTH`` along an axis."""
    l1, k = dft.rfft_cols.shape[0], dft.rfft_cols.shape[1] // 2
    l0, o0, o1 = dft.dft_rows.shape[0], dft.idft_rows.shape[0], dft.irfft_cols.shape[1]
    if max(l0, l1) > MAX_LENGTH:
        raise ValueError(f"dft must have a normalization size of at most {MAX_LENGTH} per axis for the fused filter, "
                         f"got {(l0, l1)}")
    l0p, l1p, kp, o0p, o1p = (block_size(s) for s in (l0, l1, k, o0, o1))
    return FilterMatrices(
        _padded(dft.rfft_cols[:, 0::2], dft.rfft_cols[:, 1::2], l1p, kp),
        _padded(dft.dft_rows.real, dft.dft_rows.imag, l0p, l0p),
        _padded(dft.idft_rows.real, dft.idft_rows.imag, o0p, l0p),
        _padded(dft.irfft_cols[0::2], dft.irfft_cols[1::2], kp, o1p),
        (l0, l1), (o0, o1))


def filter_forward(y: torch.Tensor, multiplier_real: torch.Tensor, multiplier_imag: torch.Tensor,
                   matrices: FilterMatrices, bias: torch.Tensor | None = None, precision: str = "ieee", *,
                   samples_per_program: int | None = None, num_warps: int | None = None,
                   programs_per_sm: int | None = None) -> torch.Tensor:
    r"""The filtered, cropped, strided output :math:`z` ``(N, C, O0, O1)`` of the full
    convolution's output ``y`` ``(N, C, L0, L1)`` (float32, bfloat16 or float16, any strides:
    contiguous and channels-last are both read in place), by the multiplier with planes
    ``multiplier_real``, ``multiplier_imag`` (float32 ``(C, L0, K)``), plus ``bias`` ``(C,)``
    if given; in ``y``'s dtype, channels-last if ``y`` is (else contiguous). Products in float32
    with ``tl.dot``'s ``precision`` (one of ``PRECISIONS``). ``samples_per_program``: samples
    each program filters (default: enough programs for ``programs_per_sm`` per multiprocessor on
    a GPU, default ``PROGRAMS_PER_SM``; one per channel under the interpreter). ``num_warps``:
    warps per program (default: :func:`_num_warps` of the blocks). The last two are what
    ``benchmarks/bench_gpu.py`` sweeps.

    Raises:
        ImportError: if triton does not import.
        ValueError: naming the argument, for a device, dtype or shape the kernel does not take."""
    _check_filter("y", y, "length", multiplier_real, multiplier_imag, matrices, precision)
    if bias is not None:
        check_tensor("bias", bias)
        c = y.shape[1]
        if tuple(bias.shape) != (c,) or not bias.is_floating_point() or bias.device != y.device:
            raise ValueError(f"bias must be a floating-point tensor of shape ({c},) on {y.device}, "
                             f"got {tuple(bias.shape)} {bias.dtype} on {bias.device}")
    _check_tuning(samples_per_program, num_warps, programs_per_sm)
    return launch_forward(y, multiplier_real, multiplier_imag, matrices, bias, precision, samples_per_program,
                          num_warps, programs_per_sm)


def launch_forward(y: torch.Tensor, multiplier_real: torch.Tensor, multiplier_imag: torch.Tensor,
                   matrices: FilterMatrices, bias: torch.Tensor | None, precision: str,
                   samples_per_program: int | None = None, num_warps: int | None = None,
                   programs_per_sm: int | None = None) -> torch.Tensor:
    """:func:`filter_forward` without its checks, for a caller that has checked the arguments
    once (the layer's engine: the shapes, dtypes and device are fixed by its prepared plan), so
    that a forward call passes few Python frames."""
    n, c = y.shape[0], y.shape[1]
    z = torch.empty(n, c, *matrices.out_size, dtype=y.dtype, device=y.device, memory_format=_memory_format(y))
    per_program = _samples_per_program(n, c, y.device, samples_per_program, programs_per_sm)
    blocks = _blocks(matrices)
    if n * c:
        _kernels().forward_kernel[(c, -(-n // per_program))](
            y, z, multiplier_real, multiplier_imag, multiplier_real if bias is None else bias.contiguous(),
            *matrices[:4], n, *matrices.length, multiplier_real.shape[-1], *matrices.out_size, *y.stride(),
            *z.stride(), per_program, *blocks, HAS_BIAS=bias is not None, PRECISION=precision,
            num_warps=num_warps or _num_warps(*blocks[:2]))
    return z


def filter_backward(grad_z: torch.Tensor, y: torch.Tensor | None, multiplier_real: torch.Tensor,
                    multiplier_imag: torch.Tensor, matrices: FilterMatrices, need_grad_y: bool, need_products: bool,
                    precision: str = "ieee", *, samples_per_program: int | None = None,
                    num_warps: int | None = None, programs_per_sm: int | None = None
                    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    r"""``(grad_y, products_real, products_imag)`` for :func:`filter_forward` of ``y`` with the
    same multiplier and ``matrices``, given ``grad_z`` :math:`= \partial\mathcal L/\partial z`
    (``(N, C, O0, O1)``, float32, bfloat16 or float16, any strides): ``grad_y``
    :math:`= \partial\mathcal L/\partial y` in ``y``'s dtype and strides if ``need_grad_y``;
    the planes of :math:`S_c = \sum_n \overline{Y_n} \circ \Gamma_n`, float32 ``(C, L0, K)``
    each, if ``need_products`` (:math:`Y` is recomputed from ``y``; the sum over samples is
    deterministic: per program in registers, then one ``sum`` over programs); None for what is
    not needed. ``y`` may be None when no products are asked for (a frozen affine kernel: the
    caller then keeps no copy of the full convolution's output); ``grad_y`` then has
    ``grad_z``'s dtype and memory format. ``precision`` and ``samples_per_program`` as in
    :func:`filter_forward`, and so are ``num_warps`` and ``programs_per_sm``.

    Raises:
        ImportError: if triton does not import.
        ValueError: naming the argument, for a device, dtype or shape the kernel does not take."""
    if y is None and need_products:
        raise ValueError("y must be a tensor when need_products is True (the products are computed from it), got None")
    if y is None:
        _check_filter("grad_z", grad_z, "out_size", multiplier_real, multiplier_imag, matrices, precision)
    else:
        n, c = _check_filter("y", y, "length", multiplier_real, multiplier_imag, matrices, precision)
        _check_tiles("grad_z", grad_z, matrices.out_size, matrices)
        if grad_z.shape[:2] != y.shape[:2]:
            raise ValueError(f"grad_z must have shape (N, C, O0, O1) = {(n, c, *matrices.out_size)}, "
                             f"got {tuple(grad_z.shape)}")
    _check_tuning(samples_per_program, num_warps, programs_per_sm)
    return launch_backward(grad_z, y, multiplier_real, multiplier_imag, matrices, need_grad_y, need_products,
                           precision, samples_per_program, num_warps, programs_per_sm)


def launch_backward(grad_z: torch.Tensor, y: torch.Tensor | None, multiplier_real: torch.Tensor,
                    multiplier_imag: torch.Tensor, matrices: FilterMatrices, need_grad_y: bool, need_products: bool,
                    precision: str, samples_per_program: int | None = None, num_warps: int | None = None,
                    programs_per_sm: int | None = None
                    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """:func:`filter_backward` without its checks (see :func:`launch_forward`)."""
    if not (need_grad_y or need_products):
        return None, None, None
    n, c = grad_z.shape[0], grad_z.shape[1]
    k = multiplier_real.shape[-1]
    per_program = _samples_per_program(n, c, grad_z.device, samples_per_program, programs_per_sm)
    programs_per_channel, blocks = -(-n // per_program), _blocks(matrices)
    grad_y = None
    if need_grad_y:
        grad_y = (torch.empty_like(y) if y is not None else
                  torch.empty(n, c, *matrices.length, dtype=grad_z.dtype, device=grad_z.device,
                              memory_format=_memory_format(grad_z)))
    written = y if grad_y is None else grad_y  # a pointer the kernel does not use stands for what is not needed
    read = written if y is None else y
    if written is None or read is None:
        raise ValueError("y must be given where grad_y is not computed (need_grad_y False)")
    partial = (read.new_empty(2, programs_per_channel, c, matrices.length[0], k, dtype=torch.float32)
               if need_products else None)  # read is y where the products are needed
    if n * c:
        _kernels().backward_kernel[(c, programs_per_channel)](
            grad_z, read, written, read if partial is None else partial, multiplier_real, multiplier_imag,
            *matrices[:4],
            n, c, *matrices.length, k, *matrices.out_size, *grad_z.stride(), *read.stride(), *written.stride(),
            per_program, *blocks, NEED_GRAD_Y=need_grad_y, NEED_PRODUCTS=need_products, PRECISION=precision,
            num_warps=num_warps or _num_warps(*blocks[:2]))
    if partial is None:  # the products not needed
        return grad_y, None, None
    products = partial.sum(1)
    return grad_y, products[0], products[1]


@cached(maxsize=1)
def _triton_imports() -> bool:
    """Whether ``import triton`` succeeds (asked once, until :func:`~convnorm._caches.clear_caches`)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def _require_triton() -> None:
    """``ImportError`` naming triton unless it imports."""
    if not _triton_imports():
        raise ImportError("the fused filter needs triton, which does not import here (pip install triton)")


def _check_filter(name: str, tensor: torch.Tensor, size: str, real: torch.Tensor, imag: torch.Tensor,
                  matrices: FilterMatrices, precision: str) -> tuple[int, int]:
    """``(N, C)`` of ``tensor`` (the argument ``name``, of spatial size ``matrices.<size>``:
    ``"length"`` or ``"out_size"``) once the arguments both launchers share are checked:
    ``ImportError`` without triton, else ``ValueError`` naming the first argument the kernels
    cannot take."""
    _require_triton()
    if not isinstance(matrices, FilterMatrices):
        raise ValueError(f"matrices must be a FilterMatrices (from filter_matrices), got {type(matrices).__name__}")
    _check_tiles(name, tensor, getattr(matrices, size), matrices)
    _check_multiplier(real, imag, tensor.shape[1], matrices, tensor.device)
    check_choice("precision", precision, PRECISIONS)
    return tensor.shape[0], tensor.shape[1]


def _memory_format(tensor: torch.Tensor) -> torch.memory_format:
    """Channels-last for a tensor stored so (and not also contiguous), else contiguous: the
    layout the kernels write their outputs in, to keep the caller's."""
    return (torch.channels_last if tensor.is_contiguous(memory_format=torch.channels_last)
            and not tensor.is_contiguous() else torch.contiguous_format)


def _check_tiles(name: str, tensor: torch.Tensor, size: tuple[int, int], matrices: FilterMatrices) -> None:
    """``ValueError`` unless ``tensor`` is a float32, bfloat16 or float16 ``(N, C, *size)`` tensor
    on the device of ``matrices``, on which :func:`available` holds."""
    check_tensor(name, tensor)
    if tensor.dim() != 4 or tuple(tensor.shape[2:]) != size:
        raise ValueError(f"{name} must have shape (N, C, {size[0]}, {size[1]}), got {tuple(tensor.shape)}")
    if tensor.dtype not in DTYPES:
        raise ValueError(f"{name} must be float32, bfloat16 or float16, got {tensor.dtype}")
    if not available(tensor.device):
        raise ValueError(f"{name} must be on a CUDA device, or on the CPU with TRITON_INTERPRET=1 set, "
                         f"got {tensor.device}")
    if tensor.device != matrices.rows.device:
        raise ValueError(f"{name} must be on the device of matrices, {matrices.rows.device}, got {tensor.device}")


def _kernels():
    """The kernels module, imported on first use: triton decorates the kernels then, reading
    ``TRITON_INTERPRET``."""
    from . import _fused_filter_kernels
    return _fused_filter_kernels


def _check_multiplier(real: torch.Tensor, imag: torch.Tensor, channels: int, matrices: FilterMatrices,
                      device: torch.device) -> None:
    """``ValueError`` unless both planes are contiguous float32 ``(C, L0, K)`` tensors on ``device``."""
    shape = (channels, matrices.length[0], matrices.length[1] // 2 + 1)
    for name, plane in (("multiplier_real", real), ("multiplier_imag", imag)):
        check_tensor(name, plane)
        if (tuple(plane.shape) != shape or plane.dtype != torch.float32 or plane.device != device
                or not plane.is_contiguous()):
            raise ValueError(f"{name} must be a contiguous float32 tensor of shape {shape} on {device}, "
                             f"got {tuple(plane.shape)} {plane.dtype} on {plane.device}"
                             f"{'' if plane.is_contiguous() else ', not contiguous'}")


def _padded(real: torch.Tensor, imag: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """``(2, rows, cols)`` contiguous float32: the two planes zero-padded at their ends."""
    planes = torch.stack([real, imag]).float()
    return F.pad(planes, (0, cols - planes.shape[-1], 0, rows - planes.shape[-2])).contiguous()


def _blocks(matrices: FilterMatrices) -> tuple[int, int, int, int, int]:
    """The kernels' block sizes ``(L0P, L1P, KP, O0P, O1P)``: the padded matrices' shapes."""
    _, l1p, kp = matrices.columns.shape
    _, o0p, l0p = matrices.inverse_rows.shape
    return l0p, l1p, kp, o0p, matrices.inverse_columns.shape[-1]


def _check_tuning(samples_per_program: int | None, num_warps: int | None, programs_per_sm: int | None) -> None:
    """``ValueError`` naming the first tuning argument that is given and not valid."""
    for name, value in (("samples_per_program", samples_per_program), ("programs_per_sm", programs_per_sm)):
        if value is not None:
            check_positive_int(name, value)
    if num_warps is not None and num_warps not in WARPS:
        raise ValueError(f"num_warps must be one of {list(WARPS)}, got {num_warps!r}")


def _num_warps(l0p: int, l1p: int) -> int:
    """Warps per program for tiles padded to ``(l0p, l1p)``: 4 at 16 x 16, else 8 (at 32 x 32
    the float32 ``"ieee"`` kernels need 125-144 registers a thread with 8 warps, 200-227 with 4,
    compiled for sm_90). A starting point, not a measurement of speed."""
    return 4 if l0p * l1p <= 16 * 16 else 8


def _samples_per_program(n: int, channels: int, device: torch.device, requested: int | None,
                         programs_per_sm: int | None = None) -> int:
    """Samples each program filters: ``requested`` if given; on a GPU as many as leave about
    ``programs_per_sm`` programs per multiprocessor (default ``PROGRAMS_PER_SM``; fewer samples
    per program would load the matrices more often for no more parallelism); elsewhere (the
    interpreter runs programs one by one) all."""
    if requested is not None:
        return requested
    if device.type != "cuda":
        return max(n, 1)
    programs = (programs_per_sm or PROGRAMS_PER_SM) * torch.cuda.get_device_properties(device).multi_processor_count
    blocks = max(1, min(n, -(-programs // max(channels, 1))))
    return max(1, -(-n // blocks))
