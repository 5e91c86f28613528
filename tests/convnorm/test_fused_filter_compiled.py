"""The fused kernels compiled for real GPUs without one, and the policy that takes them only
where they fit.

Triton's interpreter runs the kernels as Python, so it cannot see what only the compiler
decides: the shared memory and registers a program needs, and whether the products become
tensor-core instructions. Triton's bundled compiler (and its ``cuobjdump``) compiles for any
NVIDIA target on a CPU: here both kernels, every part on, for a T4 (sm_75, the free Colab GPU),
an A100 (sm_80) and an H100 (sm_90), in a child process (the tests beside these set
``TRITON_INTERPRET=1`` for their process, which a compilation must not see). What they need is
``convnorm._fused_filter.SHARED_MEMORY``, which :func:`convnorm._fused_filter.fits` compares
with a GPU's; a GPU that does not fit takes the policy's next filter.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from convnorm import _fused_filter as fused
from convnorm._geometry import layer_geometry
from convnorm.functional import ComputationPolicy

ROOT = Path(__file__).resolve().parents[2]

COMPILE = """
import json, os, re, subprocess, sys, tempfile
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from convnorm import _fused_filter_kernels as kernels
from convnorm._fused_filter import _num_warps
cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
rows = []
for arch, block, kind, names in json.loads(sys.argv[1]):
    dtype, precision = ("bf16", "tf32") if kind == "half" else ("fp32", kind)
    blocks = dict(L0P=block, L1P=block, KP=max(16, block // 2), O0P=block, O1P=block)
    pointers = {name: "*" + dtype for name in ("y_ptr", "z_ptr", "g_ptr", "grad_y_ptr")}
    for kernel, flags in ((kernels.forward_kernel, dict(HAS_BIAS=True)),
                          (kernels.backward_kernel, dict(NEED_GRAD_Y=True, NEED_PRODUCTS=True))):
        if kernel.__name__ not in names:
            continue
        constants = dict(blocks, PRECISION=precision, **flags)
        signature = {name: "constexpr" if name in constants else
                     pointers.get(name, "*fp32" if name.endswith("_ptr") else "i32") for name in kernel.arg_names}
        compiled = triton.compile(ASTSource(kernel, signature, constexprs=constants),
                                  target=GPUTarget("cuda", arch, 32), options=dict(num_warps=_num_warps(block, block)))
        with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
            cubin.write(compiled.asm["cubin"])
            cubin.flush()
            usage = subprocess.run([cuobjdump, "--dump-resource-usage", cubin.name], capture_output=True,
                                   text=True, check=True).stdout
        ptx = compiled.asm["ptx"]
        rows.append(dict(arch=arch, block=block, kind=kind, kernel=kernel.__name__, shared=compiled.metadata.shared,
                         registers=int(re.search(r"REG:(\\d+)", usage).group(1)),
                         stack=int(re.search(r"STACK:(\\d+)", usage).group(1)),
                         tensor_cores=bool(re.search(r"\\b(w?gmma|mma)\\.", ptx))))
print(json.dumps(rows))
"""

KINDS = ("half", "tf32", "ieee")
BOTH = ("forward_kernel", "backward_kernel")


def compiled(jobs: list) -> list[dict]:
    """What each kernel needs, compiled in a child process for ``jobs``: ``(arch, block, kind,
    kernel names)`` each."""
    pytest.importorskip("triton.backends.nvidia", reason="triton without its CUDA backend")
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env["TRITON_DEFAULT_FP_FUSION"] = "1"  # the default, said so (triton 3.9 warns when it is unset)
    done = subprocess.run([sys.executable, "-c", COMPILE, json.dumps(jobs)], capture_output=True, text=True, env=env,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.compile
@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU the other tests compile the kernels for it")
def test_the_shared_memory_table_is_what_the_kernels_compile_to():
    """For an A100 and an H100, at every block and for every kind of data and products: the
    table the policy reads is the largest need of the two kernels over both GPUs (measured, not
    guessed); every kernel uses at most 255 registers a thread, and tensor cores unless its
    products are ``"ieee"`` (float32 FMA), and blocks of
    32 or less spill nothing to the stack (blocks of 64 do: see ``convnorm._fused_filter``)."""
    rows = compiled([(arch, block, kind, BOTH) for arch in (80, 90) for block in (16, 32, 64) for kind in KINDS])
    for (block, kind), need in fused.SHARED_MEMORY.items():
        assert need == max(r["shared"] for r in rows if (r["block"], r["kind"]) == (block, kind)), (block, kind)
    assert all(r["tensor_cores"] == (r["kind"] != "ieee") and r["registers"] <= 255 for r in rows)
    assert all(r["stack"] == 0 for r in rows if r["block"] <= 32), [r for r in rows if r["stack"]]
    hopper = 227 * 1024
    assert fused.SHARED_MEMORY[64, "half"] <= hopper and fused.SHARED_MEMORY[64, "ieee"] <= hopper
    assert fused.SHARED_MEMORY[64, "tf32"] > hopper  # float32 "tf32" products at blocks of 64: no GPU takes them


@pytest.mark.compile
@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU the other tests compile the kernels for it")
def test_on_a_t4_the_kernels_need_more_than_it_has_and_get_no_tensor_cores():
    """Compiled for a T4 (sm_75, Turing): the forward kernel at blocks of 64 needs more shared
    memory than Turing's 64 KiB a block and gets no tensor-core instruction, which is why the
    kernels need a capability of at least ``MIN_CAPABILITY``."""
    (row,) = compiled([(75, 64, "half", ["forward_kernel"])])
    assert row["shared"] > 64 * 1024 and not row["tensor_cores"]
    assert fused.MIN_CAPABILITY > (7, 5)


GPUS = {"T4": ((7, 5), 64 * 1024), "RTX 4090": ((8, 9), 99 * 1024), "A100": ((8, 0), 163 * 1024),
        "H100": ((9, 0), 227 * 1024)}
"""Capability and shared memory a block may opt in to, as ``torch.cuda.get_device_properties`` gives them."""


@pytest.fixture
def gpu(monkeypatch):
    """Pretend to be on the GPU named (Triton present, its capability and shared memory)."""
    def pretend(name: str) -> None:
        monkeypatch.setattr(fused, "available", lambda device: True)
        monkeypatch.setattr(fused, "_device_limits", lambda device: GPUS[name])
    return pretend


SMALL = {(18, "half"), (18, "tf32"), (18, "ieee")}
"""A normalization size of 18 (a 3x3 kernel on 16x16 maps): blocks of 32, which every GPU of
capability 8.0 or more holds."""


@pytest.mark.parametrize("name, fits", [
    ("T4", set()),
    ("RTX 4090", SMALL),
    ("A100", SMALL | {(34, "half"), (62, "half")}),
    ("H100", SMALL | {(34, "half"), (34, "ieee"), (62, "half"), (62, "ieee")}),
])
def test_the_fused_kernels_run_only_where_capability_and_shared_memory_fit(gpu, name, fits):
    """Both sides on each GPU: the sizes and kinds that fit its shared memory, and none on a T4
    (too old a capability) or beyond ``MAX_LENGTH``."""
    gpu(name)
    dtypes = {"half": (torch.bfloat16, "tf32"), "tf32": (torch.float32, "tf32"), "ieee": (torch.float32, "ieee")}
    for length in (18, 34, 62, 66):
        for kind, (dtype, precision) in dtypes.items():
            want = (length, kind) in fits
            assert fused.fits(torch.device("cuda"), (length, length), dtype, precision) == want, (name, length, kind)


@pytest.mark.parametrize("name", list(GPUS))
def test_where_the_kernels_do_not_fit_the_policy_takes_the_next_filter(gpu, monkeypatch, name):
    """A policy that asks for the fused filter gets it for a layer only where :func:`fits`
    holds; elsewhere the layer takes the next filter (FFTs on a GPU), and a network keeps
    channels-last only where every size fits in mixed precision."""
    import convnorm._policy as policy_module

    gpu(name)
    # the plan is made for a tensor on the meta device, standing in for the GPU named
    monkeypatch.setattr(policy_module, "fused_filter_fits",
                        lambda device, *rest: fused.fits(torch.device("cuda"), *rest))
    policy = ComputationPolicy(frequency_domain_devices=()).filtering("fused", "meta")
    for size, dtype, autocast in ((32, torch.float32, None), (32, torch.float32, torch.bfloat16),
                                  (16, torch.float32, None), (60, torch.float32, torch.bfloat16)):
        x = torch.empty(2, 4, size, size, device="meta", dtype=dtype)
        geometry = layer_geometry(x, torch.empty(4, 4, 3, 3, device="meta"), 1, 1, 1, 1, "zeros")
        plan = policy.plan(x, (4, 4, 3, 3), geometry, True, autocast)
        data = autocast or dtype
        want = fused.fits(torch.device("cuda"), geometry.length, data, "tf32" if autocast else "ieee")
        assert plan.filter == ("fused" if want else "fft"), (name, size, autocast)
    assert policy.keeps_channels_last("meta") == (name in ("A100", "H100"))
