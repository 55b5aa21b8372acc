"""Bit-exactness checks of the Triton kernels on the device, with JSON and markdown reports.

    python -m dyadic24.kernels.gpu_check --out DIR [--rows N] [--skip-sweep] [--quick]

Sections (each recorded in DIR/gpu_check.json and DIR/gpu_check.md; exit status 0 iff all pass):
  environment   versions, device, interpreter flag
  smoke         first calls (compilation) for every logits dtype, with and without trace
  golden        every golden vector (dyadic24.vectors.store.iter_vectors), outputs and traces
  fuzz          N rows in random batches (B 1..256, V up to 262,144, every status) against the fast
                reference (dyadic24.reference.fast.propose_fast); traces compared on small batches
  graph         1,000 CUDA-graph replays with identical bits, plus replays on fresh inputs, for
                each of GRAPH_SHAPES (binary32 tiles and the 16-bit tile; CUDA only)
  custom_op     torch.ops.dyadic24.propose eagerly and under torch.compile (backend aot_eager)
  perf          median latency per call for a few shapes (information only)
  exp_sweep     the kernel's exp on every binary32 z in [-104, 0] (dyadic24.kernels.exp_sweep)
Also runs under TRITON_INTERPRET=1 on the CPU with small sizes (used by the tests).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dyadic24.api import Proposal, RowTrace
from dyadic24.kernels.backend import interpreting, select_backend

select_backend()

from dyadic24.kernels import fuzz  # noqa: E402
from dyadic24.kernels import trace as trace_mod  # noqa: E402
from dyadic24.kernels.exp_table import load_table  # noqa: E402
from dyadic24.kernels.propose import (  # noqa: E402
    TRACE_WORDS,
    Plan,
    kernel_device,
    make_outputs,
    make_workspace,
    prepare,
    propose,
)

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
FIELDS = ("status", "token", "ids", "tickets")
# Vocabulary sizes of the fuzz: edges of K = 32, of the tile (4096: one tile, whose list is C, and
# two), of the merge pool's shapes (32 tiles of 4096 = 131,072 logits) and large vocabularies.
VOCABS = (1, 2, 7, 31, 32, 33, 100, 1000, 4095, 4096, 4097, 10000, 50000, 131072, 131073, 262144)
MAX_ELEMENTS = 1 << 24  # logits per fuzz batch, except the one full-size batch
MAX_EXAMPLES = 20


class Inputs:
    """One call's inputs on the kernel device, and the numpy copies for the reference."""

    def __init__(self, call: fuzz.Call, device: torch.device) -> None:
        self.call = call
        self.logits = torch.from_numpy(call.logits).to(TORCH_DTYPES[call.dtype]).to(device)
        self.temperature = torch.from_numpy(call.temperature).to(device)
        self.seed = torch.from_numpy(call.seed.view(np.int64)).to(device)
        self.round = torch.from_numpy(call.round.view(np.int64)).to(device)
        self.position = torch.from_numpy(call.position.view(np.int64)).to(device)

    def run(self, *, trace: bool = False) -> Proposal:
        b = self.call.logits.shape[0]
        buf = torch.zeros((b, TRACE_WORDS), dtype=torch.int64, device=self.logits.device) if trace else None
        out = propose(
            self.logits, self.temperature, self.seed, self.round, self.position,
            tau=self.call.tau, trace=buf,
        )  # fmt: skip
        status, token, ids, tickets = (t.cpu().numpy() for t in out)
        rows = trace_mod.decode(buf.cpu().numpy(), token, ids, tickets) if buf is not None else None
        return Proposal(status=status, token=token, ids=ids, tickets=tickets, trace=rows)

    def reference(self, *, trace: bool = False) -> Proposal:
        from dyadic24.reference.fast import propose_fast

        c = self.call
        return propose_fast(c.logits, c.temperature, c.seed, c.round, c.position, tau=c.tau, trace=trace)


def row_diffs(got: Proposal, want: Proposal) -> list[dict[str, Any]]:
    """Per-row differences of outputs (clause 12.1) and, when both carry one, of traces (12.3)."""
    out: list[dict[str, Any]] = []
    for r in range(want.status.shape[0]):
        fields = [f for f in FIELDS if not np.array_equal(getattr(got, f)[r], getattr(want, f)[r])]
        trace_fields: list[str] = []
        if got.trace is not None and want.trace is not None:
            trace_fields = trace_diff(got.trace[r], want.trace[r].as_json())
        if fields or trace_fields:
            out.append({"row": r, "fields": fields, "trace_fields": trace_fields})
    return out


def outputs_match(outs: Sequence[torch.Tensor], want: Proposal) -> bool:
    """True when the four output tensors equal the reference's arrays bit for bit (clause 12.1)."""
    return all(np.array_equal(t.cpu().numpy(), getattr(want, f)) for t, f in zip(outs, FIELDS, strict=True))


def trace_diff(got: RowTrace, want_json: dict[str, Any]) -> list[str]:
    have = got.as_json()
    return sorted(k for k in set(have) | set(want_json) if have.get(k) != want_json.get(k))


def _describe(inp: Inputs, row: int, got: Proposal, want: Proposal) -> dict[str, Any]:
    c = inp.call
    logits = c.logits[row]
    return {
        "family": c.families[row],
        "dtype": c.dtype,
        "vocab": int(logits.shape[0]),
        "tau": f"{int(np.float32(c.tau).view(np.uint32)):08x}",
        "temperature": f"{int(c.temperature[row : row + 1].view(np.uint32)[0]):08x}",
        "seed": int(c.seed[row]),
        "round": int(c.round[row]),
        "position": int(c.position[row]),
        "logits_head": [f"{int(v):08x}" for v in logits[:8].view(np.uint32)],
        "got": {f: getattr(got, f)[row].tolist() for f in FIELDS},
        "want": {f: getattr(want, f)[row].tolist() for f in FIELDS},
    }


# ---------------------------------------------------------------- sections


def check_smoke(device: torch.device, table_z: list[int]) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    timings: dict[str, float] = {}
    bad: list[dict[str, Any]] = []
    for dtype in TORCH_DTYPES:
        for trace in (False, True):
            inp = Inputs(fuzz.make_call(rng, 4, 300, dtype, table_z), device)
            began = time.perf_counter()
            got = inp.run(trace=trace)
            timings[f"{dtype}{'/trace' if trace else ''}"] = round(time.perf_counter() - began, 3)
            diffs = row_diffs(got, inp.reference(trace=trace))
            if diffs:
                bad.append({"dtype": dtype, "trace": trace, "diffs": diffs[:MAX_EXAMPLES]})
    return {"passed": not bad, "first_call_seconds": timings, "failures": bad}


def check_golden(device: torch.device) -> dict[str, Any]:
    try:
        from dyadic24.vectors.store import iter_vectors
    except ImportError as exc:  # pragma: no cover - depends on the checkout
        return {"passed": True, "skipped": f"dyadic24.vectors.store unavailable: {exc}"}
    vectors = rows = 0
    bad: list[dict[str, Any]] = []
    for vec in iter_vectors():
        vectors += 1
        rows += vec.batch
        inputs = (
            torch.from_numpy(np.ascontiguousarray(vec.logits)).to(device),
            torch.from_numpy(np.ascontiguousarray(vec.temperature)).to(device),
            torch.from_numpy(vec.seed.view(np.int64).copy()).to(device),
            torch.from_numpy(vec.round.view(np.int64).copy()).to(device),
            torch.from_numpy(vec.position.view(np.int64).copy()).to(device),
        )
        buf = torch.zeros((vec.batch, TRACE_WORDS), dtype=torch.int64, device=device)
        tau = np.uint32(vec.tau_bits).view(np.float32)
        status, token, ids, tickets = (t.cpu().numpy() for t in propose(*inputs, tau=tau, trace=buf))
        got = Proposal(status=status, token=token, ids=ids, tickets=tickets)
        traces = trace_mod.decode(buf.cpu().numpy(), token, ids, tickets)
        for r in range(vec.batch):
            fields = [
                f for f in FIELDS if not np.array_equal(getattr(got, f)[r], getattr(vec.expected, f)[r])
            ]
            tfields = trace_diff(traces[r], vec.expected_trace[r]) if r < len(vec.expected_trace) else []
            if (fields or tfields) and len(bad) < MAX_EXAMPLES:
                bad.append(
                    {"file": vec.file, "tc_id": vec.tc_id, "row": r, "fields": fields, "trace": tfields}
                )
            elif fields or tfields:
                bad.append({"file": vec.file, "tc_id": vec.tc_id, "row": r})
    result: dict[str, Any] = {"passed": not bad, "vectors": vectors, "rows": rows, "failing_rows": len(bad)}
    result["failures"] = bad[:MAX_EXAMPLES]
    if vectors == 0:
        result["skipped"] = "no golden vector files found"
    return result


def _fuzz_shapes(
    rng: np.random.Generator, rows: int, max_vocab: int, max_batch: int
) -> list[tuple[int, int]]:
    vocabs = [v for v in VOCABS if v <= max_vocab] or [max_vocab]
    shapes: list[tuple[int, int]] = []
    if max_vocab >= 262144 and max_batch >= 256:
        shapes.append((256, 262144))  # the largest call of the brief, once
    total = sum(b for b, _ in shapes)
    while total < rows:
        vocab = int(rng.choice(vocabs))
        batch = int(rng.integers(1, max_batch + 1))
        batch = max(1, min(batch, MAX_ELEMENTS // vocab, rows - total))
        shapes.append((batch, vocab))
        total += batch
    return shapes


def check_fuzz(
    device: torch.device, table_z: list[int], rows: int, seed: int, max_vocab: int, max_batch: int
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    shapes = _fuzz_shapes(rng, rows, max_vocab, max_batch)
    done = 0
    statuses = np.zeros(5, dtype=np.int64)
    families: dict[str, int] = {}
    flagged = missed = traced_rows = 0
    bad: list[dict[str, Any]] = []
    failing = 0
    began = time.perf_counter()
    for batch, vocab in shapes:
        dtype = str(rng.choice(list(TORCH_DTYPES), p=[0.6, 0.2, 0.2]))
        inp = Inputs(fuzz.make_call(rng, batch, vocab, dtype, table_z), device)
        with_trace = batch * vocab <= 1 << 16
        got = inp.run(trace=True)
        want = inp.reference(trace=with_trace)
        if not with_trace:
            got = Proposal(got.status, got.token, got.ids, got.tickets, trace=None)
        else:
            traced_rows += batch
        for d in row_diffs(got, want):
            failing += 1
            if len(bad) < MAX_EXAMPLES:
                bad.append({**d, **_describe(inp, d["row"], got, want)})
        done += batch
        statuses += np.bincount(want.status, minlength=5)[:5]
        for f in inp.call.families:
            families[f] = families.get(f, 0) + 1
    # table usage, from a traced re-run of table-heavy rows
    table_call = replace(
        fuzz.make_call(rng, 64, 64, "float32", table_z, families=("table",)), tau=np.float32(1)
    )
    tab_inp = Inputs(table_call, device)
    buf = torch.zeros((64, TRACE_WORDS), dtype=torch.int64, device=device)
    propose(tab_inp.logits, tab_inp.temperature, tab_inp.seed, tab_inp.round, tab_inp.position,
            tau=tab_inp.call.tau, trace=buf)  # fmt: skip
    flagged, missed = trace_mod.table_stats(buf.cpu().numpy())
    return {
        "passed": failing == 0 and missed == 0,
        "rows": done,
        "batches": len(shapes),
        "rows_with_trace_compared": traced_rows,
        "status_counts": {
            "OK": int(statuses[0]),
            "NAN_LOGIT": int(statuses[1]),
            "POS_INF_LOGIT": int(statuses[2]),
            "ZERO_MASS": int(statuses[3]),
            "BAD_TEMPERATURE": int(statuses[4]),
        },
        "families": families,
        "table_lanes_flagged": flagged,
        "table_lanes_missing": missed,
        "failing_rows": failing,
        "failures": bad,
        "seconds": round(time.perf_counter() - began, 2),
    }


# binary32 [64, 50000] takes BIG_TILE's seven tiles, [8, 163840] the three-part tile (propose.TILE_3) on
# an H200; the 16-bit tile at 16,384 (bfloat16 [64, 163840]) and at 8,192 (binary16 [4, 163840])
GRAPH_SHAPES = (
    (64, 50000, "float32"),
    (8, 163_840, "float32"),
    (64, 163_840, "bfloat16"),
    (4, 163_840, "float16"),
)


def check_graph(device: torch.device, table_z: list[int], replays: int) -> dict[str, Any]:
    """Each of GRAPH_SHAPES captured in a CUDA graph: the first replay gives the reference's bits,
    ``replays`` more give the same bits, and ten replays on fresh inputs give theirs."""
    if device.type != "cuda":
        return {"passed": True, "skipped": "CUDA graphs need a CUDA device"}
    runs = [_graph_run(device, table_z, replays, batch, vocab, dtype) for batch, vocab, dtype in GRAPH_SHAPES]
    return {
        "passed": all(r["passed"] for r in runs),
        "shapes": [r["shape"] for r in runs],
        "dtypes": [r["dtype"] for r in runs],
        "tiles": [r["tile"] for r in runs],
        "replays": replays,
        "first_replay_matches_reference": all(r["first_replay_matches_reference"] for r in runs),
        "replays_with_different_bits": sum(r["replays_with_different_bits"] for r in runs),
        "fresh_input_replays_wrong": sum(r["fresh_input_replays_wrong"] for r in runs),
    }


def _graph_run(
    device: torch.device, table_z: list[int], replays: int, batch: int, vocab: int, dtype: str
) -> dict[str, Any]:
    rng = np.random.default_rng(7)
    inp = Inputs(fuzz.make_call(rng, batch, vocab, dtype, table_z), device)
    prepare(device)
    outs = make_outputs(batch, device)
    itemsize = inp.logits.element_size()
    # (the tile is reported; the default workspace serves every default plan)
    tile = Plan.for_shape(batch, vocab, itemsize=itemsize).tile
    ws = make_workspace(batch, vocab, device)
    static = [
        inp.logits.clone(),
        inp.temperature.clone(),
        inp.seed.clone(),
        inp.round.clone(),
        inp.position.clone(),
    ]
    tau = inp.call.tau
    stream = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up outside capture (compilation, allocator)
        propose(*static, tau=tau, out=outs, workspace=ws)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        propose(*static, tau=tau, out=outs, workspace=ws)
    graph.replay()
    first = [t.clone() for t in outs]
    want = inp.reference()
    first_ok = outputs_match(first, want)
    differing = 0
    for _ in range(replays):
        for t in outs:
            t.fill_(-7)
        graph.replay()
        if not all(torch.equal(a, b) for a, b in zip(outs, first, strict=True)):
            differing += 1
    fresh_bad = 0
    for _ in range(10):
        # tau is a kernel argument captured in the graph: the fresh calls keep it
        new = Inputs(replace(fuzz.make_call(rng, batch, vocab, dtype, table_z), tau=tau), device)
        fresh = [new.logits, new.temperature, new.seed, new.round, new.position]
        for dst, src in zip(static, fresh, strict=True):
            dst.copy_(src)
        graph.replay()
        ref = new.reference()
        if not outputs_match(outs, ref):
            fresh_bad += 1
    return {
        "passed": first_ok and differing == 0 and fresh_bad == 0,
        "shape": [batch, vocab],
        "dtype": dtype,
        "tile": tile,
        "replays": replays,
        "first_replay_matches_reference": first_ok,
        "replays_with_different_bits": differing,
        "fresh_input_replays_wrong": fresh_bad,
    }


def check_perf(device: torch.device) -> dict[str, Any]:
    """Median latency of one call with preallocated outputs and workspace (information, not a test)."""
    if device.type != "cuda":
        return {"passed": True, "skipped": "timing needs a CUDA device"}
    rng = np.random.default_rng(17)
    timings: dict[str, float] = {}
    for batch, vocab, dtype in [(1, 32000, "float32"), (64, 131072, "float32"), (64, 131072, "bfloat16"),
                                (256, 262144, "float32")]:  # fmt: skip
        inp = Inputs(fuzz.make_call(rng, batch, vocab, dtype, [], families=("normal",)), device)
        outs = make_outputs(batch, device)
        ws = make_workspace(batch, vocab, device)
        args = (inp.logits, inp.temperature, inp.seed, inp.round, inp.position)
        propose(*args, tau=inp.call.tau, out=outs, workspace=ws)
        samples = []
        for _ in range(20):
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            stop = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            propose(*args, tau=inp.call.tau, out=outs, workspace=ws)
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop))
        timings[f"B{batch}xV{vocab}/{dtype}"] = round(float(np.median(samples)), 4)
    return {"passed": True, "median_ms": timings}


def check_custom_op(device: torch.device) -> dict[str, Any]:
    from dyadic24.kernels.propose import propose_op

    rng = np.random.default_rng(3)
    inp = Inputs(fuzz.make_call(rng, 8, 1000, "float32", []), device)
    args = (inp.logits, inp.temperature, inp.seed, inp.round, inp.position)
    tau = float(inp.call.tau)
    want = inp.reference()
    eager = torch.ops.dyadic24.propose(*args, tau)
    ok_eager = outputs_match(eager, want)
    result: dict[str, Any] = {"eager_matches_reference": ok_eager}
    try:
        compiled = torch.compile(lambda *a: propose_op(*a, tau), backend="aot_eager", fullgraph=True)
        out = compiled(*args)
        result["compiled_matches_reference"] = outputs_match(out, want)
    except Exception as exc:  # report, do not hide
        result["compiled_matches_reference"] = False
        result["compile_error"] = repr(exc)
    result["passed"] = bool(result["eager_matches_reference"] and result["compiled_matches_reference"])
    return result


def check_exp_sweep(device: torch.device, start: int | None, stop: int | None) -> dict[str, Any]:
    from dyadic24.kernels.exp_sweep import FULL_RANGE, sweep

    report = sweep(start if start is not None else FULL_RANGE[0], stop if stop is not None else FULL_RANGE[1],
                   device=device)  # fmt: skip
    return {**asdict(report), "passed": report.passed}


# ---------------------------------------------------------------- driver


def versions() -> dict[str, Any]:
    """Python, torch, triton and numpy versions and whether the kernels run interpreted (the head of
    this module's and sharded_check's environment sections)."""
    import triton

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "numpy": np.__version__,
        "interpreter": interpreting(),
    }


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {**versions(), "device": str(kernel_device())}
    if torch.cuda.is_available() and not interpreting():
        env["gpu"] = torch.cuda.get_device_name()
        env["capability"] = list(torch.cuda.get_device_capability())
    return env


def _markdown(report: dict[str, Any]) -> str:
    skip = ("passed", "failures", "mismatch_examples", "undecided_examples")
    lines = section_table("# dyadic24 kernel check", report, skip)
    lines += report_tail(report, ("failures", "mismatch_examples"))
    return "\n".join(lines) + "\n"


def section_table(title: str, report: dict[str, Any], skip: Sequence[str]) -> list[str]:
    """A check report's head (this module's, sharded_check's): the title, the verdict, and a row per
    section with its result and every field but ``skip``."""
    lines = [title, "", f"overall: **{'PASS' if report['passed'] else 'FAIL'}**", ""]
    lines += ["| section | result | details |", "|---|---|---|"]
    for name, sec in report["sections"].items():
        state = "skipped" if "skipped" in sec else ("PASS" if sec.get("passed") else "FAIL")
        detail = ", ".join(f"{k}={json.dumps(sec[k])}" for k in sec if k not in skip)
        lines.append(f"| {name} | {state} | {detail.replace('|', '/')} |")
    return lines


def report_tail(report: dict[str, Any], failure_keys: Sequence[str]) -> list[str]:
    """A check report's end: the environment, then each section's first field of ``failure_keys``
    that is set (its failures), cut at 20,000 characters."""
    lines = ["", "## environment", "", "```", json.dumps(report["environment"], indent=1), "```"]
    for name, sec in report["sections"].items():
        failed = next((sec[k] for k in failure_keys if sec.get(k)), None)
        if failed:
            lines += ["", f"## {name}: failures", "", "```", json.dumps(failed, indent=1)[:20000], "```"]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", required=True, help="directory for gpu_check.json and gpu_check.md")
    parser.add_argument("--rows", type=int, default=20000, help="fuzzed rows (default 20000)")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--max-vocab", type=int, default=262144)
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--sweep-start", type=lambda s: int(s, 16), default=None)
    parser.add_argument("--sweep-stop", type=lambda s: int(s, 16), default=None)
    parser.add_argument("--only", default="", help="comma-separated sections to run")
    args = parser.parse_args(argv)

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = kernel_device()
    table_z = load_table(device).z.cpu().tolist() if load_table(device).size else []
    sections: dict[str, Callable[[], dict[str, Any]]] = {
        "smoke": lambda: check_smoke(device, table_z),
        "golden": lambda: check_golden(device),
        "fuzz": lambda: check_fuzz(device, table_z, args.rows, args.seed, args.max_vocab, args.max_batch),
        "graph": lambda: check_graph(device, table_z, args.replays),
        "custom_op": lambda: check_custom_op(device),
        "perf": lambda: check_perf(device),
        "exp_sweep": lambda: check_exp_sweep(device, args.sweep_start, args.sweep_stop),
    }
    wanted = [s for s in args.only.split(",") if s] or list(sections)
    if args.skip_sweep and "exp_sweep" in wanted:
        wanted.remove("exp_sweep")
    report: dict[str, Any] = {"environment": environment(), "sections": {}}
    for name in wanted:
        began = time.perf_counter()
        print(f"[gpu_check] {name} ...", file=sys.stderr, flush=True)
        try:
            result = sections[name]()
        except Exception:
            result = {"passed": False, "error": traceback.format_exc()}
        result["section_seconds"] = round(time.perf_counter() - began, 2)
        report["sections"][name] = result
        print(f"[gpu_check] {name}: {'PASS' if result.get('passed') else 'FAIL'} "
              f"({result['section_seconds']} s)", file=sys.stderr, flush=True)  # fmt: skip
        (out_dir / "gpu_check.json").write_text(json.dumps({**report, "passed": False}, indent=1) + "\n")
    report["passed"] = all(sec.get("passed") for sec in report["sections"].values())
    (out_dir / "gpu_check.json").write_text(json.dumps(report, indent=1) + "\n")
    (out_dir / "gpu_check.md").write_text(_markdown(report))
    print(_markdown(report))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
