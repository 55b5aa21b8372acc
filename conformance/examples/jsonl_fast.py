"""A JSON-lines implementation of dyadic24-floor-first-v1 (conformance/PROTOCOL.md, clause 12.4).

It wraps the fast reference and speaks the protocol with nothing but ``json`` and numpy, as a
template for implementations in other languages:

    dyadic24 conform --cmd "python -m dyadic24.conformance.examples.jsonl_fast"
    dyadic24 conform --cmd "python -m dyadic24.conformance.examples.jsonl_fast --mutant u_low_bits"

``--no-trace`` announces no trace (outputs only); ``--mutant NAME`` serves one of the deliberately
wrong implementations of dyadic24.conformance.mutants instead, to see a failing run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

SEMANTIC_ID = "dyadic24-floor-first-v1"


def words(text: str | list[str]) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """8-hex-digit big-endian words, packed in one string or listed, to uint32."""
    joined = text if isinstance(text, str) else "".join(text)
    return np.frombuffer(bytes.fromhex(joined), dtype=">u4").astype(np.uint32)


def serve(propose: Callable[..., Any], name: str, trace_ok: bool) -> int:
    out = sys.stdout
    out.write(
        json.dumps(
            {
                "protocol": "dyadic24-jsonl-1",
                "semanticId": SEMANTIC_ID,
                "implementation": name,
                "trace": trace_ok,
            }
        )
        + "\n"
    )
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        request_id = None
        try:
            req = json.loads(line)
            request_id = req["id"]
            vocab = int(req["vocab"])
            logits = np.stack([words(row) for row in req["logits"]]).reshape(-1, vocab).view(np.float32)
            temperature = words(req["temperature"]).view(np.float32)
            seed, rnd, pos = (
                np.array([int(v) for v in req[k]], dtype=np.uint64) for k in ("seed", "round", "position")
            )
            tau = np.array(int(req["tauBits"], 16), dtype=np.uint32).view(np.float32)[()]
            want_trace = bool(req.get("trace")) and trace_ok
            result = propose(logits, temperature, seed, rnd, pos, tau=tau, trace=want_trace)
        except Exception as exc:  # every failure becomes an error response (PROTOCOL.md, "Errors")
            argument = getattr(exc, "argument", "request")
            out.write(
                json.dumps({"id": request_id, "error": {"argument": argument, "message": str(exc)}}) + "\n"
            )
            out.flush()
            continue
        response: dict[str, Any] = {
            "id": request_id,
            "status": result.status.tolist(),
            "token": result.token.tolist(),
            "ids": result.ids.tolist(),
            "tickets": result.tickets.tolist(),
        }
        if want_trace:
            response["trace"] = [row.as_json() for row in result.trace]
        out.write(json.dumps(response, separators=(",", ":")) + "\n")
        out.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-trace", action="store_true", help="announce and send no trace")
    parser.add_argument("--mutant", help="serve this deliberately wrong implementation instead")
    args = parser.parse_args(argv)
    if args.mutant:
        from dyadic24.conformance.mutants import MUTANTS

        propose, name = MUTANTS[args.mutant][0], f"mutant {args.mutant}"
    else:
        from dyadic24.reference.fast import propose_fast

        propose, name = propose_fast, "fast reference (jsonl_fast example)"
    return serve(propose, name, not args.no_trace)


if __name__ == "__main__":
    sys.exit(main())
