"""Ahead-of-time compilation of every kernel variant for an NVIDIA target, without a GPU.

    TRITON_INTERPRET=0 python -m dyadic24.kernels.aot_check [--arch 90] [--all] [--json FILE]

Triton's front end, its NVIDIA passes and ptxas all run on the CPU, so this catches compile errors that
the interpreter cannot see, and it audits the floating-point instructions of the generated PTX (by
default the variants the default plans launch and the trace's merge; --all adds the other dtypes'
and top-k methods' variants and the option forms: the fused tile, the split merge, finish_kernel):
the selection kernels (tile_kernel, merge_kernel with SPLIT) have none; the finishing kernels
(merge_kernel, finish_kernel, tile_kernel with FUSED) use only the kinds listed in MERGE_ALLOWED, no
flush-to-zero form but libdevice's abs.ftz.f32, and a fixed recipe: clause 5 as a binary64 (or, in
the hardware path of clause5_hw_jit, the equivalent narrowed IEEE sub.f32, spec B.6) subtraction,
IEEE binary64 divisions (5.2, 7.1) and libdevice exps (14 fma + 1 mul each), one exact product
p * 2^24 per truncating conversion (7.2), and at least 5 binary64 additions (the clause-6.2 tree,
a butterfly: each lane adds its node's partner at each of the 5 levels):
so no product of the rule was contracted into an fma and no approximate instruction (div.full /
div.approx / rcp.approx / ex2.approx) appears anywhere. The remaining binary32 compares come from
libdevice's binary64 exp, which tests the high word of its argument as a float (harmless for |z| >=
2^-149; the exhaustive sweep covers it), and from comparisons of z that LLVM narrows to binary32
(exact: z is a binary32 value).
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
from collections.abc import Sequence
from typing import Any

# libdevice's binary64 exp contributes fma/add/mul/selp/setp.f64 and a float test of the argument's
# high word (abs.ftz.f32, setp.*.f32); the rule itself contributes sub.f64 (or the narrowed sub.f32),
# div.rn.f64, add.f64, the exact integer-to-binary64 conversions of ieee_jit.widen32to64, the exact
# cvt.f64.f32 and correctly rounded cvt.rn.f32.f64 of clause5_hw_jit, selects on z and e, and the
# truncation cvt.rzi.s32.f64 of clause 7.2.
# (plus every setp comparison of binary32 / binary64 values, which rounds nothing: audit_merge)
MERGE_ALLOWED = {
    "sub.f64", "sub.f32", "div.rn.f64", "add.f64", "add.rn.f64", "fma.rn.f64", "mul.f64", "selp.f64",
    "selp.f32", "cvt.rn.f64.u64", "cvt.rn.f64.s64", "cvt.rn.f64.u32", "cvt.rn.f64.s32", "cvt.f64.f32",
    "cvt.rn.f32.f64", "cvt.rzi.s32.f64", "abs.ftz.f32",
}  # fmt: skip
EXP_FMA = 14  # libdevice's binary64 exp: 14 fma + 1 mul
APPROX = ("div.full", "div.approx", "rcp.approx", "ex2.approx", "sqrt.approx", "lg2.approx", "tanh.approx")


# Tile variants whose sm_90 SASS must issue every 16-byte logits load of a thread before the first
# use of any of them (propose_jit._tile_bits; compiled with the JIT's alignment facts, so that the
# loads are 16-byte ones). Session 6 found ptxas issuing six of a 4-warp program's eight and the
# other two after the first data had arrived: three DRAM round trips per tile instead of one.
LOAD_BATCH_AUDIT = ("tile/src0/fused", "tile/src0", "tile/src0/big")


def batched_wide_loads(sass: str) -> int:
    """How many LDG.E.128 the SASS issues before the first instruction that reads one of their
    destination registers (the loads a thread has in flight at once at the start)."""
    dests: set[int] = set()
    count = 0
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?);", line)
        if not m:
            continue
        op, operands = m.group(1), m.group(2)
        parts = operands.split(",", 1)
        sources = {int(r) for r in re.findall(r"\bR(\d+)\b", parts[1] if len(parts) > 1 else "")}
        if op.startswith("LDG.E.128"):
            d = re.match(r"\s*R(\d+)", parts[0])
            if d:
                dests.update(range(int(d.group(1)), int(d.group(1)) + 4))
                count += 1
            continue
        if dests & sources:
            break
    return count


def compile_aligned(fn: Any, signature: dict[str, str], constexprs: dict[str, Any], num_warps: int,
                    arch: int = 90) -> Any:  # fmt: skip
    """Compile as the JIT specialises a launch on a vocabulary that is a multiple of 16: the pointers
    and V marked 16-divisible, so the layouts and the 16-byte loads are the GPU's."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    full = {**signature, **{k: "constexpr" for k in constexprs if k not in signature}}
    aligned = [i for i, n in enumerate(full) if full[n].startswith("*") or n == "V"]
    return triton.compile(
        ASTSource(
            fn=fn,
            signature=full,
            constexprs=constexprs,
            attrs={(i,): [["tt.divisibility", 16]] for i in aligned},
        ),
        target=GPUTarget("cuda", arch, 32),
        options={"num_warps": num_warps},
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
    """Floating-point PTX instructions (loads, stores and moves excluded) and their counts."""
    ops: Counter[str] = Counter()
    for m in re.finditer(r"^\s*([a-z][a-z0-9]*(?:\.[a-z0-9]+)*)\s", ptx, re.MULTILINE):
        op = m.group(1)
        if re.search(r"\.(f16|bf16|f32|f64)\b", op) and not op.startswith(("ld.", "st.", "mov.")):
            ops[op] += 1
    return ops


def audit_merge(name: str, ops: Counter[str], exact_counts: bool) -> list[str]:
    """Problems with a merge kernel's float instructions: only MERGE_ALLOWED ones, no flush-to-zero form
    but libdevice's, and, when ``exact_counts``, the recipe of the module docstring. The optimizer may
    duplicate code (each branch of the pool check, each path of clause 5, layout copies), so the recipe
    is checked per copy: the fma count is a multiple of libdevice exp's 14, every mul.f64 is an exp's
    or the exact p * 2^24 before a truncation, and the subtraction, divisions and tree are present."""
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
        exps = fma // EXP_FMA
        if fma == 0 or fma % EXP_FMA:
            problems.append(f"{name}: {fma} x fma.rn.f64, not whole copies of libdevice exp's {EXP_FMA}")
        if trunc < 1 or mul != exps + trunc:
            problems.append(f"{name}: {mul} x mul.f64 for {exps} exp copies and {trunc} truncations")
        if ops.get("sub.f64", 0) + ops.get("sub.f32", 0) < 1:
            problems.append(f"{name}: no clause-5.1 subtraction")
        if ops.get("div.rn.f64", 0) < 2:
            problems.append(f"{name}: {ops.get('div.rn.f64', 0)} x div.rn.f64, expected >= 2 (5.2, 7.1)")
        if ops.get("add.f64", 0) < 5:
            problems.append(f"{name}: {ops.get('add.f64', 0)} x add.f64, expected >= 5 (the tree's levels)")
    return problems


def _variants(everything: bool) -> list[tuple[str, str, dict[str, str], dict[str, Any]]]:
    from dyadic24.kernels import propose as kp

    out: list[tuple[str, str, dict[str, str], dict[str, Any]]] = []
    srcs = ((0, "*i32"), (1, "*i16"), (2, "*i16"))
    common = {
        "temp_ptr": "*i32", "seed_ptr": "*i64", "round_ptr": "*i64", "pos_ptr": "*i64",
        "tab_z_ptr": "*i64", "tab_e_ptr": "*i64", "status_ptr": "*i32", "token_ptr": "*i32",
        "ids_ptr": "*i32", "tickets_ptr": "*i32",
    }  # fmt: skip
    # the merge's pool as the default plan makes it for the benchmark's vocabulary (40 tiles)
    bench_plan = kp.Plan.for_shape(1, 163_840)
    pool_t, pool_k = bench_plan.pool_shape
    pool = {"MPOOL_T": pool_t, "MPOOL_K": pool_k, "MPOOL_PAIRS": bench_plan.pool_folds}
    no_pool = {"MPOOL_T": 0, "MPOOL_K": 0, "MPOOL_PAIRS": 0}
    sizes = {"POOL": kp.POOL, "MCAP": kp.MCAP, "CHUNK": kp.CHUNK, "FCHUNK": kp.FLAG_CHUNK, "TAB_ITERS": 6}
    # (threshold, tl.topk) methods: the default, and the extraction paths
    methods = ((True, False), (False, False), (False, True)) if everything else ((True, False),)
    for src, ptr in srcs:
        # the fused form (an option since session 9) with --all only: its tile variants are the slowest
        # to compile (34 s of the default's 124 s on CI's 2 cores)
        for fused in (True, False) if everything else (False,):
            for trace in (False, True) if (fused and everything) else (False,):
                for threshold, topk in methods:
                    sig = {
                        "logits_ptr": ptr, "cand_ptr": "*i64", "flags_ptr": "*i32", "scratch_ptr": "*i64",
                        "mscratch_ptr": "*i64", "counter_ptr": "*i32", **common,
                        "trace_ptr": "*i64" if trace else "*i32",
                        "V": "i32", "n_tiles": "i32", "tau_bits": "i32", "tab_n": "i32",
                    }  # fmt: skip
                    consts = {
                        "TILE": kp.TILE, "GROUPS": kp.GROUPS, "CAP": kp.CAP, **sizes, "TRACE": trace,
                        "SRC": src, "USE_TL_TOPK": topk, "THRESHOLD": threshold, "FUSED": fused,
                        "GREEDY_FAST": kp.GREEDY_FAST,
                        "EARLY_DRAW": kp.FUSED_EARLY_DRAW if fused else kp.EARLY_DRAW,
                        "FAST": kp.FAST_TILE and threshold, "NT": 32 * kp.NUM_WARPS, "FCAP": kp.FCAP,
                        "BY_COUNT": False, "WARP_BOUND": kp.WARP_BOUND, **pool,
                        "RETRY": kp.BOUND_RETRY and fused,
                        "TAGGED": (fused or kp.MERGE_POLL) and threshold and kp.TAGGED_ARRIVAL,
                        "STALE_FIRST": 0, "PDL": not fused and kp.PDL_MERGE,
                        "STAGGER": 0, "SLOTS": 1, "WAVE": kp.STAGGER_WAVE,
                    }  # fmt: skip
                    name = (
                        f"tile/src{src}{'/fused' if fused else ''}{'/trace' if trace else ''}"
                        f"{'' if threshold else '/extract'}{'/tl.topk' if topk else ''}"
                    )
                    out.append(("tile_kernel", name, sig, consts))
                    if not fused and threshold and not trace and src == 0:  # the default's stagger
                        sms = 132  # (an H200's)
                        stagger = {**consts, "STAGGER": kp.stagger_ns(sms, kp.TILE, 4), "SLOTS": sms}
                        out.append(("tile_kernel", f"{name}/stagger", sig, stagger))
                        # the default from BIG_TILE_PROGRAMS programs on: two halves, its own stagger
                        big_plan = kp.Plan.for_shape(64, 163_840)
                        big = {**consts, "TILE": big_plan.tile, "SLOTS": sms, "WAVE": big_plan.stagger_wave,
                               "STAGGER": kp.stagger_ns(sms, big_plan.tile, 4)}  # fmt: skip
                        out.append(("tile_kernel", f"{name}/big", sig, big))
                    if fused and threshold and not trace and everything:  # the 8-warp plan option
                        wide = {**consts, "NT": 32 * kp.WIDE_WARPS}
                        out.append(("tile_kernel", f"{name}/w{kp.WIDE_WARPS}", sig, wide))
    for src, ptr in srcs if everything else srcs[:1]:
        for trace in (False, True):
            for threshold, topk in methods:
                sig = {
                    "logits_ptr": ptr, "cand_ptr": "*i64", "flags_ptr": "*i32", "mscratch_ptr": "*i64",
                    "best_ptr": "*i64", "counter_ptr": "*i32", **common,
                    "trace_ptr": "*i64" if trace else "*i32",
                    "V": "i32", "n_tiles": "i32", "tau_bits": "i32", "tab_n": "i32",
                }  # fmt: skip
                for split in (False, True) if (threshold and everything) else (False,):  # (an option)
                    poll = kp.MERGE_POLL and kp.TAGGED_ARRIVAL and threshold and not split
                    consts = {
                        **sizes, "TRACE": trace, "SRC": src, "USE_TL_TOPK": topk, "THRESHOLD": threshold,
                        "GREEDY_FAST": kp.GREEDY_FAST, "SPLIT": split,
                        "BY_COUNT": False, **(pool if threshold else no_pool), "TILE": kp.TILE,
                        # the default two-launch merge polls tagged words (as the fused form, whose
                        # early draw it takes) and is a programmatic dependent launch
                        "EARLY_DRAW": kp.FUSED_EARLY_DRAW if poll else kp.EARLY_DRAW,
                        "PDL": kp.PDL_MERGE and not split, "TAGGED": poll, "STALE_FIRST": 0,
                    }  # fmt: skip
                    name = (
                        f"merge/src{src}{'/trace' if trace else ''}{'/split' if split else ''}"
                        f"{'' if threshold else '/extract'}{'/tl.topk' if topk else ''}"
                    )
                    out.append(("merge_kernel", name, sig, consts))
        for trace in (False, True) if everything else ():  # (split_finish's kernel: an option)
            sig = {
                "logits_ptr": ptr, "best_ptr": "*i64", **common, "trace_ptr": "*i64" if trace else "*i32",
                "V": "i32", "tau_bits": "i32", "tab_n": "i32", "unit": "i32",
            }  # fmt: skip
            consts = {"TAB_ITERS": 6, "TRACE": trace, "SRC": src, "EARLY_DRAW": kp.EARLY_DRAW}
            out.append(("finish_kernel", f"finish/src{src}{'/trace' if trace else ''}", sig, consts))
    sweep_sig = {
        "start": "u32", "count": "i32", "tab_z_ptr": "*i64", "tab_e_ptr": "*i64", "tab_n": "i32",
        "r_ptr": "*i32", "code_ptr": "*i8",
    }  # fmt: skip
    out.append(("sweep_kernel", "exp_sweep", sweep_sig, {"TAB_ITERS": 6, "BLOCK": 1024}))
    return out


def check(arch: int = 90, everything: bool = False) -> dict[str, Any]:
    """Compile the variants for sm_<arch>; returns per-variant results and the audit verdict."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise RuntimeError("aot_check needs TRITON_INTERPRET unset or 0")
    os.environ["TRITON_INTERPRET"] = "0"  # keep dyadic24.kernels.backend from choosing the interpreter
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from dyadic24.kernels import exp_sweep_jit, propose_jit
    from dyadic24.kernels import propose as kp

    kernels = {
        "tile_kernel": propose_jit.tile_kernel,
        "merge_kernel": propose_jit.merge_kernel,
        "finish_kernel": propose_jit.finish_kernel,
        "sweep_kernel": exp_sweep_jit.sweep_kernel,
    }
    target = GPUTarget("cuda", arch, 32)
    results: dict[str, Any] = {}
    problems: list[str] = []
    for kernel, name, sig, consts in _variants(everything):
        began = time.perf_counter()
        full_sig = {**sig, **{k: "constexpr" for k in consts}}
        try:
            # (a tile program's warps: its column groups NT, 32 per warp)
            warps = consts.get("NT", 32 * kp.NUM_WARPS) // 32
            if kernel == "finish_kernel":
                warps = kp.FINISH_WARPS
            elif kernel == "merge_kernel":
                warps = kp.MERGE_WARPS
            compiled = triton.compile(
                ASTSource(fn=kernels[kernel], signature=full_sig, constexprs=consts),
                target=target,
                options={"num_warps": warps},
            )
        except Exception as exc:  # report every failing variant
            results[name] = {"compiled": False, "error": repr(exc)[:4000]}
            problems.append(f"{name}: does not compile")
            continue
        ptx = compiled.asm["ptx"]
        ops = float_ops(ptx)
        approx = sorted(op for op in ops if op.startswith(APPROX))
        results[name] = {
            "compiled": True,
            "seconds": round(time.perf_counter() - began, 2),
            "float_ops": dict(ops),
        }
        if approx:
            problems.append(f"{name}: approximate instructions {approx}")
        merges = (
            (kernel == "merge_kernel" and "/split" not in name)
            or kernel == "finish_kernel"
            or "/fused" in name
        )
        if kernel == "sweep_kernel":
            continue  # (its own audit: dyadic24.kernels.exp_sweep)
        if name in LOAD_BATCH_AUDIT:
            sass = cubin_tool(compile_aligned(kernels[kernel], sig, consts, warps, arch), "nvdisasm", "-c")
            want = consts["TILE"] // (consts["NT"] * 4)  # binary32: 4 per 16-byte load
            got = None if sass is None else batched_wide_loads(sass)
            results[name]["batched_loads"] = {"wide_loads_before_first_use": got, "per_thread": want}
            if got is not None and got < want:
                problems.append(f"{name}: {got} of {want} logits loads issued before the first use (SASS)")
        if not merges and ops:
            problems.append(f"{name}: floating-point instructions in a selection kernel {dict(ops)}")
        if merges:
            # the plain variant holds each lane once: exact counts (layout changes elsewhere replicate
            # the same IEEE operations on copies, which changes counts but not results)
            problems += audit_merge(name, ops, exact_counts="tl.topk" not in name)
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
        help="every dtype x trace x top-k variant, and the fused and split forms",
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
