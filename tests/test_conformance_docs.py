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
