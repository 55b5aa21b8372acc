"""Depth-5 latency of rows masked to -inf but for a few tokens (guided decoding: a grammar or a JSON
schema allows ~48 of 163,840 tokens) against the same rows unmasked, with bench_propose's method
(benchmarks/DESIGN.md "The 16-bit tile": ties that fill a tile's first rows).

Every tile of such a row holds fewer than 32 finite logits, so the tile's 32nd largest column maximum
is -inf and nearly all its elements tie at it; the lowest-ID ties complete the tile's candidates
(clause 3.1), and the bound phi on them decides whether the tile selects them or takes its exact
fallback. bfloat16 and binary32, V = 163,840, B = 64 and 256, sampled and greedy rows, median of
graph replays; each row keeps a token with probability 48 / V (torch generator seed 5); --stages: the
tile kernel and the merge kernel alone too (bench_propose's stages, sampled rows).

Usage on the GPU: python benchmarks/masked_rows.py --out DIR [--stages] (writes DIR/masked.json); an A/B runs
it in each tree. python benchmarks/masked_rows.py --table NAME=JSON ... renders the runs side by side
as markdown (stdout).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

KEEP = 48  # tokens a masked row keeps (in expectation)
VOCAB = 163_840
CASES = (("bf16", (64, 256)), ("fp32", (64, 256)))


def measure(out: Path, replays: int, stages: bool) -> None:
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_propose import DTYPES, Case, time_graphs, versions

    info = versions()
    l2 = int(info["l2_bytes"]) or 60 * 2**20
    results: list[dict[str, Any]] = []
    for dname, batches in CASES:
        for batch in batches:
            case = Case(DTYPES[dname], VOCAB, batch, l2)
            bodies = {"sampled": case.kernel(case.t_sampled), "greedy": case.kernel(case.t_greedy)}
            for masked in (False, True):
                if masked:  # (the same buffers, masked in place: the unmasked rows were timed first)
                    gen = torch.Generator(device="cuda").manual_seed(5)
                    for bufs in case.sets:
                        for x in bufs:
                            keep = torch.rand(x.shape, device="cuda", generator=gen) < (KEEP / VOCAB)
                            x.masked_fill_(~keep, float("-inf"))
                if stages:  # (after the mask: the merge stage reads the candidates its setup call left)
                    bodies |= {k.removeprefix("dyadic24-"): v for k, v in case.stages().items()}
                for name, body in bodies.items():
                    t = time_graphs(case, body, replays, 20)
                    row = {"dtype": dname, "B": batch, "masked": masked, "impl": name}
                    row |= {k: round(t[k], 1) for k in ("median_us", "p10_us", "p90_us")}
                    results.append(row)
                    print(row, flush=True)
            del case
            torch.cuda.empty_cache()
    out.mkdir(parents=True, exist_ok=True)
    (out / "masked.json").write_text(json.dumps({"info": info, "results": results}, indent=1) + "\n")


def table(runs: dict[str, dict[str, Any]]) -> str:
    """Markdown: per (dtype, B, impl) the unmasked and masked medians of each run (us per depth 5)."""
    names = list(runs)
    head = "| dtype | B | impl | " + " | ".join(f"{n} plain | {n} masked" for n in names) + " |"
    lines = [head, "|---|---:|---|" + "---:|---:|" * len(names)]
    keys = dict.fromkeys((r["dtype"], r["B"], r["impl"]) for r in runs[names[0]]["results"])
    for dtype, batch, impl in keys:
        cells = []
        for n in names:
            got = {r["masked"]: r["median_us"] for r in runs[n]["results"]
                   if (r["dtype"], r["B"], r["impl"]) == (dtype, batch, impl)}  # fmt: skip
            cells += [f"{got.get(False, float('nan')):.1f}", f"{got.get(True, float('nan')):.1f}"]
        lines.append(f"| {dtype} | {batch} | {impl} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--stages", action="store_true", help="the tile and the merge kernel alone too")
    ap.add_argument("--table", nargs="+", metavar="NAME=JSON", help="render these runs' masked.json")
    args = ap.parse_args()
    if args.table:
        runs = {}
        for item in args.table:
            name, sep, path = item.partition("=")
            if not sep:
                ap.error(f"--table: {item!r} is not NAME=JSON")
            runs[name] = json.loads(Path(path).read_text())
        sys.stdout.write(table(runs))
        return 0
    if args.out is None:
        ap.error("--out is required unless --table is given")
    measure(args.out, args.replays, args.stages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
