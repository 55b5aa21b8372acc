"""Workload for Nsight Compute: a few proposal calls per shape, so that ncu can report each kernel's
duration, instruction count, registers and warp stall reasons (benchmarks/DESIGN.md "Measurement method").

Usage on the GPU:
  ncu --clock-control none --kernel-name regex:"tile_kernel|merge_kernel" --section ... \\
      python benchmarks/profile_ncu.py [--shapes 1:163840:1,1:163840:0,64:163840:1,256:163840:1:bf16]
Each shape is B:V:T[:bf16] (T = 1 sampled rows, 0 greedy rows); every call uses fresh logits, fp32
unless the shape ends in :bf16.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dyadic24.kernels import propose as kp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", default="1:163840:1,1:163840:0,64:163840:1,256:163840:1")
    ap.add_argument("--calls", type=int, default=2)
    args = ap.parse_args()
    kp.prepare("cuda")
    for spec in args.shapes.split(","):
        fields = spec.split(":")
        b, v, t = (int(x) for x in fields[:3])
        dtype = torch.bfloat16 if fields[3:] == ["bf16"] else torch.float32
        gen = torch.Generator(device="cuda").manual_seed(b * 7 + v)
        temp = torch.full((b,), float(t), dtype=torch.float32, device="cuda")
        seed = torch.arange(b, dtype=torch.int64, device="cuda") + (1 << 40)
        rnd = torch.full((b,), 3, dtype=torch.int64, device="cuda")
        pos = torch.full((b,), 100, dtype=torch.int64, device="cuda")
        out = kp.make_outputs(b, "cuda")
        ws = kp.make_workspace(b, v, "cuda")
        for _ in range(args.calls):
            logits = (torch.randn(b, v, device="cuda", generator=gen) * 4).to(dtype)
            kp.propose(logits, temp, seed, rnd, pos, tau=0.7, out=out, workspace=ws)
        torch.cuda.synchronize()
        print(spec, "status", out[0][:4].tolist(), "token", out[1][:4].tolist(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
