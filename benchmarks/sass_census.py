"""Static SASS census of the proposal kernels: instructions, barriers and registers per kernel and the
instructions by source line, from sm_90 cubins compiled on the CPU (no GPU needed).

    TRITON_INTERPRET=0 python benchmarks/sass_census.py [--lines 30]

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
import os
import re
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ncu_source import line_table

from dyadic24.kernels import aot_check, merge_jit, tile_jit

KERNELS = {"tile_kernel": tile_jit.tile_kernel, "merge_kernel": merge_jit.merge_kernel}


def census(kernel: str, name: str, lines: int) -> None:
    for kname, vname, sig, consts, options in aot_check._variants(False):
        if (kname, vname) != (kernel, name):
            continue
        compiled = aot_check.compile_variant(KERNELS[kernel], sig, consts, options)
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=30, help="source lines to list per kernel")
    args = ap.parse_args()
    for kernel, name in (("tile_kernel", "tile/src0"), ("merge_kernel", "merge/src0")):
        census(kernel, name, args.lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
