"""The kernels compile for the H200 (sm_90) and their PTX uses only the intended float instructions.

Runs dyadic24.kernels.aot_check in a child process (the kernel modules must be imported in compiled
mode, while this test session runs them under the interpreter). Needs no GPU: Triton's passes and
ptxas run on the CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
triton = pytest.importorskip("triton")

REPO = Path(__file__).resolve().parent.parent
DEEP = os.environ.get("DYADIC24_DEEP", "") not in ("", "0")


def _has_nvidia_backend() -> bool:
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    return ptxas.is_file()


@pytest.mark.skipif(not _has_nvidia_backend(), reason="triton without the NVIDIA backend / ptxas")
def test_kernels_compile_for_sm90_with_exact_float_instructions(tmp_path: Path) -> None:
    """clauses 5.1, 5.2, 6.2, 7.1 in PTX: 1 sub.f64, 2 div.rn.f64, the tree's add.f64, nothing approximate."""
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    report = tmp_path / "aot.json"
    cmd = [sys.executable, "-m", "dyadic24.kernels.aot_check", "--json", str(report)] + (
        ["--all"] if DEEP else []
    )
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert report.is_file(), proc.stderr[-4000:]
    result = json.loads(report.read_text())
    assert result["passed"], result["problems"]
    assert all(v["compiled"] for v in result["variants"].values())
    # the tile's logits loads all in flight at once (tile_jit._tile_bits, tile16_jit.tile16), where
    # nvdisasm exists (16 in the two parts of a binary32 tile of 8192, 24 in the three parts of TILE_3,
    # tile/src0/three-part, 8 per thread in a plan's tile of 4096, tile/src0/one-part; 16-bit logits: 8
    # in the 16-bit tile of 8192, 16 in its tile of 16384, /big)
    audits = {n: v["batched_loads"] for n, v in result["variants"].items() if "batched_loads" in v}
    assert sorted(audits) == ["tile/src0", "tile/src0/big", "tile/src0/one-part", "tile/src0/three-part",
                              "tile/src1", "tile/src1/big", "tile/src2", "tile/src2/big"]  # fmt: skip
    merges = [n for n in result["variants"] if n.startswith("merge/")]
    assert {"merge/src0", "merge/src0/trace"} <= set(merges) and len(merges) == (14 if DEEP else 2)
    per_thread = {"tile/src0/one-part": 8, "tile/src0/three-part": 24, "tile/src1": 8, "tile/src2": 8}
    for name, audit in audits.items():
        assert audit["per_thread"] == per_thread.get(name, 16)
        if audit["wide_loads_before_first_use"] is not None:
            assert audit["wide_loads_before_first_use"] >= audit["per_thread"]


def test_load_batching_audit_counts_loads_before_the_first_use() -> None:
    """The SASS parser of aot_check's load audit: loads after the first use of an earlier one's data
    do not count (the serialised pattern ptxas produced for 4-warp tiles before _tile_bits), and the
    full tile's unmasked loads count, wherever ptxas places the masked path's."""
    from dyadic24.kernels.aot_check import batched_wide_loads

    def ldg(dst: int, pred: str = "") -> str:
        return f"        /*0000*/              {pred}LDG.E.128 R{dst}, desc[UR14][R30.64] ;"

    mov = "        /*0000*/                   IMAD.MOV.U32 R40, RZ, RZ, -0x800000 ;"
    use = "        /*0000*/                   SHF.R.S32.HI R4, RZ, 0x1f, R53 ;"
    serial = [ldg(52), ldg(56), mov, use, ldg(40), ldg(44)]
    assert batched_wide_loads("\n".join(serial)) == 2
    batched = [ldg(52), ldg(56), mov, ldg(40), ldg(44), use]
    assert batched_wide_loads("\n".join(batched)) == 4
    # the masked path first: its loads do not count, whether fewer or more than the full path's
    masked = [ldg(52, "@!P3 "), use]
    assert batched_wide_loads("\n".join([*masked, *batched])) == 4
    masked = [ldg(52, "@!P3 "), ldg(56, "@!P2 "), ldg(60, "@!P1 "), use]
    assert batched_wide_loads("\n".join([*masked, ldg(52), use, ldg(56), use])) == 1
    # only predicated loads (both paths predicated): every run counts
    assert batched_wide_loads("\n".join([ldg(52, "@!P3 "), mov, ldg(56, "@!P2 "), use])) == 2
    # a read of the address register of a load is not a use of loaded data
    addr = "        /*0000*/                   IADD3 R30, R30, 0x10, RZ ;"
    assert batched_wide_loads("\n".join([ldg(52), addr, ldg(56)])) == 2


def test_tile_float_audit_admits_exact_comparisons_only() -> None:
    """The tile kernel's PTX may compare binary32 values, take max.NaN.f32, select and widen binary16
    logits (tile_jit._tile_fast, select_jit.widen_i32), and compare and take NaN-propagating maxima of
    16-bit values, packed in pairs or not (tile16_jit); a flush-to-zero form (a subnormal logit would
    tie with zero) or any arithmetic is a problem."""
    from dyadic24.kernels.aot_check import audit_tile, float_ops

    ptx = "\tmax.NaN.f32 \t%f3, %f1, %f2;\n\tsetp.lt.f32 \t%p1, %f3, %f4;\n\tsetp.nan.f32 \t%p2, %f3, %f3;\n"
    ptx += "\tcvt.f32.f16 \t%f5, %rs1;\n\tselp.f32 \t%f6, %f5, %f3, %p1;\n"
    ops = float_ops(ptx)
    assert ops == {"max.NaN.f32": 1, "setp.lt.f32": 1, "setp.nan.f32": 1, "cvt.f32.f16": 1, "selp.f32": 1}
    assert audit_tile("t", ops) == []
    packed = "\tmax.NaN.bf16x2 \t%r3, %r1, %r2;\n\tsetp.gt.bf16x2 \t%p1|%p2, %r3, %r4;\n"
    packed += "\tsetp.eq.f16 \t%p3, %rs1, %rs2;\n\tmax.NaN.f16x2 \t%r5, %r1, %r2;\n"
    packed += "\tcvt.f32.bf16 \t%f1, %rs3;\n\tcvt.rn.f16.f32 \t%rs4, %f1;\n"
    ops = float_ops(packed)
    assert ops == {"max.NaN.bf16x2": 1, "setp.gt.bf16x2": 1, "setp.eq.f16": 1, "max.NaN.f16x2": 1,
                   "cvt.f32.bf16": 1, "cvt.rn.f16.f32": 1}  # fmt: skip
    assert audit_tile("t", ops) == []
    bads = ("max.ftz.NaN.f32", "setp.lt.ftz.f32", "cvt.ftz.f32.f16", "max.f32", "add.f32", "setp.lt.f64",
            "max.ftz.NaN.f16x2", "setp.gt.ftz.f16x2", "max.bf16x2", "add.rn.bf16x2", "fma.rn.f16x2",
            "cvt.rn.bf16.f32")  # fmt: skip
    for bad in bads:
        assert audit_tile("t", float_ops(f"\t{bad} \t%f3, %f1, %f2;\n")), bad


# The dependent launches' order in the compiled code (a child process, as above): the tile kernel's
# griddepcontrol.wait (SASS ACQBULK) before any memory access and before its launch_dependents
# (PREEXIT), and no launch_dependents in the merge (DESIGN.md "Two launches and the polling merge").
_DEPENDENCY_SCRIPT = r"""
import json, re
from dyadic24.kernels import aot_check, merge_jit, tile_jit
kernels = {"tile_kernel": tile_jit.tile_kernel, "merge_kernel": merge_jit.merge_kernel}
out = {}
for kernel, name, sig, consts, launch in aot_check._variants(False):
    if name in ("tile/src0", "merge/src0"):
        c = aot_check.compile_variant(kernels[kernel], sig, consts, launch)
        sass = aot_check.cubin_tool(c, "cuobjdump", "-sass")
        op = r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)"
        ops = None if sass is None else re.findall(op, sass)
        ptx = re.findall(r"^\s*(griddepcontrol\.\w+)", c.asm["ptx"], re.MULTILINE)
        out[name] = {"ptx": ptx, "sass": ops, "launch": launch}
print(json.dumps(out))
"""
MEMORY_OPS = ("LDG", "STG", "LD.", "ST.", "ATOMG", "ATOM.", "RED.")  # (global and generic accesses)


def first_wait_problems(name: str, ptx: list[str], sass: list[str] | None) -> list[str]:
    """What breaks "the tile kernel waits first": in the PTX one griddepcontrol.wait, before its
    launch_dependents; in the SASS (when cuobjdump exists) an ACQBULK before every global or local
    memory access and before PREEXIT."""
    problems = []
    if ptx != ["griddepcontrol.wait", "griddepcontrol.launch_dependents"]:
        problems.append(f"{name}: PTX grid dependency instructions {ptx}")
    if sass is not None:
        wait = sass.index("ACQBULK") if "ACQBULK" in sass else len(sass)
        early = [op for op in sass[:wait] if op.startswith(MEMORY_OPS) or op == "PREEXIT"]
        if wait == len(sass) or early:
            problems.append(f"{name}: before the SASS wait {early or 'no ACQBULK'}")
    return problems


@pytest.mark.skipif(not _has_nvidia_backend(), reason="triton without the NVIDIA backend / ptxas")
def test_tile_kernel_waits_for_its_predecessor_before_any_read(tmp_path: Path) -> None:
    """The tile kernel reads nothing before the previous kernel's end (its logits may come from that
    kernel) and lets the merge start only after it; the merge triggers nothing early."""
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", _DEPENDENCY_SCRIPT], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    tile, merge = out["tile/src0"], out["merge/src0"]
    assert tile["launch"].get("launch_pdl") and merge["launch"].get("launch_pdl")
    assert first_wait_problems("tile/src0", tile["ptx"], tile["sass"]) == []
    assert "griddepcontrol.launch_dependents" not in merge["ptx"]
    if merge["sass"] is not None:
        assert "PREEXIT" not in merge["sass"]


def test_first_wait_audit_finds_reads_before_the_wait() -> None:
    """The audit above fails a load, a store or the trigger ahead of the wait, a missing wait and a
    trigger before the wait in the PTX."""
    good = ["LDC", "S2UR", "ACQBULK", "S2UR", "PREEXIT", "LDG.E.STRONG.GPU", "STG.E.64"]
    ptx = ["griddepcontrol.wait", "griddepcontrol.launch_dependents"]
    assert first_wait_problems("t", ptx, good) == []
    assert first_wait_problems("t", ptx, None) == []
    for early in ("LDG.E.STRONG.GPU", "LDG.E.128", "STG.E", "PREEXIT", "ATOMG.E.ADD", "RED.E.ADD"):
        assert first_wait_problems("t", ptx, ["S2UR", early, "ACQBULK"]), early
    assert first_wait_problems("t", ptx, ["S2UR", "LDG.E"])
    assert first_wait_problems("t", ptx[::-1], good)
    assert first_wait_problems("t", ptx[1:], good)


def test_call_fence_audit_wants_a_barrier_between_a_call_and_shared_memory() -> None:
    """aot_check.call_fence_problems: a noinline call with the caller's shared-memory accesses on
    either side and no CTA barrier between them is a problem (the race racecheck found in the 16-bit
    tile's fallback, 8b572d0); barriers on both sides, or no shared access in the caller, pass."""
    from dyadic24.kernels.aot_check import call_fence_problems

    head = [".visible .entry tile_kernel(", ")", "{"]
    tail = ["\tret;", "}", ".func fallback()", "{", "\tld.shared.u32 \t%r9, [%r8];", "\tret;", "}"]
    st, ld = "\tst.shared.v2.b32 \t[%r5], {%r6, %r7};", "\t@%p3 ld.shared.b32 \t%r4, [%r5+8];"
    call = ["\t{ // callseq 0, 0", "\tcall.uni \tfallback, ();", "\t} // callseq 0"]
    bar = "\tbar.sync \t0;"
    assert call_fence_problems("t", "\n".join([*head, st, bar, *call, bar, ld, *tail])) == []
    assert call_fence_problems("t", "\n".join([*head, "\tadd.s32 \t%r1, %r2, 1;", *call, *tail])) == []
    before = call_fence_problems("t", "\n".join([*head, st, *call, bar, ld, *tail]))
    assert len(before) == 1 and "before a call" in before[0] and "st.shared" in before[0]
    after = call_fence_problems("t", "\n".join([*head, st, "\tbarrier.sync \t0;", *call, ld, *tail]))
    assert len(after) == 1 and "after a call" in after[0] and "ld.shared" in after[0]
    assert len(call_fence_problems("t", "\n".join([*head, ld, *call, st, *tail]))) == 2
