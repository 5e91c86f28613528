r"""``ConvNorm1d`` and ``ConvNorm2d``: drop-in replacements for ``nn.Conv1d``/``nn.Conv2d``
that normalize every output channel spectrally (Liu et al. 2021).

The math lives in :func:`convnorm.functional.conv_norm`; this module keeps the
bookkeeping: the parameters (``weight``, ``bias``, ``affine_weight``), the running
average and its step count (buffers), the averaging factor's ramp, and the train/eval
switch. A forward computes what :func:`~convnorm.functional.conv_norm` computes with all of
them, as ``nn.BatchNorm2d``'s is one call of ``torch.nn.functional.batch_norm``; the layer checks
its arguments once, at construction and, for what depends on the input, at the first call with
each input signature, and keeps the layer prepared for that signature (``convnorm._engine``),
so that a forward call passes few Python frames and dispatches few operators.
"""
from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple

import torch
import torch.nn as nn
from torch.fx import Proxy, wrap
from torch.nn.utils import parametrize

from ._caches import exporting, outside_export, tracing
from ._compat import any_autocast_enabled, disable_current_modes, exporting_flag, get_tracing_state
from ._engine import Prepared, autocast_dtype, prepare, prepare_at_trace_time, ramp_table
from ._geometry import LayerGeometry, check_dtypes, conv_arguments, layer_geometry, resolve_padding
from ._policy import IN_FORCE, ComputationPolicy
from .functional import conv_norm
from .validation import (
    check_divisible,
    check_fraction,
    check_input_tensor,
    check_non_negative,
    check_positive_int,
    int_tuple,
)

OPTIONS = ("affine", "eps", "ramp_steps", "ramp_floor", "stop_gradient")
"""The ConvNorm options of a layer made from a convolution (:meth:`ConvNorm2d.from_conv`); the
convolution's arguments come from it."""

PREPARED_FROM = frozenset({"stride", "padding", "dilation", "groups", "padding_mode", "eps", "stop_gradient",
                           "ramp_steps", "ramp_floor", "weight", "bias", "affine_weight", "running_autocorrelation",
                           "num_steps_tracked"})
"""The layer's attributes that what it prepares for an input signature is made from: setting one
prepares the layer again. Others leave it prepared: ``training`` (the signature holds the mode's
effect) and what other code sets on a module, such as ``torch.compile``'s mark, so that a compiled
layer that ran eagerly reads its constants instead of building them in the graph."""


def check_options(options: dict) -> None:
    """``ValueError`` naming the unknown keys unless ``options`` are among :data:`OPTIONS`."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"the options of the new layers are {', '.join(OPTIONS)}; got {', '.join(unknown)} "
                         "(the convolution arguments come from each converted layer)")


class PreparedEntry(NamedTuple):
    """What a layer keeps between calls for one input signature (``_ConvNormNd._prepare``),
    read by name."""

    key: tuple
    """The signature: trace state, input shape, dtypes, devices, grad mode, autocast, step count's version."""
    policy: ComputationPolicy
    """The policy in force when it was prepared: another policy prepares again."""
    prepared: Prepared
    """The prepared computation, run by ``prepared.run``."""
    ramp: torch.Tensor
    """The running average's factor at every step (``convnorm._engine.ramp_table``)."""
    trained: bool | None
    """Evaluation only: whether the running average has been updated; None in training and while traced."""
    unbatched: bool
    """The input has no batch axis (``nn.Conv2d``'s unbatched form): computed as a batch of one."""


class _ConvNormNd(nn.Module):
    _ndim = 0
    _conv: type[nn.Conv1d] | type[nn.Conv2d]
    """The convolution this layer replaces (``nn.Conv2d`` for ``ConvNorm2d``)."""
    weight: torch.Tensor
    bias: torch.Tensor | None
    affine_weight: torch.Tensor | None
    running_autocorrelation: torch.Tensor
    num_steps_tracked: torch.Tensor
    _prepared: PreparedEntry | None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", affine=True, eps=1e-5, ramp_steps=40000, ramp_floor=0.01,
                 stop_gradient=True, device=None, dtype=None):
        nn.Module.__init__(self)  # not the convolution's: it would allocate before the arguments are checked
        d = self._ndim
        in_channels = check_positive_int("in_channels", in_channels)
        out_channels = check_positive_int("out_channels", out_channels)
        groups = check_positive_int("groups", groups)
        check_divisible("in_channels", in_channels, "groups", groups)
        check_divisible("out_channels", out_channels, "groups", groups)
        kernel_size = int_tuple("kernel_size", kernel_size, d, 1)
        stride, padding, dilation = conv_arguments(d, stride, padding, dilation)
        resolve_padding(kernel_size, stride, padding, dilation, padding_mode)  # checked now; kept as given
        eps = check_non_negative("eps", eps)
        ramp_steps = check_positive_int("ramp_steps", ramp_steps)
        ramp_floor = check_fraction("ramp_floor", ramp_floor)
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.padding_mode, self.eps = padding_mode, eps
        self.transposed, self.output_padding = False, (0,) * d  # what code written for a convolution reads
        self.ramp_steps, self.ramp_floor, self.stop_gradient = ramp_steps, ramp_floor, bool(stop_gradient)
        factory = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels // groups, *kernel_size, **factory))
        self.register_parameter("bias", nn.Parameter(torch.empty(out_channels, **factory)) if bias else None)
        self.register_parameter(
            "affine_weight", nn.Parameter(torch.empty(out_channels, *kernel_size, **factory)) if affine else None)
        self.register_buffer("running_autocorrelation",
                             torch.zeros(out_channels, *(2 * k - 1 for k in kernel_size), **factory))
        self.register_buffer("num_steps_tracked", torch.tensor(0, dtype=torch.long, device=device))
        self.reset_parameters()

    @classmethod
    def from_conv(cls, conv: nn.Module, **options):
        """A layer with ``conv``'s arguments that takes over its weight and bias: the same
        ``nn.Parameter`` objects, so an optimizer built for the model before (or anything else
        holding them) trains the new layer, and the two share them if ``conv`` is used on.

        ``options`` (``affine``, ``eps``, ``ramp_steps``, ``ramp_floor``, ``stop_gradient``)
        go to the new layer. It is on ``conv``'s device and dtype and in its train/eval mode, and
        as trainable as ``conv``: a frozen weight freezes the new affine kernel too (at its identity
        start), so a frozen convolution stays frozen. The new affine kernel is a new parameter: an
        optimizer built before does not hold it (add it: ``optimizer.add_param_group``). Its running
        average starts empty (``num_steps_tracked == 0``), so until the first training step eval
        mode normalizes with the weight. Hooks registered on ``conv`` stay with ``conv``.

        A parametrized convolution (``torch.nn.utils.parametrize``, e.g.
        ``torch.nn.utils.parametrizations.spectral_norm``) gives a layer with the same
        parametrizations on the same original parameters. A subclass of the convolution is taken
        as a convolution: its arguments and parameters are taken over, what its own ``forward``
        adds is not. Refused with ``ValueError`` naming the reason: anything else than the layer's
        convolution (``nn.Conv2d`` for ``ConvNorm2d``; a transposed or a 3D one included), a lazy
        convolution not initialised yet, a weight computed by a legacy hook
        (``torch.nn.utils.spectral_norm``, ``weight_norm``), and the arguments the layer refuses
        (``padding_mode='reflect'``, padding beyond the kernel).
        """
        if not isinstance(conv, cls._conv) or isinstance(conv, _ConvNormNd):
            raise ValueError(f"conv must be an nn.{cls._conv.__name__}, got {type(conv).__name__}")
        check_options(options)
        if has_uninitialized_params(conv):
            raise ValueError("conv is a lazy convolution whose parameters are not initialised yet: run one forward "
                             "pass first")
        parametrizations: Any = getattr(conv, "parametrizations", {})  # a ModuleDict where parametrized
        parametrized = tuple(parametrizations)
        for name in ("weight", "bias"):
            if name not in parametrized and getattr(conv, name) is not None and name not in conv._parameters:
                raise ValueError(
                    f"conv's {name} is not a parameter of it but computed by a hook (the legacy "
                    "torch.nn.utils.spectral_norm or weight_norm): remove the hook (torch.nn.utils."
                    "remove_spectral_norm, remove_weight_norm) or use its parametrization "
                    "(torch.nn.utils.parametrizations.spectral_norm), which is carried over")
        weight = conv.weight
        layer = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                    conv.dilation, conv.groups, conv.bias is not None, conv.padding_mode,
                    device=weight.device, dtype=weight.dtype, **options)
        if parametrized:  # the same parametrizations, on the same original parameters
            parametrize.transfer_parametrizations_and_params(conv, layer)
        for name in ("weight", "bias"):
            if name not in parametrized and getattr(conv, name) is not None:
                setattr(layer, name, conv._parameters[name])
        if layer.affine_weight is not None:
            trainable = any(p.requires_grad for p in parametrizations["weight"].parameters()) \
                if "weight" in parametrized else weight.requires_grad
            layer.affine_weight.requires_grad_(trainable)
        return layer.train(conv.training)

    @property
    def affine(self) -> bool:
        return self.affine_weight is not None

    def reset_running_stats(self) -> None:
        """Forget the running average: zero it and the step count."""
        self.running_autocorrelation.zero_()
        self.num_steps_tracked.zero_()

    def reset_parameters(self) -> None:
        """``nn.Conv2d``'s initialisation for weight and bias, a centred delta for the
        affine kernel (the layer starts as pure normalization), and fresh running stats."""
        # Same as nn.Conv2d: kaiming_uniform_ with a = sqrt(5), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.weight[0].numel())
            nn.init.uniform_(self.bias, -bound, bound)
        if self.affine_weight is not None:
            with torch.no_grad():
                self.affine_weight.zero_()
                self.affine_weight[(slice(None),) + tuple((k - 1) // 2 for k in self.kernel_size)] = 1
        self.reset_running_stats()

    def ramp_factor(self, step: torch.Tensor | int) -> torch.Tensor:
        r""":math:`\mu_u = \max(\tfrac12(1 + \cos(\pi \min(u, T)/T)), \mu_{\min})`, weight of the new value at
        training step :math:`u` (``step``)."""
        t = torch.as_tensor(step, dtype=torch.float64).clamp(max=self.ramp_steps)
        return (0.5 * (1 + torch.cos(math.pi * t / self.ramp_steps))).clamp(min=self.ramp_floor)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        # Parameters and buffers read from their dicts: ``self.weight`` is a Python call of
        # nn.Module.__getattr__ per access (a parametrization replaces the dict entry by a property).
        params: dict[str, Any] = self._parameters
        buffers: dict[str, Any] = self._buffers
        if not isinstance(input, torch.Tensor):
            if isinstance(input, Proxy):  # torch.fx's symbolic trace
                if input.tracer.root is not self:  # of a model: the layer is one call of itself (a leaf, as
                    # PyTorch's own layers are), so the graph runs it as it is, in its mode, with its state
                    return input.tracer.create_proxy("call_module", input.tracer.path_of_module(self), (input,), {})
                return self._conv_forward(input, self.weight, self.bias)  # of the layer: one call of a function
            check_input_tensor(input)  # TypeError naming the type, as a convolution's
        try:
            weight, bias, affine_weight = params["weight"], params["bias"], params["affine_weight"]
        except KeyError:
            weight, bias, affine_weight = self.weight, self.bias, self.affine_weight
        running, steps, training = buffers["running_autocorrelation"], buffers["num_steps_tracked"], self.training
        # whether a program is traced for deployment (a jit trace's state; what torch.compiler.is_exporting()
        # returns), then the signature (any batch size)
        key = (get_tracing_state(), exporting_flag(), input.shape[1:], input.dtype, input.device,
               weight.dtype, weight.device, weight.requires_grad and torch.is_grad_enabled(),
               any_autocast_enabled() and autocast_dtype(input.device.type), None if training else steps._version)
        entry = self._prepared
        if entry is None or entry.key != key or entry.policy is not IN_FORCE.policy:
            entry = self._prepare(input, weight, bias, affine_weight, key)
        if entry.unbatched:  # as nn.Conv2d takes it: a batch of one
            input = input.unsqueeze(0)
        if training:
            out = entry.prepared.run(input, weight, bias, affine_weight, running, steps, True,
                                     entry.ramp.index_select(0, steps.clamp(max=self.ramp_steps)))
        else:
            trained = entry.trained  # in evaluation: the running average once trained, else the weight's own
            out = entry.prepared.run(input, weight, bias, affine_weight, None if trained is False else running,
                                     None if trained else steps, False, None)
        return out.squeeze(0) if entry.unbatched else out

    def _conv_forward(self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """The layer's computation of ``input`` with this ``weight`` and ``bias`` (and the layer's affine
        kernel, running average and mode), :func:`layer_conv_norm`: what ``nn.Conv2d``'s forward calls,
        so that code written for a convolution that calls it with a weight of its own (a standardized
        weight, a low-rank update) gets the layer's normalization of that weight."""
        return layer_conv_norm(input, weight, bias, self.affine_weight, self.running_autocorrelation,
                               self.num_steps_tracked, self.stride, self.padding, self.dilation, self.groups,
                               self.padding_mode, self.eps, self.stop_gradient, self.training, self.ramp_steps,
                               self.ramp_floor)

    def _prepare(self, input, weight, bias, affine_weight, key: tuple) -> PreparedEntry:
        """Check the call (what depends on the input) and prepare the layer for its signature
        ``key``: the :class:`PreparedEntry`, kept unless traced (a layer prepared eagerly keeps its
        entry through a trace). ``trained`` (evaluation only) says whether the running average has
        been updated, read once here (the key holds the step count's version, so any change to it
        prepares again); None while traced, where the choice stays on the device, and in the traced
        program."""
        deployed = exporting()
        autocast = autocast_dtype(input.device.type)  # the key's, read again by name
        with outside_export():  # exported: sizes as ints and matrices as constants, not recorded
            unbatched = input.dim() == self._ndim + 1
            if unbatched:
                input = input.unsqueeze(0)
            check_dtypes(input, weight, autocast)
            geometry = layer_geometry(input, weight, self.stride, self.padding, self.dilation, self.groups,
                                      self.padding_mode, bias, affine_weight)
            policy = IN_FORCE.policy
            taps = None if affine_weight is None else tuple(affine_weight.shape[1:])
            stop_gradient = self.stop_gradient or not (weight.requires_grad and torch.is_grad_enabled())
            if not deployed and torch.compiler.is_dynamo_compiling():
                # compiled: prepared once, outside the program, which reads the constants
                name = _entry_at_trace_time(self, input.dtype, input.device, _specialized(tuple(geometry)),
                                            torch.is_grad_enabled(), policy, autocast, unbatched)
                return getattr(self, name)
            prepared = prepare(input.dtype, input.device, tuple(weight.shape), geometry, self.eps, taps,
                               stop_gradient, policy, autocast, deployed)
            running, steps = self.running_autocorrelation, self.num_steps_tracked
            traced = deployed or tracing()
            trained = None if self.training or traced else bool(steps > 0)
            entry = PreparedEntry(key, policy, prepared,
                                  ramp_table(self.ramp_steps, self.ramp_floor, running.dtype, running.device),
                                  trained, unbatched)
        if not traced:
            self.__dict__["_prepared"] = entry
        return entry

    def __setattr__(self, name: str, value) -> None:
        super().__setattr__(name, value)
        if name in PREPARED_FROM:  # a setting the prepared computation was made from: prepare again
            self.__dict__["_prepared"] = None
            for kept in self.__dict__.pop(COMPILED, {}).values():
                del self.__dict__[kept]

    def __getstate__(self) -> dict:
        compiled = {COMPILED, *self.__dict__.get(COMPILED, {}).values()}
        # prepared again where it is unpickled
        return {**{k: v for k, v in self.__dict__.items() if k not in compiled}, "_prepared": None}

    def __prepare_scriptable__(self):
        """``torch.jit.script`` asks every module for a scriptable version of itself first: this
        layer has none (its forward keeps Python state between calls, which TorchScript's
        compiler does not take), so the error names the ways that do work."""
        name = type(self).__name__
        raise RuntimeError(
            f"{name} cannot be compiled by torch.jit.script. Put the model in evaluation mode "
            f"(model.eval()) and trace or export it instead: torch.jit.trace(model, example_input), "
            f"torch.export.export(model, (example_input,)) or torch.onnx.export(model, (example_input,), path); "
            f"a scripted model can call a traced {name} (trace the layer, then script the rest).")

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * self._ndim:
            s += ", padding={padding}"
        if self.dilation != (1,) * self._ndim:
            s += ", dilation={dilation}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        if not self.affine:
            s += ", affine=False"
        if self.eps != 1e-5:
            s += ", eps={eps}"
        if self.ramp_steps != 40000:
            s += ", ramp_steps={ramp_steps}"
        if self.ramp_floor != 0.01:
            s += ", ramp_floor={ramp_floor}"
        if not self.stop_gradient:
            s += ", stop_gradient=False"
        return s.format(**self.__dict__, affine=self.affine)


COMPILED = "_compiled_entries"
"""The attribute of a layer that names, by signature, the attributes holding the entries
(:class:`PreparedEntry`) it prepared while ``torch.compile`` traced it (:func:`_entry_at_trace_time`)."""


def _specialized(value):
    """``value`` (nested tuples of sizes and strings) with every size a Python ``int``: a size that
    Dynamo traces as symbolic is specialized to its value (the program is then guarded on it, and
    another size compiles another program), as the layer's matrices are made for one size."""
    if isinstance(value, tuple):
        return tuple(_specialized(item) for item in value)
    return operator.index(value) if isinstance(value, int) else value  # Dynamo specializes by index, not int()


@torch.compiler.assume_constant_result
def _entry_at_trace_time(layer: _ConvNormNd, dtype: torch.dtype, device: torch.device, geometry: tuple,
                         grad_enabled: bool, policy: ComputationPolicy, autocast: torch.dtype | None,
                         unbatched: bool) -> str:
    """The name of the attribute of ``layer`` that holds its :class:`PreparedEntry` for this
    signature while ``torch.compile`` traces it, made on the first trace. Dynamo does not trace
    this function: it runs it once, for real, when it meets it
    (``torch.compiler.assume_constant_result``), and takes the name it returns as a constant.
    The entry's matrices are then real tensors, made outside the program, that the program reads
    as it reads those of a layer that ran eagerly, instead of building them at every call (the
    entry's ``trained`` is None: in evaluation the choice stays on the device). It is kept in an
    attribute of its own, never ``_prepared``, which the program guards on as it found it.
    ``geometry`` is the :class:`~convnorm._geometry.LayerGeometry`'s fields, sizes specialized
    (:func:`_specialized`): Dynamo (torch 2.13) passes a named tuple made in the traced code to such
    a function empty. The layer's own settings and parameters' shapes are read here, from the layer:
    Dynamo passes a module's numbers as symbols under ``dynamic=True``, which such a function cannot take."""
    weight, affine_weight = layer.weight, layer.affine_weight
    taps = None if affine_weight is None else tuple(affine_weight.shape[1:])
    stop_gradient = layer.stop_gradient or not (weight.requires_grad and grad_enabled)
    signature = (dtype, device, tuple(weight.shape), geometry, layer.eps, taps, stop_gradient, policy, autocast,
                 unbatched, layer.ramp_steps, layer.ramp_floor)
    names = layer.__dict__.setdefault(COMPILED, {})
    name = names.get(signature)
    if name is None:
        prepared = prepare_at_trace_time(dtype, device, tuple(weight.shape), LayerGeometry(*geometry), layer.eps,
                                         taps, stop_gradient, policy, autocast)
        running = layer.running_autocorrelation
        with disable_current_modes():
            ramp = ramp_table.kept(layer.ramp_steps, layer.ramp_floor, running.dtype, running.device)  # type: ignore[attr-defined]
        name = names[signature] = f"_compiled_entry_{len(names)}"
        layer.__dict__[name] = PreparedEntry((), policy, prepared, ramp, None, unbatched)
    return name


def layer_conv_norm(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                    affine_weight: torch.Tensor | None, running_autocorrelation: torch.Tensor,
                    num_steps_tracked: torch.Tensor, stride: tuple[int, ...], padding: tuple[int, ...] | str,
                    dilation: tuple[int, ...], groups: int, padding_mode: str, eps: float, stop_gradient: bool,
                    training: bool, ramp_steps: int, ramp_floor: float) -> torch.Tensor:
    """A layer's computation as one function of its tensors and arguments, preparing on every call
    (by :func:`~convnorm.functional.conv_norm`, with the running average and its ramp factor): what
    ``_conv_forward`` computes with a weight of the caller's, and what ``torch.fx`` records where it
    traces a layer on its own, one call of this function (``torch.fx.wrap``), as a convolution is one
    call of ``conv2d``; a layer inside a traced model is a leaf instead, one call of the layer. It
    trains (buffers updated in place) and evaluates as the layer does, in the mode ``training``
    (in a traced graph, the mode the layer was in when traced: a constant, as any Python value in
    an FX trace)."""
    factor = None
    if training:
        table = ramp_table(ramp_steps, ramp_floor, running_autocorrelation.dtype, running_autocorrelation.device)
        factor = table.index_select(0, num_steps_tracked.clamp(max=ramp_steps))
    return conv_norm(input, weight, bias, stride, padding, dilation, groups, padding_mode, eps, affine_weight,
                     stop_gradient, running_autocorrelation, num_steps_tracked, training, factor)


wrap("layer_conv_norm")


def has_uninitialized_params(module: nn.Module) -> bool:
    """Whether ``module`` is a lazy module (``nn.LazyConv2d``) with a parameter not materialised yet."""
    return any(isinstance(p, nn.UninitializedParameter) for p in module.parameters(recurse=False))


class ConvNorm2d(_ConvNormNd, nn.Conv2d):
    r"""2D convolution with ConvNorm: a drop-in for ``nn.Conv2d``.

    Applies, per output channel :math:`k`,

    .. math:: \begin{aligned}
        \tilde y_k &= v_k * (a_k \star x),\\
        z_k &= \operatorname{stride}_s\,\operatorname{crop}_{m-1-p}\bigl[\rho_k * \tilde y_k\bigr] + b_k,\\
        \hat v_k &= \bigl(\textstyle\sum_i |\hat a_{ki}|^2 + \varepsilon\bigr)^{-1/2},
        \end{aligned}

    where :math:`a_k \star x` is the full cross-correlation (size :math:`L = n + m - 1`),
    :math:`*` circular convolution at size :math:`L` (the book's notation), :math:`\rho_k` the affine
    kernel and :math:`b_k` the bias (see :mod:`convnorm.reference` for the exact procedure,
    step by step, and :mod:`convnorm.functional` for how it is computed). With
    ``padding_mode='circular'`` the normalized operator of channel :math:`k` is
    :math:`Q_k = (A_k A_k^\top)^{-1/2} A_k`, a tight frame (:math:`Q_k Q_k^\top = I` when ``eps = 0``).

    Where things happen:

    * **Affine transform** (``affine=True``): a learnable kernel :math:`\rho_k` per output
      channel, of the same size as the conv kernel, applied after the normalization as a
      circular cross-correlation at the normalization size :math:`L`, *before* the crop and
      the stride (the paper's Algorithm 1). It is initialised to a centred delta, so a fresh
      layer is pure normalization. The bias is added last.
    * **Normalizer and gradient**: in training mode :math:`\hat v` comes from the current
      weight, detached (stop-gradient, as in the paper) unless ``stop_gradient=False``.
      With stop-gradient the backward passes are hand-written and differentiable once:
      second derivatives (double backward, e.g. a gradient penalty) raise PyTorch's
      ``once_differentiable`` error. With ``stop_gradient=False`` autograd differentiates the
      spatial computation, to any order.
    * **Running average**: every training forward updates
      ``running_autocorrelation`` :math:`\bar r \leftarrow \mu_u\, r + (1 - \mu_u)\,\bar r` with
      the summed kernel autocorrelation :math:`r_k = \sum_i a_{ki} \star a_{ki}` of the current
      weight, :math:`\mu_u = \max\bigl(\tfrac12(1 + \cos(\pi \min(u, T)/T)),\ \mu_{\min}\bigr)`,
      :math:`T` = ``ramp_steps``, :math:`\mu_{\min}` = ``ramp_floor`` and :math:`u` =
      ``num_steps_tracked``, which then advances by one. The count advances **once per
      training forward** (as BatchNorm's ``num_batches_tracked``): a loop that calls the
      model several times per optimizer step advances it several times. The update is
      skipped (and the count kept) if the weight is not finite; the buffers depend on the
      weight only, so a non-finite *input* cannot reach them.
    * **Eval mode** normalizes with :math:`\hat v = (\mathcal{F}_L \bar r + \varepsilon)^{-1/2}`.
      The paper averages :math:`\hat v` itself; averaging :math:`r` instead (that is, the
      power spectrum, which is linear in :math:`r`) gives a state of fixed shape that is
      valid at *every* input size, so a layer trained on 32x32 images evaluates exactly on
      any other size. Both averages agree once the weights stop moving. Before the first
      training step (``num_steps_tracked == 0``) eval mode uses the current weight.

    It trains under ``DataParallel`` and ``DistributedDataParallel``, which keep its buffers as they
    keep BatchNorm's (the book's engineering notes say how).

    What it shares with ``nn.Conv2d``: the arguments and their checks, an input without the batch
    axis, ``padding='same'`` for even kernels too (one sample more after than before),
    ``padding`` shown as given, the input's memory format (channels-last in, channels-last out),
    the errors' types: an input that does not fit the layer (its shape, channels, size, or a dtype
    other than the weight's outside autocast) raises :class:`~convnorm.validation.InputError`, which
    is both the ``RuntimeError`` a convolution raises and a ``ValueError`` naming what is wrong, and
    an input that is not a tensor raises ``TypeError``.
    It is a ``nn.Conv2d`` (a subclass, as PyTorch's quantization-aware convolutions are), so code that
    finds convolutions by ``isinstance`` finds it: initialisation loops, weight-decay filters, the
    attributes read on convolutions (``weight``, ``bias``, ``transposed``, ``output_padding``), and
    ``_conv_forward(input, weight, bias)``, which computes the layer with a weight of the caller's.
    Code that finds convolutions in order to change what they compute must not be given it:
    folding a BatchNorm into the weight (``torch.nn.utils.fusion.fuse_conv_bn_eval``) is undone by
    the normalizer. ``convert`` leaves ConvNorm layers as they are. There is no ConvNorm3d, and no
    transposed ConvNorm: the method normalizes a convolution :math:`A` by :math:`(AA^\top)^{-1/2}`
    and defines nothing for its adjoint.
    Where it cannot follow: ``padding_mode`` other than ``'zeros'`` and ``'circular'`` (reflected
    or replicated borders are not a convolution at the normalization size), zero padding beyond
    ``dilation * (kernel_size - 1)`` (the full output would not contain the requested one), and
    circular padding other than half the (odd) kernel (the operator would not be circulant).

    Precision: under ``torch.autocast`` the layer returns the autocast dtype, like a convolution.
    On a CUDA GPU with Triton (every CUDA build of PyTorch ships it) the filter after the
    convolution runs as fused kernels that read the convolution's output once, in its dtype, and
    write the layer's output once; under autocast the convolution then runs in the autocast dtype,
    on the tensor cores, which the normalizer's gain amplifies on low-pass kernels
    (``ComputationPolicy.float32_convolution`` keeps it in float32). Elsewhere the layer computes in
    float32 under autocast. A float16 or bfloat16 layer (``model.half()``) computes in float32
    (fused: as it is) and returns its input's dtype; its buffers are kept in the layer's dtype.

    Compiling, graphs, transforms, export. It compiles with ``torch.compile(fullgraph=True)``. The
    compiled graph reads the layer's constant matrices, made once outside it, whether the layer ran
    eagerly first or not. They are made for one input size, so the program is specialized to the
    spatial size (under ``dynamic=True`` too): another size compiles another program.
    Nothing in it synchronises with the host, so a whole training step records into one CUDA graph
    (``torch.cuda.graph``; on a GPU, where an eager step is bound by kernel launches, that is the
    fast way to train it). ``torch.func``'s ``grad`` and ``vmap`` take it (the layer then computes
    by plain operations, not its hand-written backward). Deployment: a model in evaluation mode
    (``model.eval()``, what ships) exports with ``torch.export.export`` (the batch dimension may be
    left dynamic), ``torch.onnx.export`` (either exporter; onnxruntime runs the result) and
    ``torch.jit.trace``, for a static spatial size (the book's engineering notes say what the
    exported program computes). ``torch.export``'s programs also train (buffers updated, gradients
    as the layer's); a ``torch.jit.trace`` records no grad mode, so its program's gradients would
    flow through :math:`\hat v`: trace for inference. ``torch.jit.script`` raises an error naming
    these ways. ``torch.fx.symbolic_trace`` records a layer inside a model as one call of the layer
    (a leaf, as PyTorch's own layers), so feature extractors built on FX (torchvision's
    ``create_feature_extractor``) take a converted model; a layer traced on its own is one call of
    ``convnorm.layers.layer_conv_norm``.

    Args:
        in_channels (int): channels of the input.
        out_channels (int): channels of the output.
        kernel_size (int or tuple): size of the kernel.
        stride (int or tuple): stride. Default: 1
        padding (int, tuple or str): zero padding (at most ``dilation * (kernel_size - 1)``),
            or ``(kernel_size - 1) / 2`` with ``padding_mode='circular'``; ``'same'`` and
            ``'valid'`` as for ``nn.Conv2d``. Default: 0
        dilation (int or tuple): kernel dilation. Default: 1
        groups (int): blocked connections, as for ``nn.Conv2d``. Default: 1
        bias (bool): add a learnable bias after everything. Default: ``True``
        padding_mode (str): ``'zeros'`` or ``'circular'``; others raise ``ValueError``.
            Default: ``'zeros'``
        affine (bool): learn the per-channel affine kernel :math:`\rho_k`. Default: ``True``
        eps (float): :math:`\varepsilon`, bounds the gain by :math:`\varepsilon^{-1/2}`.
            Default: 1e-5
        ramp_steps (int): :math:`T`, length of the cosine ramp. Default: 40000 (the paper's)
        ramp_floor (float): :math:`\mu_{\min}`, the smallest averaging factor. Default: 0.01
            (as the authors' code)
        stop_gradient (bool): treat :math:`\hat v` as a constant in backpropagation.
            Default: ``True``

    Shape:
        - Input: :math:`(N, C_{in}, H_{in}, W_{in})`
        - Output: :math:`(N, C_{out}, H_{out}, W_{out})`, the shape ``nn.Conv2d`` gives with the same
          arguments: :math:`n_{out} = \lfloor (n + 2p - d(m - 1) - 1)/s \rfloor + 1`.

    Attributes:
        weight: ``(C_out, C_in / groups, *kernel_size)``, same shape and initialisation as
            ``nn.Conv2d`` (weights copy either way).
        bias: ``(C_out,)`` or None.
        affine_weight: ``(C_out, *kernel_size)``, a centred delta at initialisation, or None.
        running_autocorrelation: buffer ``(C_out, *(2 * kernel_size - 1))``.
        num_steps_tracked: buffer, int64 scalar, training forwards so far.

    Example::

        >>> layer = ConvNorm2d(3, 8, 3, padding=1)
        >>> layer(torch.randn(2, 3, 32, 32)).shape
        torch.Size([2, 8, 32, 32])

    """

    _ndim = 2
    _conv = nn.Conv2d


class ConvNorm1d(_ConvNormNd, nn.Conv1d):
    r"""1D convolution with ConvNorm: a drop-in for ``nn.Conv1d``.

    :class:`ConvNorm2d` for signals, with one spatial axis instead of two: the same equation, the same
    arguments (each a single number, as for ``nn.Conv1d``), parameters, buffers, running average, training
    and evaluation modes, precision and deployment. :class:`ConvNorm2d`'s documentation states them once.

    Shape:
        - Input: :math:`(N, C_{in}, L_{in})`
        - Output: :math:`(N, C_{out}, L_{out})`, the shape ``nn.Conv1d`` gives with the same arguments.

    Example::

        >>> layer = ConvNorm1d(3, 8, 3, padding=1)
        >>> layer(torch.randn(2, 3, 50)).shape
        torch.Size([2, 8, 50])
    """

    _ndim = 1
    _conv = nn.Conv1d
