"""Standard speculative-sampling verification over a dyadic24 q, in rational arithmetic (non-normative;
spec Appendix F).

Not part of ``dyadic24-floor-first-v1``: the rule ends at the proposal (clauses 1-10). This is the
verification of Leviathan et al. (ICML 2023) and Chen et al. (2023) that vLLM's and SGLang's rejection
samplers implement, written over exact fractions so that a test can integrate it exactly: a drafted
token x ~ q is accepted with probability min(1, p(x) / q(x)); otherwise the output is drawn from
normalise(max(0, p - q)). For x ~ q the output is distributed as p exactly, whatever q is (Leviathan
et al., Appendix A.1), which is why the verifier must be given the q the draw used: q is exact here
(``dyadic24.reference.handoff``).

The randomness is explicit: every uniform variate is an argument in [0, 1) (a Fraction, or any
number Fraction() takes exactly), so a caller can integrate over it (``tests/test_verify_reference.py``
does, exactly) or pass the verifier's own uniforms. Distributions are sequences of V non-negative
fractions: p sums to 1; q sums to 1, or to 0 for a failed row (clause 2.3, an all-zero q), whose
position always rejects and so draws from p itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from numbers import Rational
from typing import Any

__all__ = ["accept", "draw", "residual", "verify_chain", "verify_position"]

Dist = Sequence[Fraction]


def _fraction(name: str, value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (Rational, float, int)):
        raise TypeError(f"{name} must be a Fraction, an int or a float, got {type(value).__name__}")
    return Fraction(value)


def _uniform(name: str, value: Any) -> Fraction:
    u = _fraction(name, value)
    if not 0 <= u < 1:
        raise ValueError(f"{name} must lie in [0, 1), got {u}")
    return u


def _dist(name: str, values: Sequence[Any], vocab: int, *, may_be_zero: bool = False) -> list[Fraction]:
    d = [_fraction(name, v) for v in values]
    if len(d) != vocab:
        raise ValueError(f"{name} has {len(d)} entries, the vocabulary {vocab}")
    if any(v < 0 for v in d):
        raise ValueError(f"{name} has a negative entry")
    total = sum(d, Fraction(0))
    if total != 1 and not (may_be_zero and total == 0):
        raise ValueError(f"{name} sums to {total}, not 1{' (or 0: a failed row)' if may_be_zero else ''}")
    return d


def draw(weights: Sequence[Fraction], u: Any) -> int:
    """Inverse-CDF draw from non-negative ``weights`` (not necessarily normalised) with the uniform
    ``u`` in [0, 1): the first index y with u * total < weights[0] + ... + weights[y]. Each y is drawn
    for u in an interval of length weights[y] / total (left-closed, so a zero weight is never drawn)."""
    w = [_fraction("weights", v) for v in weights]
    total = sum(w, Fraction(0))
    if total <= 0 or any(v < 0 for v in w):
        raise ValueError("draw needs non-negative weights with a positive sum")
    target = _uniform("u", u) * total
    acc = Fraction(0)
    for y, v in enumerate(w):
        acc += v
        if target < acc:
            return y
    raise AssertionError("unreachable: target < total")


def accept(p_x: Fraction, q_x: Fraction, u: Any) -> bool:
    """Whether the drafted token is accepted: u < p(x) / q(x), written u * q(x) < p(x) with q(x) > 0 (for
    u uniform on [0, 1), probability min(1, p(x) / q(x))). A token with q(x) = 0 (off the support, or a
    failed row's placeholder) was never drafted from q and is rejected (Appendix F)."""
    return q_x > 0 and _uniform("u_accept", u) * q_x < p_x


def residual(p: Dist, q: Dist) -> list[Fraction]:
    """max(0, p - q) per token, unnormalised (draw() normalises)."""
    return [max(Fraction(0), a - b) for a, b in zip(p, q, strict=True)]


def verify_position(
    p: Sequence[Any], q: Sequence[Any], x: int, u_accept: Any, u_residual: Any
) -> tuple[bool, int]:
    """One position: (accepted, output token). ``x`` is the drafted token (-1 for a failed row: clause
    2.3), ``u_accept`` the acceptance uniform, ``u_residual`` the uniform of the draw from
    normalise(max(0, p - q)) after a rejection (unused when x is accepted)."""
    vocab = len(p)
    pd = _dist("p", p, vocab)
    qd = _dist("q", q, vocab, may_be_zero=True)
    if not -1 <= x < vocab:
        raise ValueError(f"x must be a token ID or -1, got {x}")
    if x >= 0 and accept(pd[x], qd[x], u_accept):
        return True, x
    _uniform("u_accept", u_accept)
    r = residual(pd, qd)
    if sum(r, Fraction(0)) == 0:
        # p <= q everywhere, so p == q: then every x of q's support is accepted and this branch has
        # probability 0; reached only with an x that q did not draft
        raise ValueError(f"empty residual: p == q, and x = {x} has q(x) = 0")
    return False, draw(r, u_residual)


def verify_chain(
    p_rows: Sequence[Sequence[Any]],
    q_rows: Sequence[Sequence[Any]],
    drafts: Sequence[int],
    u_accept: Sequence[Any],
    u_final: Any,
) -> list[int]:
    """A drafted chain of k positions: the emitted tokens (the accepted prefix, then one more).

    ``drafts[j]`` was drawn from ``q_rows[j]`` after drafts[:j]; ``p_rows[j]`` is the target's
    distribution after the same prefix (k + 1 rows: the last one follows the whole draft).
    Position j accepts drafts[j] when u_accept[j] < p_j(x) / q_j(x); at the first rejection the
    last emitted token is drawn from normalise(max(0, p_j - q_j)) with ``u_final``, and if every
    position accepts, from p_k (the bonus token) with ``u_final``. One uniform per position and one
    for the final token, as vLLM's and SGLang's chain verifiers take them."""
    k = len(drafts)
    if len(q_rows) != k or len(u_accept) != k or len(p_rows) != k + 1:
        raise ValueError(f"{k} drafts need {k} q rows, {k} acceptance uniforms and {k + 1} p rows")
    emitted: list[int] = []
    for j in range(k):
        ok, token = verify_position(p_rows[j], q_rows[j], drafts[j], u_accept[j], u_final)
        emitted.append(token)
        if not ok:
            return emitted
    vocab = len(p_rows[k])
    emitted.append(draw(_dist("p", p_rows[k], vocab), u_final))
    return emitted
