"""The table of a before-and-after run (`h200.sh ab`): for every (dtype, V, implementation, B), each
tree's medians over its runs (min-max, us per depth-5 graph) and the difference of their midpoints
(benchmarks/DESIGN.md "Measurement method").

    python benchmarks/ab_table.py DIR      (DIR holds after_<n>/bench.json and before_<n>/bench.json)
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

Key = tuple[str, int, str, int]


def medians(folder: Path, arm: str) -> tuple[dict[Key, list[float]], list[str]]:
    """Every run of one arm: the medians by (dtype, V, impl, B), and each run's kernel digest line."""
    out: dict[Key, list[float]] = defaultdict(list)
    heads: list[str] = []
    for path in sorted(folder.glob(f"{arm}_*/bench.json")):
        report = json.loads(path.read_text())
        heads.append(f"{path.parent.name}: {report['info'].get('commit')} {report['info'].get('kernels')}")
        for r in report["results"]:
            out[(r["dtype"], int(r["V"]), r["impl"], int(r["B"]))].append(float(r["median_us"]))
    return out, heads


def table(folder: Path) -> str:
    after, after_heads = medians(folder, "after")
    before, before_heads = medians(folder, "before")
    lines = [*before_heads, *after_heads, "", "| dtype | V | impl | B | before | after | after - before |"]
    lines.append("|---|---:|---|---:|---:|---:|---:|")
    for key in sorted(set(after) | set(before)):
        a, b = after.get(key, []), before.get(key, [])

        def span(v: list[float]) -> str:
            return f"{min(v):.1f}-{max(v):.1f}" if v else "-"

        diff = f"{(min(a) + max(a)) / 2 - (min(b) + max(b)) / 2:+.1f}" if a and b else "-"
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {span(b)} | {span(a)} | {diff} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(table(Path(sys.argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
