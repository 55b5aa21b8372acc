"""Ahead-of-time compilation of every kernel variant for an NVIDIA target, without a GPU.

    TRITON_INTERPRET=0 python -m dyadic24.kernels.aot_check [--arch 90] [--all] [--json FILE]

Triton's front end, its NVIDIA passes and ptxas all run on the CPU, so this catches compile errors that
the interpreter cannot see, and it audits the floating-point instructions of the generated PTX and the
barriers around every call of a noinline function (call_fence_problems). The
variants are those the default plans launch on an H200 (propose.tile_options / merge_options of the
plan as a GPU derives it: the bitonic ordering, the polling merge; pointers and V specialised as a
launch on a vocabulary that is a multiple of 16 specialises them); by default the binary32 tile kernels
of the three default tiles (two parts, three parts, and one part as a plan's choice) and the other
logit formats' two default tiles (the 16-bit tile of 8,192 and of 16,384), and the binary32 merge with
and without trace; --all adds the other formats' merges, the traced tile, and the shapes whose merge
does not poll (more than 64 tiles), has no pool (more than 128) or one tile. The tile kernel's only
floating-point instructions are binary32 and 16-bit comparisons, NaN-propagating maxima (max.NaN of
binary32 values and of 16-bit ones, packed in pairs or not), the widening cvt.f32.f16 / cvt.f32.bf16 of
16-bit logits, the 16-bit tile's narrowing of its bound (a binary16 value) and selects (TILE_ALLOWED:
they round nothing), none in a flush-to-zero form; the merge kernel uses only the kinds listed in
MERGE_ALLOWED, no flush-to-zero form but libdevice's abs.ftz.f32, and a fixed recipe: clause 5 as a
binary64 (or, in the hardware path of clause5_hw_jit, the equivalent narrowed IEEE sub.f32, spec B.6)
subtraction, IEEE binary64 divisions (7.1 and clause5_hw_jit's RN64(1 / tau)), binary64 exps of 14 fma +
1 mul each (libdevice's in the exact fallback, clause5_hw_jit.exp64 in the hardware path, which adds its
clamp max.f64, its integral k's cvt.rzi.s64.f64 and the product d * rtau: one each per copy), one exact
product p * 2^24 per truncating conversion (7.2), and at least 5 binary64 additions (the clause-6.2
tree, a butterfly: each lane adds its node's partner at each of the 5 levels): so no product of the rule
outside the exps was contracted into an fma and no approximate instruction (div.full / div.approx /
rcp.approx / ex2.approx) appears anywhere. The remaining binary32 compares come from libdevice's
binary64 exp, which tests the high word of its argument as a float (harmless for |z| >= 2^-149; the
exhaustive sweep covers it), and from comparisons of z that LLVM narrows to binary32 (exact: z is a
binary32 value).
Must run in a process where the kernel modules are not yet imported in interpreter mode.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

# libdevice's binary64 exp contributes fma/add/mul/selp/setp.f64 and a float test of the argument's
# high word (abs.ftz.f32, setp.*.f32); the rule itself contributes sub.f64 (or the narrowed sub.f32),
# div.rn.f64, add.f64, the exact integer-to-binary64 conversions of ieee_jit.widen32to64, the exact
# cvt.f64.f32 and correctly rounded cvt.rn.f32.f64 of clause5_hw_jit, selects on z and e, the
# truncation cvt.rzi.s32.f64 of clause 7.2, and exp64's clamp max.f64 (max.f32 where LLVM narrows it:
# z is a binary32 value) and exact cvt.rzi.s64.f64 of an integral k.
# (plus every setp comparison of binary32 / binary64 values, which rounds nothing: audit_merge)
MERGE_ALLOWED = {
    "sub.f64", "sub.f32", "div.rn.f64", "add.f64", "add.rn.f64", "fma.rn.f64", "mul.f64", "selp.f64",
    "selp.f32", "cvt.rn.f64.u64", "cvt.rn.f64.s64", "cvt.rn.f64.u32", "cvt.rn.f64.s32", "cvt.f64.f32",
    "cvt.rn.f32.f64", "cvt.rzi.s32.f64", "abs.ftz.f32", "max.f64", "max.f32", "cvt.rzi.s64.f64",
}  # fmt: skip
# The tile kernel compares binary32 logits, takes their NaN-propagating maximum, selects and widens
# binary16 logits (tile_jit._tile_fast, select_jit.widen_i32); the 16-bit tile (tile16_jit) compares
# 16-bit logits and takes their NaN-propagating maxima in their own format, packed in pairs or not,
# widens them (cvt.f32.bf16 / cvt.f32.f16) and narrows its bound, a widened binary16 value, back
# (cvt.rn.f16.f32): all exact, as long as no flush-to-zero form appears (a subnormal would compare
# equal to zero, or be widened to it). (Comparisons, setp.<op>.<type>, are admitted by audit_tile.)
TILE_ALLOWED = {
    "max.NaN.f32", "cvt.f32.f16", "selp.f32", "max.NaN.bf16", "max.NaN.bf16x2", "max.NaN.f16",
    "max.NaN.f16x2", "cvt.f32.bf16", "cvt.rn.f16.f32",
}  # fmt: skip
EXP_FMA = 14  # a binary64 exp (libdevice's, clause5_hw_jit.exp64): 14 fma + 1 mul
APPROX = ("div.full", "div.approx", "rcp.approx", "ex2.approx", "sqrt.approx", "lg2.approx", "tanh.approx")


# Tile variants whose sm_90 SASS must issue every 16-byte logits load of a thread before the first
# use of any of them (tile_jit._tile_bits): without it ptxas issued some of a thread's loads only
# after the first ones' data had arrived, DRAM round trips in a row (DESIGN.md "Tile selection").
LOAD_BATCH_AUDIT = ("tile/src0", "tile/src0/big", "tile/src0/three-part", "tile/src0/one-part", "tile/src1",
                    "tile/src1/big", "tile/src2", "tile/src2/big")  # fmt: skip
SMS = 132  # an H200's SMs: the stagger's slots in the compiled variants


def batched_wide_loads(sass: str) -> int:
    """How many LDG.E.128 the full tile's path issues before the first instruction that reads one of
    their destination registers (the loads a thread has in flight at once at the start). A run of
    loads starts at an LDG.E.128 and ends at the first use of its data; the full tile's loads carry no
    mask, so the runs that start with an unpredicated load are its path's (ptxas places the masked
    path before or after it as it likes); without such a run (a compiler that predicates both paths)
    every run counts. The largest run is the answer."""
    runs: list[tuple[int, bool]] = []  # (loads before the first use, the run's first load unpredicated)
    dests: set[int] = set()
    count = 0
    plain = False
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?);", line)
        if not m:
            continue
        guard, op, operands = m.group(1), m.group(2), m.group(3)
        parts = operands.split(",", 1)
        sources = {int(r) for r in re.findall(r"\bR(\d+)\b", parts[1] if len(parts) > 1 else "")}
        if op.startswith("LDG.E.128"):
            d = re.match(r"\s*R(\d+)", parts[0])
            if d:
                if count == 0:
                    plain = guard is None
                dests.update(range(int(d.group(1)), int(d.group(1)) + 4))
                count += 1
            continue
        if count and dests & sources:
            runs.append((count, plain))
            dests, count = set(), 0
    if count:
        runs.append((count, plain))
    full = [n for n, unmasked in runs if unmasked] or [n for n, _ in runs]
    return max(full, default=0)


_SHARED = re.compile(r"^\s*(?:@!?%p\w+\s+)?(?:ld|st|atom|red|ldmatrix|stmatrix|cp\.async)\.[\w.]*shared\b")
_BARRIER = re.compile(r"^\s*(?:@!?%p\w+\s+)?(?:bar|barrier)\.(?:sync|cta\.sync)\b")
_CALL = re.compile(r"^\s*(?:@!?%p\w+\s+)?call(?:\.uni)?\b")
# a function's first or last line (its closing brace, unlike inner ones, is not indented)
_FUNCTION_EDGE = re.compile(r"^(?:}|(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b)")


def call_fence_problems(name: str, ptx: str) -> list[str]:
    """Calls of a noinline function with no CTA barrier between them and the caller's shared-memory
    accesses before or after (in PTX text order). A call is opaque to Triton's membar pass, and the
    callee's scratch may overlap the caller's: without the barrier the 16-bit tile's fallback raced
    with tile16's reductions (racecheck, H100, 2026-12-06)."""
    problems: list[str] = []
    lines = ptx.splitlines()
    for i, line in enumerate(lines):
        if not _CALL.match(line):
            continue
        for step, end in ((-1, -1), (1, len(lines))):
            j = i + step
            while j != end and not _BARRIER.match(lines[j]) and not _FUNCTION_EDGE.match(lines[j]):
                if _SHARED.match(lines[j]):
                    side = "before" if step < 0 else "after"
                    problems.append(f"{name}: shared memory {side} a call with no barrier between "
                                    f"(PTX line {j + 1}: {lines[j].strip()})")  # fmt: skip
                    break
                j += step
    return problems


def compile_variant(fn: Any, signature: dict[str, str], constexprs: dict[str, Any], options: dict[str, Any],
                    arch: int = 90) -> Any:  # fmt: skip
    """Compile as the JIT specialises a launch with 16-byte aligned tensors on a vocabulary that is a
    multiple of 16: the pointers and the specialised integers (those not in the kernel's
    do_not_specialize, V of the tile kernel) marked 16-divisible, so the layouts and the 16-byte loads
    are the GPU's. ``options``: num_warps, maxnreg, launch_pdl."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    full = {**signature, **{k: "constexpr" for k in constexprs if k not in signature}}
    params = {p.name: p for p in fn.params}
    aligned = [
        i
        for i, n in enumerate(full)
        if full[n].startswith("*") or (full[n] == "i32" and not params[n].do_not_specialize)
    ]
    return triton.compile(
        ASTSource(
            fn=fn,
            signature=full,
            constexprs=constexprs,
            attrs={(i,): [["tt.divisibility", 16]] for i in aligned},
        ),
        target=GPUTarget("cuda", arch, 32),
        options=options,
    )


def cubin_tool(compiled: Any, tool: str, *args: str) -> str | None:
    """The output of one of Triton's NVIDIA binary tools (nvdisasm, cuobjdump) on a compiled kernel's
    cubin; None when the tool is missing or fails."""
    import subprocess
    import tempfile
    from pathlib import Path

    import triton

    path = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / tool
    if not path.is_file():
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(compiled.asm["cubin"])
        fh.flush()
        out = subprocess.run([str(path), *args, fh.name], capture_output=True, text=True, check=False)
    return out.stdout if out.returncode == 0 else None


def float_ops(ptx: str) -> Counter[str]:
    """Floating-point PTX instructions (loads, stores and moves excluded) and their counts, packed pairs
    (.f16x2, .bf16x2) included."""
    ops: Counter[str] = Counter()
    for m in re.finditer(r"^\s*([a-z][a-z0-9]*(?:\.[A-Za-z0-9]+)*)\s", ptx, re.MULTILINE):
        op = m.group(1)
        if re.search(r"\.(f16|bf16|f32|f64)(x2)?\b", op) and not op.startswith(("ld.", "st.", "mov.")):
            ops[op] += 1
    return ops


def audit_tile(name: str, ops: Counter[str]) -> list[str]:
    """Problems with a tile kernel's float instructions: binary32 and 16-bit comparisons (packed or not)
    and TILE_ALLOWED only, none flushing subnormals to zero."""
    compares = {op for op in ops if re.fullmatch(r"setp\.[a-z]+\.(f32|f16|bf16)(x2)?", op)}
    unexpected = sorted(set(ops) - TILE_ALLOWED - compares)
    return [f"{name}: unexpected float instructions in the tile kernel {unexpected}"] if unexpected else []


def audit_merge(name: str, ops: Counter[str], exact_counts: bool) -> list[str]:
    """Problems with a merge kernel's float instructions: only MERGE_ALLOWED ones, no flush-to-zero form
    but libdevice's, and, when ``exact_counts``, the recipe of the module docstring. The optimizer may
    duplicate code (each branch of the pool check, each path of clause 5, layout copies), so the recipe
    is checked per copy: the fma count is a multiple of an exp's 14, every mul.f64 is an exp's, the
    exact p * 2^24 before a truncation or a hardware path's d * rtau (one per exp64 copy, counted by
    its k's conversion), and the subtraction, divisions and tree are present."""
    problems: list[str] = []
    # (a comparison of binary32 or binary64 values rounds nothing; which predicate LLVM picks for
    # "z < -104" or its negation differs between Triton versions: setp.lt / setp.geu / ...)
    compares = {op for op in ops if re.fullmatch(r"setp\.[a-z]+\.f(32|64)", op)}
    unexpected = sorted(set(ops) - MERGE_ALLOWED - compares)
    if unexpected:
        problems.append(f"{name}: unexpected float instructions {unexpected}")
    ftz = sorted(op for op in ops if ".ftz" in op and op != "abs.ftz.f32")
    if ftz:
        problems.append(f"{name}: flush-to-zero instructions {ftz}")
    if exact_counts:
        fma, mul, trunc = ops.get("fma.rn.f64", 0), ops.get("mul.f64", 0), ops.get("cvt.rzi.s32.f64", 0)
        hw = ops.get("cvt.rzi.s64.f64", 0)
        exps = fma // EXP_FMA
        if fma == 0 or fma % EXP_FMA:
            problems.append(f"{name}: {fma} x fma.rn.f64, not whole copies of an exp's {EXP_FMA}")
        clamps = ops.get("max.f64", 0) + ops.get("max.f32", 0)  # (LLVM may narrow exp64's clamp of a
        # widened binary32 z to max.f32: exact)
        if trunc < 1 or hw > exps or mul != exps + trunc + hw or clamps != hw:
            problems.append(f"{name}: {mul} x mul.f64 for {exps} exps ({hw} exp64) and {trunc} truncations")
        if ops.get("sub.f64", 0) + ops.get("sub.f32", 0) < 1:
            problems.append(f"{name}: no clause-5.1 subtraction")
        if ops.get("div.rn.f64", 0) < 2:
            problems.append(f"{name}: {ops.get('div.rn.f64', 0)} x div.rn.f64, expected >= 2 (1 / tau, 7.1)")
        if ops.get("add.f64", 0) < 5:
            problems.append(f"{name}: {ops.get('add.f64', 0)} x add.f64, expected >= 5 (the tree's levels)")
    return problems


def _variants(everything: bool) -> list[tuple[str, str, dict[str, str], dict[str, Any], dict[str, Any]]]:
    """(kernel, name, signature, constexprs, options) of the compiled variants (module docstring)."""
    from dataclasses import replace

    from dyadic24.kernels import propose as kp

    def h200(batch: int, vocab: int, itemsize: int = 4, tile: int | None = None) -> Any:
        """The default plan as an H200 derives it (the CPU compiling here has no GPU)."""
        plan = kp.Plan.for_shape(batch, vocab, tile, itemsize=itemsize)
        return replace(plan, by_count=False, pdl=True, poll=True)

    def split(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        keys = ("num_warps", "maxnreg", "launch_pdl")
        launch: dict[str, Any] = {k: options.pop(k) for k in keys if k in options}
        return options, launch

    ptrs = {0: "*i32", 1: "*i16", 2: "*i16"}
    common = {
        "temp_ptr": "*i32", "seed_ptr": "*i64", "round_ptr": "*i64", "pos_ptr": "*i64",
        "tab_z_ptr": "*i64", "tab_e_ptr": "*i64", "status_ptr": "*i32", "token_ptr": "*i32",
        "ids_ptr": "*i32", "tickets_ptr": "*i32",
    }  # fmt: skip
    out: list[tuple[str, str, dict[str, str], dict[str, Any], dict[str, Any]]] = []
    # (logits format, name suffix, shape, trace). B = 1 at V = 163,840: 20 tiles of 8,192, one SM slot,
    # tagged, the pool's runs; B = 64: staggered, Triton's top-k in the pool; B = 8 at
    # V = 200,000: 200 tiles, staggered, the pool's runs; V = 600,000: 74 tiles, untagged;
    # V = 2,000,000: 245 tiles, no pool; V = 4,096: one tile. "/one-part": a plan's tile of 4,096;
    # "/three-part": B = 8 at V = 163,840, the default's TILE_3 (uncapped); 16-bit "": the default
    # at B = 1, the 16-bit tile of 8,192, "/big": at B = 64, the 16-bit tile of 16,384
    default, big, staggered, three = (1, 163_840), (64, 163_840), (8, 200_000), (8, 163_840)
    tiles = [(0, "", default, False), (0, "/big", big, False), (0, "/stagger", staggered, False),
             (0, "/three-part", three, False), (0, "/one-part", default, False), (1, "", default, False),
             (2, "", default, False), (1, "/big", big, False), (2, "/big", big, False)]  # fmt: skip
    merges = [(0, "", default, trace) for trace in (False, True)]
    if everything:
        tiles += [(0, "/untagged", (1, 600_000), False), (0, "/trace", default, True)]
        merges += [(src, "", default, trace) for src in (1, 2) for trace in (False, True)]
        merges += [
            (0, suffix, shape, trace)
            for trace in (False, True)
            for suffix, shape in (
                ("/big", big),
                ("/untagged", (1, 600_000)),
                ("/no-pool", (1, 2_000_000)),
                ("/one-tile", (1, 4096)),
            )
        ]
    for src, suffix, (batch, vocab), trace in tiles:
        itemsize = 4 if src == 0 else 2
        plan = h200(batch, vocab, itemsize, kp.TILE if suffix == "/one-part" else None)
        stagger = kp.default_stagger(plan, SMS, itemsize)
        sig = {
            "logits_ptr": ptrs[src], "cand_ptr": "*i64", "flags_ptr": "*i32", "scratch_ptr": "*i64",
            "counter_ptr": "*i32", "temp_ptr": "*i32", "V": "i32", "n_tiles": "i32", "n_rows": "i32",
        }  # fmt: skip
        consts, launch = split(
            kp.tile_options(plan, src=src, trace=trace, pdl=True, wait=True, stagger=stagger, slots=SMS)
        )
        out.append(("tile_kernel", f"tile/src{src}{suffix}", sig, consts, launch))
    for src, suffix, (batch, vocab), trace in merges:
        plan = h200(batch, vocab)
        sig = {
            "logits_ptr": ptrs[src], "cand_ptr": "*i64", "flags_ptr": "*i32", "mscratch_ptr": "*i64",
            "counter_ptr": "*i32", **common, "trace_ptr": "*i64" if trace else "*i32",
            "V": "i32", "n_tiles": "i32", "tau_bits": "i32", "tab_n": "i32",
        }  # fmt: skip
        consts, launch = split(kp.merge_options(plan, src=src, trace=trace, tab_iterations=6, pdl=True))
        out.append(
            ("merge_kernel", f"merge/src{src}{suffix}{'/trace' if trace else ''}", sig, consts, launch)
        )
    sweep_sig = {
        "start": "u32", "count": "i32", "tab_z_ptr": "*i64", "tab_e_ptr": "*i64", "tab_n": "i32",
        "r_ptr": "*i32", "code_ptr": "*i8",
    }  # fmt: skip
    out.append(("sweep_kernel", "exp_sweep", sweep_sig, {"TAB_ITERS": 6, "BLOCK": 1024}, {"num_warps": 4}))
    return out


def variant_kernels() -> dict[str, Any]:
    """The kernel functions that _variants names (also benchmarks/sass_census.py's)."""
    _compiling()
    from dyadic24.kernels import exp_sweep_jit, merge_jit, tile_jit

    return {
        "tile_kernel": tile_jit.tile_kernel,
        "merge_kernel": merge_jit.merge_kernel,
        "sweep_kernel": exp_sweep_jit.sweep_kernel,
    }


def check(arch: int = 90, everything: bool = False) -> dict[str, Any]:
    """Compile the variants for sm_<arch>; returns per-variant results and the audit verdict."""
    kernels = variant_kernels()
    from dyadic24.kernels import tile_jit

    def audit(kernel: str, name: str, compiled: Any, consts: dict[str, Any], ops: Counter[str]) -> list[str]:
        if kernel == "sweep_kernel":
            return []  # (its own audit: dyadic24.kernels.exp_sweep)
        problems: list[str] = []
        if name in LOAD_BATCH_AUDIT:
            sass = cubin_tool(compiled, "nvdisasm", "-c")
            per_load = 4 if consts["SRC"] == 0 else 8  # (elements per 16-byte load)
            want = consts["TILE"] // (int(tile_jit.NT.value) * per_load)
            got = None if sass is None else batched_wide_loads(sass)
            batched[name] = {"wide_loads_before_first_use": got, "per_thread": want}
            if got is not None and got < want:
                problems.append(f"{name}: {got} of {want} logits loads issued before the first use (SASS)")
        problems += call_fence_problems(name, compiled.asm["ptx"])
        if kernel == "tile_kernel":
            problems += audit_tile(name, ops)
        if kernel == "merge_kernel":
            problems += audit_merge(name, ops, exact_counts=True)
        return problems

    batched: dict[str, Any] = {}
    report = _compile_all(kernels, _variants(everything), arch, audit)
    for name, loads in batched.items():
        report["variants"][name]["batched_loads"] = loads
    return report


def check_sharded(arch: int = 90) -> dict[str, Any]:
    """The vocabulary-sharded kernels (sharded_jit) compiled for sm_<arch> and audited: the tile and
    reduce kernels hold no float instruction, the merge obeys the merge kernel's rules (audit_merge)."""
    _compiling()
    from dyadic24.kernels import sharded_jit

    kernels = {
        "tile": sharded_jit.shard_tile_kernel,
        "reduce": sharded_jit.shard_reduce_kernel,
        "merge": sharded_jit.shard_merge_kernel,
    }
    ints = ("V_local", "vocab_offset", "n_tiles", "cand_stride", "flag_base", "flag_stride")
    variants: list[tuple[str, str, dict[str, str], dict[str, Any], dict[str, Any]]] = []
    for src, ptr in ((0, "*i32"), (1, "*i16"), (2, "*i16")):
        sig = {"logits_ptr": ptr, "cand_ptr": "*i64", "flags_ptr": "*i64", **dict.fromkeys(ints, "i32")}
        variants.append(("tile", f"tile/src{src}", sig, {"TILE": 4096, "SRC": src}, {}))
    sig = {"cand_ptr": "*i64", "flags_ptr": "*i64", "send_ptr": "*i64", "n_tiles": "i32"}
    variants.append(("reduce", "reduce", sig, {"CHUNK": 1024, "FCHUNK": 64}, {}))
    sig = {
        "gath_ptr": "*i64", "temp_ptr": "*i32", "seed_ptr": "*i64", "round_ptr": "*i64", "pos_ptr": "*i64",
        "tab_z_ptr": "*i64", "tab_e_ptr": "*i64", "status_ptr": "*i32", "token_ptr": "*i32",
        "ids_ptr": "*i32", "tickets_ptr": "*i32", "batch": "i32", "world": "i32", "tau_bits": "i32",
        "tab_n": "i32",
    }  # fmt: skip
    for wblock in (2, 32):
        variants.append(("merge", f"merge/wblock{wblock}", sig, {"WBLOCK": wblock, "TAB_ITERS": 6}, {}))

    def audit(
        kernel: str, name: str, _compiled: Any, _consts: dict[str, Any], ops: Counter[str]
    ) -> list[str]:
        if kernel == "merge":
            return audit_merge(name, ops, exact_counts=True)
        return [f"{name}: floating-point instructions {dict(ops)}"] if ops else []

    return _compile_all(kernels, variants, arch, audit)


def _compiling() -> None:
    """Compile for the GPU, not the interpreter (before the kernel modules are imported)."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise RuntimeError("aot_check needs TRITON_INTERPRET unset or 0")
    os.environ["TRITON_INTERPRET"] = "0"  # keep dyadic24.kernels.backend from choosing the interpreter


def _compile_all(
    kernels: dict[str, Any],
    variants: list[tuple[str, str, dict[str, str], dict[str, Any], dict[str, Any]]],
    arch: int,
    audit: Callable[[str, str, Any, dict[str, Any], Counter[str]], list[str]],
) -> dict[str, Any]:
    """Compile each (kernel, name, signature, constexprs, launch options) variant for sm_<arch>: the
    per-variant results (float instructions, seconds) and the problems that ``audit`` and the search
    for approximate instructions find, every failing variant reported."""
    import triton

    results: dict[str, Any] = {}
    problems: list[str] = []
    for kernel, name, sig, consts, launch in variants:
        began = time.perf_counter()
        try:
            compiled = compile_variant(kernels[kernel], sig, consts, launch, arch)
        except Exception as exc:  # report every failing variant
            results[name] = {"compiled": False, "error": repr(exc)[:4000]}
            problems.append(f"{name}: does not compile")
            continue
        ops = float_ops(compiled.asm["ptx"])
        results[name] = {
            "compiled": True,
            "seconds": round(time.perf_counter() - began, 2),
            "float_ops": dict(ops),
        }
        approx = sorted(op for op in ops if op.startswith(APPROX))
        if approx:
            problems.append(f"{name}: approximate instructions {approx}")
        problems += audit(kernel, name, compiled, consts, ops)
    return {
        "arch": arch,
        "triton": triton.__version__,
        "variants": results,
        "problems": problems,
        "passed": not problems,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--arch", type=int, default=90)
    parser.add_argument(
        "--all",
        action="store_true",
        help="every logits format's merge and big tile, the traced tile, and the shapes whose merge does not "
        "poll, has no pool or one tile",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    report = check(args.arch, args.all)
    text = json.dumps(report, indent=1)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text + "\n")
    print(text if not report["passed"] else json.dumps({k: report[k] for k in ("arch", "triton", "passed")}))
    for problem in report["problems"]:
        print("PROBLEM:", problem, file=sys.stderr)
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
