"""Timeline of one proposal position: where the dependent chain spends its time.

    python benchmarks/probe_timeline.py --out DIR [--batches 1,4] [--calls 50] [--fused]

A copy of kernels/propose_jit.py with clock reads inserted at fixed points (``POINTS``) is imported as
a separate module and launched through propose.launch with the default plan (the two-launch form with
the polling merge since session 9; --fused: the fused form, whose tile programs also time their
arrival). Each read is an
inline-PTX ``%globaltimer`` / ``%clock64`` predicated on a value computed by the stage before it, so
it cannot issue before that stage's result exists (a read without a data dependence may be hoisted by
ptxas). Tile programs write their points to probe[pid, :], the merging program to probe[65536 + row,
:]. Per point the report gives the median over calls of the time since the earliest tile program
start (globaltimer, ns, comparable across SMs) and, within one program, of the clock64 cycles since
the program's first point. The probe perturbs what it measures slightly (a point that needs a
reduction for its dependence adds one); it is for attribution, not for headline figures. GPU only
(inline PTX does not run in Triton's interpreter).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dyadic24.kernels import propose as kp

SRC = Path(__file__).resolve().parents[1] / "kernels" / "propose_jit.py"
MERGE_BASE = 65536
ROW = 64  # int64 words per program in the probe buffer: (globaltimer, clock64) per point
PROBE_HELPER = """

@triton.jit
def _probe(ptr, slot, dep):
    d = dep.to(tl.int64)
    t = tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.ne.s64 p, $1, -7777; @p mov.u64 $0, %globaltimer; @!p mov.u64 $0, 0; }",
        "=l,l", [d], dtype=tl.int64, is_pure=False, pack=1)
    c = tl.inline_asm_elementwise(
        "{ .reg .pred p; setp.ne.s64 p, $1, -7777; @p mov.u64 $0, %clock64; @!p mov.u64 $0, 0; }",
        "=l,l", [d], dtype=tl.int64, is_pure=False, pack=1)
    tl.store(ptr + 2 * slot, t)
    tl.store(ptr + 2 * slot + 1, c)
"""
_T = f"trace_ptr + pid * {ROW}"  # a tile program's row of the probe buffer, in tile_kernel
_P = f"probe_ptr + pid * {ROW}"  # the same, inside _tile_fast
_M = f"trace_ptr + ({MERGE_BASE} + row) * {ROW}"  # the merging program's row
_PID = "    row = pid // n_tiles\n    tile = pid - row * n_tiles\n"
_MERGE_START = (  # (merge_kernel's call; tile_kernel's names the word _w)
    "    word, ktag, ftag, d_tb, d_seed, d_rnd, d_pos = _row_tags(\n"
    "        counter_ptr, temp_ptr, seed_ptr, round_ptr, pos_ptr, row, TAGGED\n"
    "    )\n"
)
_ARRIVE = (
    '            arrived = tl.atomic_add(counter_ptr + row, 1, sem="relaxed", scope="gpu")\n'  # (tagged)
)
_VALIDATED = "            MPOOL_T, MPOOL_K, STALE_FIRST,\n        )  # fmt: skip\n"
RELOADS = 18  # slot of the merge's reload count (+ 1), not a clock
# (name, anchor line(s) in propose_jit.py, statement inserted after it; "@" = the anchor's indentation)
POINTS: list[tuple[str, str, str]] = [
    ("tile start", _PID, f"@_probe({_T}, 0, pid)\n"),
    ("tile loaded+flags", "    flags = tl.max(words)\n", f"@_probe({_P}, 1, flags)\n"),
    (
        "tile theta (warp bound)",
        "            theta = tl.maximum(tl.min(tl.topk(tl.reshape(gmax, [runs, 32]), K_C // runs)), "
        "SK_NEG_INF)\n",
        f"@_probe({_P}, 2, theta)\n",
    ),
    ("tile n_sel", "            n_sel = n_gt\n", f"@_probe({_P}, 3, n_sel)\n"),
    (
        "tile indices written",
        "            tl.debug_barrier()  # the indices were written by other threads of this program\n",
        f"@_probe({_P}, 4, n_sel)\n",
    ),
    (
        "tile reloaded+sorted",
        "            tl.store(out + l32, top ^ ktag)\n",
        f"@_probe({_P}, 5, tl.max(top))\n",
    ),
    ("tile arrived", _ARRIVE, f"@_probe({_T}, 6, arrived)\n"),
    (
        "merge flags (validated)",
        _VALIDATED,
        f"@_probe({_M}, 7, fmax)\n@tl.store({_M} + 2 * {RELOADS}, _reloads.to(tl.int64) + 1)\n",
    ),
    (
        "merge pool top-32 + pair check",
        "                cbase, pool_q, n_tiles, ktag, TILE, MPOOL_T, MPOOL_K, BY_COUNT, TAGGED, "
        "STALE_FIRST,\n                MPOOL_PAIRS,\n            )  # fmt: skip\n",
        f"@_probe({_M}, 8, tl.max(best))\n",
    ),
    (
        "finish lane values",
        "    mb = tl.gather(lb, lane0, 0)  # m's pattern in every lane (one exchange, not a reduction)\n",
        f"@_probe({_M}, 9, tl.max(mb) + tl.max(astar) + n_valid)\n",
    ),
    ("finish slots sorted", "    slot_valid = lane64 < n_valid\n", f"@_probe({_M}, 10, tl.max(slot_id))\n"),
    (
        "finish clause 5 (hardware)",
        "    d_f, z_f, e_f, unsure = clause5_hw(lb, mb, tau)\n",
        f"@_probe({_M}, 11, tl.max(e_f.to(tl.int32, bitcast=True)))\n",
    ),
    (
        "finish clause 5, e in slot order",
        "    ev = tl.gather(ev, src, 0)  # in slot order (clause 6.1)\n",
        f"@_probe({_M}, 12, tl.max(ev.to(tl.int64, bitcast=True)))\n",
    ),
    (
        "finish tree",
        "    lv5 = _tree_level(lv4, lane, 16)  # S in every lane\n",
        f"@_probe({_M}, 13, tl.max(lv5.to(tl.int64, bitcast=True)))\n",
    ),
    (
        "finish tickets",
        "    rem = TICKETS - tl.gather(c_incl, lane0 + 31, 0)  # (every lane)\n",
        f"@_probe({_M}, 14, tl.max(rem))\n",
    ),
    (
        "finish drawn",
        "    hit = ((incl - tickets) <= u) & (u < incl)\n",
        f"@_probe({_M}, 15, tl.max(hit.to(tl.int32)))\n",
    ),
    (
        "finish stored",
        "    tl.store(tickets_ptr + row * 32 + place, out_t.to(tl.int32))\n",
        f"@_probe({_M}, 16, tl.load(tickets_ptr + row * 32 + 31))\n",
    ),
    # (the two-launch form's merge program, before its first load of the tiles' words)
    # (word is 0 in a merge that waits instead of polling: the sum keeps a tensor to depend on)
    ("merge program start", _MERGE_START, f"@_probe({_M}, 17, word + 0 * row)\n"),
]
_PARAMS = "    pid,\n    row,\n    tile,\n    V,\n    greedy_fast,\n    ktag,\n    ftag,\n"
_CALL = (
    "            logits_ptr, cand_ptr, flags_ptr, scratch_ptr, pid, row, tile, V, greedy_fast, ktag, ftag,\n"
)


def probed_source() -> str:
    src = SRC.read_text()
    # the tile's points need the probe buffer (the trace pointer, unused without a trace) in _tile_fast
    fast_params = _PARAMS + "    TILE: tl.constexpr,\n    NT:"
    assert src.count(fast_params) == 1 and _CALL in src, "the _tile_fast signature or call changed"
    src = src.replace(fast_params, fast_params.replace("greedy_fast,\n", "greedy_fast,\n    probe_ptr,\n"))
    src = src.replace(_CALL, _CALL.replace("greedy_fast, ktag", "greedy_fast, trace_ptr, ktag"), 1)
    for name, anchor, stmt in POINTS:
        assert src.count(anchor) == 1, f"probe point {name!r}: anchor not unique in propose_jit.py"
        last = anchor.splitlines()[-1]
        indent = last[: len(last) - len(last.lstrip())]
        src = src.replace(anchor, anchor + stmt.replace("@", indent), 1)
    return src + PROBE_HELPER


def load_probed() -> Any:
    tmp = Path(tempfile.mkdtemp()) / "propose_jit_probed.py"
    tmp.write_text(probed_source())
    spec = importlib.util.spec_from_file_location("dyadic24.kernels.propose_jit_probed", tmp)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def run(batch: int, vocab: int, calls: int, fused: bool, options: dict[str, Any]) -> dict[str, Any]:
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(7)
    logits = [torch.randn((batch, vocab), device=dev, generator=gen) * 3 for _ in range(8)]
    big = torch.empty(64 << 20, dtype=torch.int8, device=dev)  # evicts L2 between calls
    plan = kp.Plan.for_shape(batch, vocab, fused=fused, **options)
    ws = kp.make_workspace(batch, vocab, dev, plan.tile, cap=plan.scratch_width, mcap=plan.mcap)
    tab = kp.prepare(dev)
    outs = kp.make_outputs(batch, dev)
    temp = torch.ones(batch, dtype=torch.float32, device=dev)
    seed = torch.arange(batch, dtype=torch.int64, device=dev)
    probe = torch.zeros((MERGE_BASE + batch) * ROW, dtype=torch.int64, device=dev)
    common = (temp.view(torch.int32), seed, seed, seed, tab.z, tab.e, *outs, probe)
    tau_bits = int(np.float32(kp.TAU_DEFAULT).view(np.uint32))
    n_prog = batch * plan.n_tiles
    samples: list[np.ndarray] = []
    reloads: list[int] = []  # per merge: how often the tagged merge reloaded its pool
    for c in range(calls + 3):
        big.zero_()
        probe.zero_()
        kp.launch(plan, logits[c % 8].view(torch.int32), ws, common, tau_bits, tab, trace=False, src=0)
        torch.cuda.synchronize()
        if c >= 3:
            samples.append(probe.view(-1, ROW).cpu().numpy().copy())
    points = [p[0] for p in POINTS]
    glob: dict[str, list[float]] = {n: [] for n in points}
    cyc: dict[str, list[float]] = {n: [] for n in points}
    for s in samples:
        t = s[:, 0::2]
        k = s[:, 1::2]
        tiles_t, tiles_k = t[:n_prog], k[:n_prog]
        start = tiles_t[:, 0].min()
        for i, name in enumerate(points):
            if i <= 6:
                vals = tiles_t[:, i]
                ok = vals > 0
                if ok.any():
                    glob[name].append(float(np.median(vals[ok] - start)))
                    cyc[name].append(float(np.median(tiles_k[ok, i] - tiles_k[ok, 0])))
            else:
                mt = t[MERGE_BASE : MERGE_BASE + batch, i]
                mk = k[MERGE_BASE : MERGE_BASE + batch, i]
                ok = mt > 0
                if ok.any():
                    glob[name].append(float(np.median(mt[ok] - start)))
                    cyc[name].append(float(np.median(mk[ok] - k[MERGE_BASE : MERGE_BASE + batch, 7][ok])))
        last_arrival = tiles_t[:, 6 if plan.fused else 5].max() - start  # (two launches: last store)
        glob.setdefault("last tile arrived", []).append(float(last_arrival))
        counts = t[MERGE_BASE : MERGE_BASE + batch, RELOADS]
        reloads.extend(int(c) - 1 for c in counts if c > 0)
    return {
        "B": batch,
        "V": vocab,
        "calls": calls,
        "plan": {"fused": plan.fused, "tile": plan.tile, "n_tiles": plan.n_tiles},
        "ns_since_first_tile_start": {n: float(np.median(v)) for n, v in glob.items() if v},
        "cycles_since_program_start": {n: float(np.median(v)) for n, v in cyc.items() if v},
        "merges": len(reloads),
        "merges_with_reload": sum(1 for r in reloads if r > 0),
        "reloads_max": max(reloads, default=0),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--vocab", type=int, default=163_840)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--fused", action="store_true", help="the fused form (default: the default plan)")
    ap.add_argument("--source", action="store_true", help="print the probed source and exit (CPU)")
    ap.add_argument("--plan", default="{}", help="Plan.for_shape options as JSON, e.g. '{\"tile\": 8192}'")
    args = ap.parse_args()
    if args.source:
        print(probed_source())
        return 0
    setattr(kp, "propose_jit", load_probed())  # noqa: B010 (launch() reads its kernels from this attribute)
    options = json.loads(args.plan)
    runs = [run(int(b), args.vocab, args.calls, args.fused, options) for b in args.batches.split(",")]
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "plan": options}
    report["runs"] = runs
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "probe_timeline.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = ["| B | point | ns since first tile start | cycles since program start |", "|---:|---|---:|---:|"]
    for r in runs:
        for name, ns in r["ns_since_first_tile_start"].items():
            cycles = r["cycles_since_program_start"].get(name, 0)
            lines.append(f"| {r['B']} | {name} | {ns:.0f} | {cycles:.0f} |")
    for r in runs:
        lines.append(
            f"\nB = {r['B']}: {r['merges_with_reload']} of {r['merges']} merges reloaded their pool "
            f"(at most {r['reloads_max']} times)"
        )
    (args.out / "probe_timeline.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
