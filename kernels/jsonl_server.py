"""The bundled Triton kernel as a JSON-lines program (conformance/PROTOCOL.md, minor version 1).

    python -m dyadic24.kernels.jsonl_server [--no-trace]
    dyadic24 conform --cmd "python -m dyadic24.kernels.jsonl_server" --bulk 1000000

The path a C++/CUDA serving stack takes through the runner (``--cmd``), with the kernel behind it:
binary frames, the three logit formats (16-bit logits go to the kernel as they are, half the bytes),
invalid calls answered with an error naming the argument (clause 1.5), the ``exp`` method on the
kernel's exp routine, and the clause-12.3 trace unless ``--no-trace``. Requests are decoded and
responses encoded by dyadic24.conformance.jsonl, the runner's own codec. On a machine without a CUDA
device the kernels run in Triton's CPU interpreter (dyadic24.kernels.backend), as for ``--impl``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dyadic24.api import ArgumentError, Proposal
from dyadic24.conformance import jsonl


def _peek(line: bytes) -> tuple[int | None, int]:
    """The request's id (None unless a positive integer) and the bytes of frame that follow the line,
    read before decoding so that a request rejected for any reason leaves the stream in step."""
    try:
        obj = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None, 0
    if not isinstance(obj, dict):
        return None, 0
    rid = obj.get("id")
    positive = isinstance(rid, int) and not isinstance(rid, bool) and rid > 0
    return (rid if positive else None), jsonl.frame_length(line)


class KernelServer:
    """One request at a time through dyadic24.kernels.propose.propose on the kernel device."""

    def __init__(self, trace: bool) -> None:
        import torch

        from dyadic24.kernels import adapter  # (chooses the interpreter without a CUDA device)
        from dyadic24.kernels import propose as kp
        from dyadic24.kernels import trace as trace_mod

        self.torch, self.kp, self.adapter, self.trace_mod = torch, kp, adapter, trace_mod
        self.device = kp.kernel_device()
        self.trace = trace
        kp.prepare(self.device)  # the exp table, loaded once before the first call

    def describe(self) -> str:
        import triton

        torch = self.torch
        where = (
            f"on {torch.cuda.get_device_name(self.device)}"
            if self.device.type == "cuda"
            else "TRITON_INTERPRET=1, CPU interpreter"
        )
        return f"dyadic24 Triton kernel (triton {triton.__version__}, torch {torch.__version__}, {where})"

    def _tensor(self, array: npt.NDArray[Any]) -> Any:
        # (np.require copies a read-only view of the request's bytes: torch takes writable arrays only)
        return self.torch.from_numpy(np.require(array, requirements=["C", "W"])).to(self.device)

    def propose(self, call: jsonl.Call, want_trace: bool) -> tuple[Proposal, list[dict[str, Any]] | None]:
        torch, inputs = self.torch, call.inputs
        if call.fmt == "binary32":
            logits = self._tensor(inputs.logits)
        elif call.fmt == "binary16":
            assert call.narrow is not None
            logits = self._tensor(call.narrow.view(np.float16))
        else:  # bfloat16: numpy has no such type; the bits travel as int16 and are viewed on the device
            assert call.narrow is not None
            logits = self._tensor(call.narrow.view(np.int16)).view(torch.bfloat16)
        shape = (inputs.batch, self.kp.TRACE_WORDS)
        buf = torch.zeros(shape, dtype=torch.int64, device=self.device) if want_trace else None
        status, token, ids, tickets = self.kp.propose(
            logits,
            self._tensor(inputs.temperature),
            self._tensor(inputs.seed.view(np.int64)),
            self._tensor(inputs.round.view(np.int64)),
            self._tensor(inputs.position.view(np.int64)),
            tau=np.uint32(inputs.tau_bits).view(np.float32),
            trace=buf,
        )
        out = [t.cpu().numpy().astype(np.int32) for t in (status, token, ids, tickets)]
        proposal = Proposal(status=out[0], token=out[1], ids=out[2], tickets=out[3])
        if buf is None:
            return proposal, None
        rows = self.trace_mod.decode(buf.cpu().numpy(), out[1], out[2], out[3])
        return proposal, [row.as_json() for row in rows]

    def exp(self, start: int, count: int) -> npt.NDArray[np.uint32]:
        z = np.arange(start, start + count, dtype=np.uint64).astype(np.uint32)
        return np.asarray(self.adapter.exp32(z), dtype=np.uint32)

    def answer(self, line: bytes, frame: bytes | None) -> tuple[str, bytes]:
        """The response line (without its newline) and the frame after it (b"" without one)."""
        rid, _ = _peek(line)
        try:
            request = jsonl.decode_request(line, frame)
            if request.call is None:
                return jsonl.encode_exp_response(request.id, self.exp(request.exp_start, request.exp_count))
            proposal, trace = self.propose(request.call, request.trace and self.trace)
            return jsonl.encode_response(request.id, proposal, trace), b""
        except ArgumentError as exc:  # clause 1.5: the argument it names
            return jsonl.encode_error(rid, exc.argument, exc.rule), b""
        except Exception as exc:  # about no argument (argument null): answered, and the server stays ready
            return jsonl.encode_error(rid, None, f"{type(exc).__name__}: {exc}"[:2000]), b""


def serve(server: KernelServer, stdin: IO[bytes], stdout: IO[bytes]) -> int:
    def send(text: str, payload: bytes = b"") -> None:
        stdout.write(text.encode() + b"\n" + payload)
        stdout.flush()

    formats = {"minor": 1, "formats": jsonl.FORMATS, "frames": True, "exp": True}
    send(jsonl.encode_handshake(server.describe(), server.trace, **formats))
    while line := stdin.readline():
        if not line.strip():
            continue
        _, size = _peek(line)
        frame = stdin.read(size) if size else None  # always consumed (PROTOCOL.md, "frame")
        send(*server.answer(line, frame))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--no-trace", action="store_true", help="announce and send no trace (clause 12.3)")
    args = parser.parse_args(argv)
    # Protocol lines own file descriptor 1; anything else written there (a print, a native library's
    # message) goes to standard error instead, where the runner relays it.
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    server = KernelServer(trace=not args.no_trace)
    return serve(server, sys.stdin.buffer, stdout)


if __name__ == "__main__":
    sys.exit(main())
