"""Static SASS census of the proposal kernels: instructions, barriers and registers per kernel and the
instructions by source line, from sm_90 cubins compiled on the CPU (no GPU needed).

    TRITON_INTERPRET=0 python benchmarks/sass_census.py [--lines 30]
    TRITON_INTERPRET=0 python benchmarks/sass_census.py --digest

--digest: the sha256 of every aot_check variant's sm_90 SASS (addresses dropped), one line each and
one over all. Two trees with the same digest under the GPU's triton (nox's kernels-gpu-pair venv)
run the same GPU code, so a GPU report or benchmark of one stands for the other: a change to the
interpreter's paths alone (BY_COUNT) or to comments keeps it.

The variants are aot_check's default ones for B = 1, V = 163,840 (tile/src0, merge/src0: the default
plan as an H200 derives it); V and the pointers are marked 16-divisible as a launch on such a
vocabulary specialises them, so the layouts match the GPU's. Straight-line code dominates both
kernels, so static counts of the common path track the dynamic instructions per warp that Nsight
Compute reports (DESIGN.md "Measurement method"); fallback paths are included, so totals overstate the
common path.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import re
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ncu_source import line_table

from dyadic24.kernels import aot_check


def census(kernel: str, name: str, lines: int) -> None:
    for kname, vname, sig, consts, options in aot_check._variants(False):
        if (kname, vname) != (kernel, name):
            continue
        compiled = aot_check.compile_variant(aot_check.variant_kernels()[kernel], sig, consts, options)
        sass = aot_check.cubin_tool(compiled, "nvdisasm", "-g", "-c") or ""
        usage = aot_check.cubin_tool(compiled, "cuobjdump", "-res-usage") or ""
        table = line_table(sass)  # (the instructions' source lines, as ncu_source attributes them)
        per_line = collections.Counter(table.values())
        total = len(table)
        barriers = sum("BAR.SYNC" in line for line in sass.splitlines())
        regs = re.search(r"REG:(\d+)", usage)
        n_regs = regs.group(1) if regs else "?"
        print(f"{name}: {total} SASS instructions, {barriers} barriers, {n_regs} registers")
        for where, count in per_line.most_common(lines):
            print(f"  {count:6d}  {where}")


def sass_digest() -> str:
    """Print each variant's SASS sha256 and return the first 12 hex digits of the sha256 over all."""
    import triton

    kernels = aot_check.variant_kernels()
    total = hashlib.sha256()
    variants = aot_check._variants(True)
    for kernel, name, sig, consts, options in variants:
        compiled = aot_check.compile_variant(kernels[kernel], sig, consts, dict(options))
        sass = aot_check.cubin_tool(compiled, "nvdisasm", "-c")
        if sass is None:
            raise SystemExit("sass_census.py: --digest needs triton's nvdisasm (a CUDA triton install)")
        code = re.sub(r"/\*[0-9a-f]{4,}\*/", "", sass).encode()  # (instruction addresses: the encodings stay)
        total.update(name.encode() + b"\0" + code)
        print(f"{name}: {hashlib.sha256(code).hexdigest()[:12]}", flush=True)
    digest = total.hexdigest()[:12]
    print(f"sass digest {digest} ({len(variants)} variants, sm_90, triton {triton.__version__})")
    return digest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=30, help="source lines to list per kernel")
    ap.add_argument("--digest", action="store_true", help="the SASS digest of every variant instead")
    args = ap.parse_args()
    if args.digest:
        sass_digest()
        return 0
    for kernel, name in (("tile_kernel", "tile/src0"), ("merge_kernel", "merge/src0")):
        census(kernel, name, args.lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
