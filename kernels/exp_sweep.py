"""Exhaustive check of the kernel's binary32 exp over every z in [-104, 0] (clause 5.3).

The device computes, per z, the rule's exp routine and an independent binary64 verdict
(dyadic24.kernels.exp_sweep_jit); the host settles every undecided z with the exact reference
(dyadic24.reference.exp_exact.exp32) and re-checks every z the device calls wrong. Zero mismatches
are required. Run on the GPU (about 1.12e9 values) with

    python -m dyadic24.kernels.exp_sweep [--start HEX --stop HEX] [--json FILE]

Under the interpreter only small slices are practical (tests/test_kernel_exp.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch

from dyadic24.kernels.backend import select_backend

select_backend()

from dyadic24.kernels import exp_sweep_jit  # noqa: E402
from dyadic24.kernels.exp_table import ExpTable, load_table  # noqa: E402
from dyadic24.kernels.propose import kernel_device  # noqa: E402

FULL_RANGE = (0x80000000, 0xC2D00000)  # -0 .. -104, inclusive
CODE_UNDECIDED, CODE_WRONG, CODE_FLAGGED, CODE_FOUND, CODE_HW_WRONG, CODE_HW_UNSURE = 1, 2, 4, 8, 16, 32
MAX_REPORTED = 50


@dataclass
class SweepReport:
    """Counts over the swept patterns; ``mismatches`` lists (z, kernel, exact) as hex, at most 50."""

    start: int
    stop: int
    total: int = 0
    undecided: int = 0  # settled on the host by exp_exact.exp32
    device_wrong: int = 0  # the independent check said wrong (each re-checked exactly)
    flagged: int = 0  # lanes whose result came from the near-midpoint table
    flagged_missing: int = 0  # flagged lanes the table lacked (must be 0)
    hw_unsure: int = 0  # z the finish's hardware exp path hands to exp_binary32
    hw_mismatches: int = 0  # z where the hardware path vouched for another result (must be 0)
    mismatches: int = 0
    mismatch_examples: list[tuple[str, str, str]] = field(default_factory=list)
    undecided_examples: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        complete = self.total == self.stop - self.start + 1
        return self.mismatches == 0 and self.flagged_missing == 0 and self.hw_mismatches == 0 and complete


def sweep(
    start: int = FULL_RANGE[0],
    stop: int = FULL_RANGE[1],
    *,
    chunk: int = 1 << 26,
    block: int = 1024,
    table: ExpTable | None = None,
    device: torch.device | None = None,
    progress: bool = False,
) -> SweepReport:
    """Check exp_binary32 on every binary32 pattern z in [start, stop] (inclusive), and the finish's
    hardware path against it wherever that path vouches for its result."""
    from dyadic24.reference.exp_exact import exp32

    dev = device or kernel_device()
    tab = table or load_table(dev)
    report = SweepReport(start=start, stop=stop)
    began = time.perf_counter()
    r_buf = torch.empty(min(chunk, stop - start + 1), dtype=torch.int32, device=dev)
    code_buf = torch.empty_like(r_buf, dtype=torch.int8)
    at = start
    while at <= stop:
        n = min(chunk, stop - at + 1)
        grid = (-(-n // block),)
        exp_sweep_jit.sweep_kernel[grid](
            at, n, tab.z, tab.e, tab.size, r_buf, code_buf, TAB_ITERS=tab.iterations, BLOCK=block
        )
        code = code_buf[:n].to(torch.int32)
        report.total += n
        report.flagged += int(((code & CODE_FLAGGED) != 0).sum())
        report.flagged_missing += int(((code & (CODE_FLAGGED | CODE_FOUND)) == CODE_FLAGGED).sum())
        report.hw_unsure += int(((code & CODE_HW_UNSURE) != 0).sum())
        report.hw_mismatches += int(((code & CODE_HW_WRONG) != 0).sum())
        suspicious = torch.nonzero((code & (CODE_UNDECIDED | CODE_WRONG)) != 0).flatten()
        if suspicious.numel():
            idx = suspicious.cpu().tolist()
            codes = code[suspicious].cpu().tolist()
            rs = r_buf[suspicious].cpu().tolist()
            for i, c, r in zip(idx, codes, rs, strict=True):
                z = at + i
                got = r & 0xFFFFFFFF
                want = exp32(z)
                if c & CODE_UNDECIDED:
                    report.undecided += 1
                    if len(report.undecided_examples) < MAX_REPORTED:
                        report.undecided_examples.append(f"{z:08x}")
                else:
                    report.device_wrong += 1
                if got != want:
                    report.mismatches += 1
                    if len(report.mismatch_examples) < MAX_REPORTED:
                        report.mismatch_examples.append((f"{z:08x}", f"{got:08x}", f"{want:08x}"))
        if progress:
            done = (at + n - start) / (stop - start + 1)
            print(f"exp sweep {done:6.1%}  mismatches {report.mismatches}", file=sys.stderr, flush=True)
        at += n
    report.seconds = time.perf_counter() - began
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--start", type=lambda s: int(s, 16), default=FULL_RANGE[0])
    parser.add_argument("--stop", type=lambda s: int(s, 16), default=FULL_RANGE[1])
    parser.add_argument("--chunk", type=int, default=1 << 26)
    parser.add_argument("--json", default=None, help="write the report here")
    args = parser.parse_args(argv)
    report = sweep(args.start, args.stop, chunk=args.chunk, progress=True)
    text = json.dumps({**asdict(report), "passed": report.passed}, indent=1)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text + "\n")
    print(text)
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
