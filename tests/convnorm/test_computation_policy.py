"""How conv_norm chooses a computation: the policy's plan (computation, transforms, chunks)
and the autocorrelation's method, what chosen_computation says and conv_norm then does, the
policy set for a block only (restored on exit and after an error, per thread), the frequency
domain's chunks, and the caches (every one registered and clearable)."""
from __future__ import annotations

import functools
import importlib
import pkgutil
import threading
from dataclasses import replace

import pytest
import torch

import convnorm
from convnorm import ConvNorm2d, _caches
from convnorm._engine import REGISTRY
from convnorm._frequency_domain import _chunks
from convnorm._geometry import layer_geometry
from convnorm.fourier import autocorrelation_by_convolution, kernel_autocorrelation
from convnorm.functional import (
    ComputationPolicy,
    chosen_computation,
    clear_caches,
    computation,
    conv_norm,
    current_policy,
    use_policy,
)
from convnorm.reference import conv_norm_reference


def chosen(size, stride=1, groups=1, dilation=1, device="cpu", dtype=torch.float32, stop_gradient=True, kernel=3):
    """Whether the policy in force computes this layer in the frequency domain."""
    x = torch.empty(2, 4, size, size, device=device, dtype=dtype)
    w = torch.empty(4, 4 // groups, kernel, kernel, device=device, dtype=dtype, requires_grad=True)
    return chosen_computation(x, w, stride, dilation * (kernel - 1) // 2, dilation, groups,
                              stop_gradient=stop_gradient) == "frequency_domain"


def test_frequency_domain_is_chosen_where_documented():
    with use_policy(ComputationPolicy(frequency_domain_max_size=16)):
        assert chosen(16) and chosen(4) and chosen(8, dtype=torch.float64) and chosen(32, stride=2)
        assert not chosen(32)  # a large stride-1 map: the spatial convolution
        assert not chosen(8, groups=2) and not chosen(8, dilation=2) and not chosen(8, device="meta")
        assert not chosen(8, stop_gradient=False)  # the gradient flows through v-hat: autograd path
        with torch.no_grad():  # ... unless there is no gradient at all
            assert chosen(8, stop_gradient=False)
        assert not chosen(8, kernel=49) and not chosen(64, stride=2)  # beyond the dense-DFT sizes
        assert chosen(8, dtype=torch.bfloat16) and chosen(8, dtype=torch.float16)  # computed in float32
        with torch.autocast("cpu", dtype=torch.bfloat16):  # so is a float64 input under autocast
            assert chosen(8, dtype=torch.float64)
    assert chosen(32), "the default policy: every 3x3 layer of a CIFAR ResNet on a CPU"
    x, w = torch.empty(2, 4, 8, 8), torch.empty(6, 4, 1, 1)
    assert chosen_computation(x, w) == "pointwise"
    assert chosen_computation(x, torch.empty(6, 4, 3, 3), padding=1, groups=1) == "frequency_domain"
    with pytest.raises(ValueError, match="input has 4 channels"):
        chosen_computation(x, torch.empty(6, 3, 3, 3))


def ran_in_the_frequency_domain(out: torch.Tensor) -> bool:
    return type(out.grad_fn).__name__.startswith("FrequencyDomainConvNorm")


@pytest.mark.parametrize("size, stride, stop_gradient", [(8, 1, True), (8, 2, True), (20, 1, True), (8, 1, False)])
def test_chosen_computation_is_the_one_conv_norm_runs(size, stride, stop_gradient):
    """:func:`chosen_computation` answers what :func:`conv_norm` then does (here with the
    limit at 16: the 20x20 stride-1 map is computed spatially)."""
    x, w = torch.randn(2, 3, size, size), torch.randn(4, 3, 3, 3, requires_grad=True)
    with use_policy(ComputationPolicy(frequency_domain_max_size=16)):
        want = chosen_computation(x, w, stride, 1, stop_gradient=stop_gradient)
        out = conv_norm(x, w, None, stride, 1, stop_gradient=stop_gradient)
    assert want == ("frequency_domain" if ran_in_the_frequency_domain(out) else "spatial")
    assert want == ("spatial" if size == 20 or not stop_gradient else "frequency_domain")


def plan(size, kernel=3, device="cpu", dtype=torch.float32, c_in=4, c_out=4, policy=None):
    """The plan of the (spatial, unless forced otherwise) policy for a layer on ``size`` inputs."""
    x = torch.empty(2, c_in, *size, device=device, dtype=dtype)
    w = torch.empty(c_out, c_in, *[kernel] * len(size), device=device, dtype=dtype)
    geometry = layer_geometry(x, w, 1, 0, 1, 1, "zeros")
    return (policy or ComputationPolicy().forcing("spatial")).plan(x, tuple(w.shape), geometry, True)


def test_dense_dft_matrices_only_on_a_cpu_and_for_small_2d_sizes():
    """The spatial computation's transforms: dense DFT matrices on a CPU up to
    ``dense_dft_max_length``, FFTs beyond it, in 1D, and on any other device (cuFFT on a GPU;
    ``meta`` stands in for it here). Half-precision data count as float32, which they are
    computed in."""
    limit = ComputationPolicy().dense_dft_max_length
    assert plan((32, 32)).filter == "dense" and plan((limit - 2, 3)).filter == "dense"
    assert plan((32, 32), dtype=torch.float64).filter == "dense"
    assert plan((32, 32), dtype=torch.float16).filter == "dense"
    assert plan((limit - 1, 3)).filter == "fft" and plan((32,)).filter == "fft"
    assert plan((32, 32), device="meta").filter == "fft"
    elsewhere = replace(ComputationPolicy().forcing("spatial"), dense_transform_devices=("cpu", "meta"))
    assert plan((32, 32), device="meta", policy=elsewhere).filter == "dense"  # a device the policy names
    # the affine gradient's products summed sample by sample on a CPU only, where the running sum stays in cache
    assert plan((32, 32)).products_by_sample and not plan((32, 32), device="meta", policy=elsewhere).products_by_sample
    assert not plan((limit - 1, 3)).products_by_sample  # no dense transforms, no such sum
    with pytest.raises(ValueError, match="dense_transform_devices must be a tuple of device types"):
        ComputationPolicy(dense_transform_devices="cuda")


def test_a_policy_filters_another_way_on_a_device_and_says_what_it_changed():
    """What a GPU window trains with when its benchmark chose a filter there, and what a run
    record notes of it: the fields that differ from the default policy, nothing else."""
    default = ComputationPolicy()
    assert default.changes() == {}
    dense = default.forcing("spatial").filtering("dense", "meta")
    assert dense.filtering("dense", "meta") == dense  # once is enough
    assert dense.changes() == {"frequency_domain_devices": [], "dense_transform_devices": ["cpu", "meta"]}
    assert plan((32, 32), device="meta", policy=dense).filter == "dense"
    assert plan((32, 32), device="meta", policy=default.forcing("spatial")).filter == "fft"
    assert dense.filtering("fft", "meta") == default.forcing("spatial")  # back to FFTs there
    assert default.filtering("fft", "cuda") == default  # the known-good filter is the default on a GPU
    assert default.filtering("fused", "cuda").changes() == {"fused_filter_devices": ["cuda"]}
    assert default.forcing("frequency_domain").changes()["frequency_domain_max_size"] == float("inf")
    with pytest.raises(ValueError, match="device_type must be a device type"):
        default.filtering("dense", torch.device("cuda"))
    with pytest.raises(ValueError, match="filter must be one of"):
        default.filtering("cufft", "cuda")


def test_the_affine_gradient_is_the_same_with_or_without_the_sum_by_sample(monkeypatch):
    """A layer's gradients on a CPU with the plan as made (products summed sample by sample)
    and with the one product and sum that other devices' plans ask for."""
    torch.manual_seed(0)
    layer = ConvNorm2d(3, 4, 3, stride=2, padding=1, dtype=torch.float64)
    with torch.no_grad():
        layer.affine_weight.add_(0.1 * torch.randn_like(layer.affine_weight))
    x = torch.randn(5, 3, 9, 9, dtype=torch.float64)

    def gradients():
        layer.zero_grad()
        with computation("spatial"):
            layer(x).square().sum().backward()
        return layer.weight.grad.clone(), layer.affine_weight.grad.clone()

    assert plan((9, 9)).filter == "dense" and plan((9, 9)).products_by_sample
    grads = [gradients()]
    made = ComputationPolicy.plan
    monkeypatch.setattr(ComputationPolicy, "plan",
                        lambda self, *args: made(self, *args)._replace(products_by_sample=False))
    clear_caches()  # prepared layers keep their plans: prepare them again under the patched rule
    layer._prepared = None
    grads.append(gradients())
    for first, second in zip(*grads):
        torch.testing.assert_close(first, second, rtol=1e-12, atol=1e-12)


def test_the_plan_holds_every_threshold():
    """The frequency domain's dense 2D maps up to ``dense_2d_max_pixels`` and its chunks of
    ``chunk_bytes`` of kernel spectra (on a CPU; all at once elsewhere): each a field of the
    policy, read by the plan only."""
    forced = ComputationPolicy().forcing("frequency_domain")
    small, large = plan((8, 8), policy=forced), plan((11, 11), policy=forced)  # outputs 6x6, 9x9
    assert small.computation == large.computation == "frequency_domain"
    assert small.dense_input and small.dense_output and not large.dense_input and not large.dense_output
    per_frequency = 2 * 4 * 4 * 4  # real and imaginary float32 parts of 4 x 4 kernels
    assert small.frequencies_per_chunk == forced.chunk_bytes // per_frequency
    assert plan((8, 8), policy=replace(forced, chunk_bytes=1)).frequencies_per_chunk == 1
    assert plan((8, 8), device="meta", policy=forced).frequencies_per_chunk is None


def test_each_plan_names_its_class_in_the_registry_and_says_why():
    """One class per computation in the engine's registry; the plan names the class that runs it
    (the layer keeps it in its named record) and the rule that chose it, with what it compared."""
    rule, forced = ComputationPolicy(), ComputationPolicy().forcing("frequency_domain")
    cases = [  # (policy, kernel, stride, groups, size, method, words of the reason)
        (rule, 3, 1, 1, 16, "frequency_domain", "within frequency_domain_max_size 32"),
        (rule, 3, 2, 1, 40, "frequency_domain", "strided (stride (2, 2))"),
        (rule, 3, 1, 2, 16, "spatial", "groups=2 (the frequency domain takes one group); the dense filter"),
        (rule, 3, 1, 1, 49, "spatial", "L (51, 51) beyond dense_dft_max_length 50; the FFT filter"),
        (replace(rule, frequency_domain_max_size=8), 3, 1, 1, 16, "spatial", "input (16, 16) beyond"),
        (rule.forcing("spatial"), 3, 1, 1, 16, "spatial", "cpu not in frequency_domain_devices"),
        (rule, 1, 1, 1, 16, "pointwise", "a 1x1 kernel"),
        (replace(forced, frequency_domain_gemms=True), 3, 1, 1, 16, "frequency_gemms",
         "by matrix products in torch.float32 (frequency_domain_gemms)"),
    ]
    assert sorted(REGISTRY) == sorted({case[5] for case in cases})
    for policy, kernel, stride, groups, size, method, reason in cases:
        layer = ConvNorm2d(4, 4, kernel, stride, kernel // 2, groups=groups)
        with use_policy(policy):
            layer(torch.randn(1, 4, size, size))
        entry = layer._prepared
        assert entry is not None and entry.policy is policy and entry.key[2] == (4, size, size)
        assert entry.prepared.plan.method == method and reason in entry.prepared.plan.reason, entry.prepared.plan
        assert type(entry.prepared.computation) is REGISTRY[method]


def test_the_autocorrelation_method_follows_the_kernel_size():
    """A grouped convolution for the autocorrelation beyond ``LAG_MAP_MAX_ENTRIES`` lags in the
    lag map, which kernel_autocorrelation follows unless told; both methods agree."""
    assert not autocorrelation_by_convolution((7, 7))  # 49^2 * 169 lags: about 406,000
    assert autocorrelation_by_convolution((11, 11))  # 121^2 * 441: about 6.5 million
    w = torch.randn(5, 3, 4, 3, dtype=torch.float64)
    torch.testing.assert_close(kernel_autocorrelation(w, by_convolution=True),
                               kernel_autocorrelation(w, by_convolution=False))
    torch.testing.assert_close(kernel_autocorrelation(w), kernel_autocorrelation(w, by_convolution=False))


def test_computation_forces_a_way_and_restores_the_policy():
    """Forcing the frequency domain reaches CUDA tensors too (``meta`` is neither a CPU nor
    CUDA and stands in for any other device); each block restores the policy before it, also
    when nested and after an exception."""
    def frequency_domain_used(device="cpu", stride=2):
        x, w = torch.empty(2, 4, 32, 32, device=device), torch.empty(4, 4, 3, 3, device=device)
        return chosen_computation(x, w, stride, 1) == "frequency_domain"

    with computation("frequency_domain") as policy:
        assert policy is current_policy() and "cuda" in policy.frequency_domain_devices
        assert frequency_domain_used(stride=1) and not frequency_domain_used("meta")
        with computation("spatial"):
            assert not frequency_domain_used()
        assert frequency_domain_used(stride=1)
    assert current_policy() == ComputationPolicy()
    with pytest.raises(RuntimeError, match="inside"):
        with computation("spatial"):
            raise RuntimeError("inside")
    assert current_policy() == ComputationPolicy()
    with pytest.raises(ValueError, match="way must be one of"):
        computation("fft")
    with pytest.raises(ValueError, match="policy must be a ComputationPolicy"):
        with use_policy("spatial"):
            pass


def test_a_policy_is_per_thread():
    """A block in one thread does not reach another thread running at the same time."""
    x, w = torch.empty(2, 4, 8, 8), torch.empty(4, 4, 3, 3)
    inside, checked = threading.Barrier(2), threading.Barrier(2)
    seen = {}

    def forced():
        with computation("spatial"):
            inside.wait()
            seen["forced"] = chosen_computation(x, w, 1, 1)
            checked.wait()

    def plain():
        inside.wait()  # the other thread is inside its block now
        seen["plain"] = chosen_computation(x, w, 1, 1)
        checked.wait()

    threads = [threading.Thread(target=f) for f in (forced, plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert seen == {"forced": "spatial", "plain": "frequency_domain"}


@pytest.mark.parametrize("field, value", [("chunk_bytes", -1), ("dense_2d_max_pixels", float("nan")),
                                          ("frequency_domain_max_size", "32"), ("frequency_domain_devices", "cpu"),
                                          ("fused_filter_devices", "cuda"), ("fused_float32_precision", "bf16"),
                                          ("float32_convolution", 1)])
def test_policy_fields_are_checked(field, value):
    with pytest.raises(ValueError, match=field):
        ComputationPolicy(**{field: value})
    with pytest.raises(AttributeError):  # frozen: a policy is changed by replace() and use_policy only
        setattr(ComputationPolicy(), field, value)


def test_frequency_domain_chunks_of_kernel_spectra_give_the_same_layer():
    """One chunk of frequencies or many: the same output and gradients (and the chunks
    partition the frequencies, none larger than ``chunk_bytes`` unless a single one is)."""
    torch.manual_seed(12)
    x = torch.randn(2, 6, 9, 9, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 6, 3, 3, dtype=torch.float64, requires_grad=True)
    rho = torch.randn(5, 3, 3, dtype=torch.float64, requires_grad=True)
    frequency_bytes = 2 * 5 * 6 * 8  # one frequency of the kernel spectra
    frequencies = 11 * 6  # L = 11: rfft grid 11 x 6
    results = []
    for chunk_bytes, count in ((ComputationPolicy().chunk_bytes, 1), (4 * frequency_bytes, 17), (1, 66)):
        chunks = _chunks(frequencies, max(1, chunk_bytes // frequency_bytes))
        sizes = [part.stop - part.start for part in chunks]
        assert len(chunks) == count and max(sizes) - min(sizes) <= 1
        assert [part.start for part in chunks[1:]] == [part.stop for part in chunks[:-1]]
        assert chunks[0].start == 0 and chunks[-1].stop == frequencies
        assert max(sizes) * frequency_bytes <= max(chunk_bytes, frequency_bytes)
        with use_policy(replace(current_policy(), chunk_bytes=chunk_bytes)):
            out = conv_norm(x, w, None, 2, 1, affine_weight=rho)
        assert ran_in_the_frequency_domain(out)
        results.append((out, *torch.autograd.grad(out.square().sum(), (x, w, rho))))
    torch.testing.assert_close(results[0][0], conv_norm_reference(x, w, None, 2, 1, affine_weight=rho))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            torch.testing.assert_close(a, b)


def lru_caches_of_the_package() -> set:
    """Every ``functools.lru_cache`` at module level in the package (figures and result views
    included), found by importing each module."""
    found = set()
    for info in pkgutil.walk_packages(convnorm.__path__, "convnorm."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        found |= {value for value in vars(module).values() if isinstance(value, functools._lru_cache_wrapper)}
    return found


def test_every_cache_is_registered_and_cleared():
    """No cache outside the registry; after a layer runs they hold matrices, after
    clear_caches none, and the layer then gives the same numbers again."""
    assert lru_caches_of_the_package() <= set(_caches._REGISTRY)
    x, w = torch.randn(2, 3, 8, 8, dtype=torch.float64), torch.randn(4, 3, 3, 3, dtype=torch.float64)
    before = [conv_norm(x, w, None, s, 1) for s in (1, 2)]
    with computation("spatial"):
        before.append(conv_norm(x, w, None, 2, 1, affine_weight=torch.randn(4, 3, 3, dtype=torch.float64)))
    assert sum(_caches.cache_entries().values()) > 0
    clear_caches()
    assert set(_caches.cache_entries().values()) == {0}
    torch.testing.assert_close(conv_norm(x, w, None, 1, 1), before[0], rtol=0, atol=0)
