"""The examples in README.md, conformance/README.md and PROTOCOL.md are the code's output
(dyadic24.conformance.docs): a real conformance run, the option help, the protocol encoders, the
invalid-call table. A document that drifts from the runner fails here."""

from __future__ import annotations

from dyadic24.conformance import docs


def test_generated_blocks_match_the_code() -> None:
    assert docs.stale() == [], "run: python -m dyadic24.conformance.docs --write"


def test_a_drifted_block_is_detected(tmp_path: object) -> None:
    path, _ = docs.BLOCKS["invalid-calls"]
    text = path.read_text(encoding="utf-8")
    assert "`tau_zero`" in text
    fresh = {name: "stale\n" for name in docs.BLOCKS}
    assert "stale\n<!-- END GENERATED: invalid-calls -->" in docs.render(path, fresh)
    assert docs.normalized("fuzz 200/200 rows 711") == docs.normalized("fuzz 200/200 rows 702")
    assert docs.normalized("vectors 291/291") != docs.normalized("vectors 288/288")


def _json_lines(block: str) -> list[str]:
    path, _ = docs.BLOCKS[block]
    body = next(m.group("body") for m in docs.BLOCK.finditer(path.read_text()) if m.group("name") == block)
    return [ln for ln in body.splitlines() if ln.startswith("{")]


def test_every_protocol_example_is_what_the_runner_accepts() -> None:
    """PROTOCOL.md's lines, as printed there, pass the runner's own decoders (the strict ones)."""
    import numpy as np

    from dyadic24.conformance import jsonl

    (hello,) = _json_lines("protocol-handshake")
    assert jsonl.decode_handshake(hello).exp
    line, framed = _json_lines("protocol-request")
    request = jsonl.decode_request(line)
    assert request.call is not None and request.call.inputs.batch == 2
    payload = np.ascontiguousarray(request.call.logit_words(), dtype="<u4").tobytes()
    assert jsonl.decode_request(framed, payload).call is not None
    (response,) = _json_lines("protocol-response")
    assert jsonl.decode_response(response, 2).proposal is not None
    exp_request, exp_line = _json_lines("protocol-exp")
    assert jsonl.decode_request(exp_request).exp_count == 4
    _, _, frame = docs.exp_exchange()
    bits = jsonl.decode_response(exp_line, 0, frame).exp_bits
    assert bits is not None and list(bits) == [0x3F800000] * 4
    tau, unparsed = _json_lines("protocol-errors")
    assert jsonl.decode_response(tau, 2).error_argument == "tau"
    assert jsonl.decode_response(unparsed, 2).error_argument is None


def test_the_usage_paragraph_is_compared_without_its_line_breaks() -> None:
    """argparse wraps the usage line at other places on Python 3.13 than on 3.11 and 3.12."""
    assert docs.normalized("usage: a [-h]\n     (--x | --y)\n\nrest") == docs.normalized(
        "usage: a [-h] (--x |\n  --y)\n\nrest"
    )
    assert docs.normalized("usage: a [-h]\n\nrest") != docs.normalized("usage: a [-q]\n\nrest")
