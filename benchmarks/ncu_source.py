"""Where a kernel's time goes by source line: Nsight Compute's per-instruction source counters (executed
instructions and warp stall samples by reason), attributed to the Triton source lines of the cubin
that ran (benchmarks/DESIGN.md "Where the time goes").

    python benchmarks/ncu_source.py SOURCE_CSV CUBIN_SASS [--lines 25]

SOURCE_CSV: `ncu -i REPORT --page source --csv --print-source sass` of a report taken with
`--section SourceCounters` (benchmarks/h200.sh ncu); CUBIN_SASS: `nvdisasm -g -c` of the same cubin
(the report's instruction addresses, less the first one, are the cubin's offsets). Either file may be
gzipped. Prints the kernel's stall reasons, then the source lines with the largest share of samples:
each line's share of instructions and of samples, and its top stall reasons. Lines of Triton's own
library (standard.py: reductions, scans, the bitonic networks of tl.topk and tl.sort) are named by
file and line of the Triton that compiled the cubin.
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import io
import re
import sys
from pathlib import Path


def _text(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()


def line_table(sass: str) -> dict[int, str]:
    """Instruction offset -> "file:line" from nvdisasm -g's '//## File' annotations."""
    where = "?"
    table: dict[int, str] = {}
    for line in sass.splitlines():
        m = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if m:
            where = f"{Path(m.group(1)).name}:{m.group(2)}"
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/", line)
        if m:
            table[int(m.group(1), 16)] = where
    return table


def summarize(source_csv: str, sass: str, lines: int) -> str:
    rows = list(csv.reader(io.StringIO(source_csv)))
    head = next(i for i, r in enumerate(rows) if r[:1] == ["Address"])
    cols = {name: i for i, name in enumerate(rows[head])}
    data = [r for r in rows[head + 1 :] if len(r) == len(rows[head]) and r[0].startswith("0x")]
    reasons = [c for c in cols if c.startswith("stall_") and "Not Issued" not in c]
    table = line_table(sass)
    base = int(data[0][cols["Address"]], 16)

    def num(text: str) -> float:
        return float(text.replace(",", "") or 0)

    per: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    total: collections.Counter[str] = collections.Counter()
    for r in data:
        where = table.get(int(r[cols["Address"]], 16) - base, "?")
        counts = {"inst": num(r[cols["Instructions Executed"]]),
                  "samples": num(r[cols["Warp Stall Sampling (All Samples)"]])}  # fmt: skip
        counts.update({c: num(r[cols[c]]) for c in reasons})
        per[where].update(counts)
        total.update(counts)
    out = [f"{total['inst']:,.0f} warp instructions executed, {total['samples']:,.0f} warp samples", ""]
    ranked = sorted(reasons, key=lambda c: -total[c])
    out.append("stall reasons: " + ", ".join(
        f"{c[6:]} {100 * total[c] / total['samples']:.1f} %" for c in ranked[:8]))  # fmt: skip
    out += ["", "| source line | instructions | samples | top stall reasons |", "|---|---:|---:|---|"]
    for where, c in sorted(per.items(), key=lambda kv: -kv[1]["samples"])[:lines]:
        top = sorted(reasons, key=lambda r: -c[r])[:3]
        why = ", ".join(f"{r[6:]} {100 * c[r] / max(c['samples'], 1):.0f} %" for r in top)
        out.append(f"| {where} | {100 * c['inst'] / total['inst']:.1f} % | "
                   f"{100 * c['samples'] / total['samples']:.1f} % | {why} |")  # fmt: skip
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source_csv", type=Path)
    ap.add_argument("cubin_sass", type=Path)
    ap.add_argument("--lines", type=int, default=25, help="source lines to list")
    args = ap.parse_args()
    sys.stdout.write(summarize(_text(args.source_csv), _text(args.cubin_sass), args.lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
