"""Hypothesis strategies for dyadic24-floor-first-v1 calls, aimed at the edges of the rule.

Public API (usable from any project's tests):

- ``batches(profile)``: a whole call as ``dyadic24.api.CallInputs`` (B rows sharing V and tau), each
  row drawn from one of the row kinds below; the main strategy of the conformance fuzzing.
- ``spread_batches()``: rows whose e span many binades (the summation order of clause 6.2 shows).
- ``boundary_batches()``: rows whose ticket index u lands on a cumulative ticket boundary (clause 9.5).
- ``midpoint_batches()``: calls with tau = 1.0 and m = 0 whose d = z values are the binary32 z whose
  exp lies next to a rounding midpoint (clause 5.3), from vectors/data/exp_near_midpoints.json.
- ``logit_rows(vocab)``, ``temperatures()``, ``u64s()``, ``taus()``: the parts.

Bulk values of a row come from a numpy generator seeded by a drawn integer (throughput for V in
the thousands); the structure (row kind, V, tie counts, where -inf/NaN/+inf go, special values)
is drawn by hypothesis itself, so shrinking simplifies what matters.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

from dyadic24.api import TAU_DEFAULT_BITS, TICKETS, CallInputs

U32 = npt.NDArray[np.uint32]

POS_ZERO = 0x00000000
NEG_ZERO = 0x80000000
POS_INF = 0x7F800000
NEG_INF = 0xFF800000
QNAN = 0x7FC00000
ONE = 0x3F800000
MAX_FINITE = 0x7F7FFFFF
MIN_NORMAL = 0x00800000
MIN_SUBNORMAL = 0x00000001
MAX_SUBNORMAL = 0x007FFFFF

#: Finite logits at the edges: signed zeros, subnormals, the normal range ends, huge magnitudes.
EDGE_LOGITS: tuple[int, ...] = (
    POS_ZERO, NEG_ZERO, MIN_SUBNORMAL, MIN_SUBNORMAL | NEG_ZERO, MAX_SUBNORMAL, MAX_SUBNORMAL | NEG_ZERO,
    MIN_NORMAL, MIN_NORMAL | NEG_ZERO, ONE, ONE | NEG_ZERO, 0x40490FDB, 0xC2C80000,  # pi, -100
    0xC2CFF1B5, 0xC2D00000,  # about -103.97 (exp underflow edge) and -104
    MAX_FINITE, MAX_FINITE | NEG_ZERO, 0x7F000000, 0xFF000000,  # +-max, +-2^127 (l - m overflow)
)  # fmt: skip

#: Non-finite logits; NaN in several encodings (quiet, signalling, negative).
NANS: tuple[int, ...] = (QNAN, 0xFFC00000, 0x7F800001, 0x7FFFFFFF)
NON_FINITE: tuple[int, ...] = (NEG_INF, POS_INF, *NANS)
# Rows of the "special" kind hold non-finite values of one sort, or a mix (clause 2.1 precedence).
_SPECIAL_POOLS: tuple[tuple[int, ...], ...] = (NANS, (POS_INF,), (NEG_INF,), NON_FINITE)

#: tau bit patterns: tiny (least subnormal, least normal), small, 0.7 (default), 1.0, huge.
EDGE_TAUS: tuple[int, ...] = (
    TAU_DEFAULT_BITS, ONE, MIN_SUBNORMAL, 0x00000003, MAX_SUBNORMAL, MIN_NORMAL, 0x0DA24260,  # 1e-30
    0x358637BD, 0x3A83126F, 0x3F000000, 0x3F7FFFFF, 0x3F800001, 0x40000000, 0x42C80000,  # 1e-6, 1e-3 ..
    0x7149F2CA, 0x7F000000, MAX_FINITE,  # 1e30, 2^127, max
)  # fmt: skip

#: uint64 values at the word boundaries (clause 0.4), the high bit set.
EDGE_U64: tuple[int, ...] = (
    0, 1, 2, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1, (1 << 63) - 1, 1 << 63, (1 << 63) | 1,
    0xFFFFFFFF00000000, 0x00000000FFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF,
)  # fmt: skip

#: Temperatures by their effect (clause 2.1, 4.1): greedy (+-0), bad (NaN, < 0, +inf), sampled.
GREEDY_T = (POS_ZERO, NEG_ZERO)
BAD_T = (QNAN, 0xFFC00000, 0x7F800001, POS_INF, NEG_INF, ONE | NEG_ZERO, MIN_SUBNORMAL | NEG_ZERO)
SAMPLED_T = (ONE, 0x3F333333, MIN_SUBNORMAL, MIN_NORMAL, 0x3DCCCCCD, 0x40000000, MAX_FINITE)

ROW_KINDS: tuple[str, ...] = (
    "normal", "bf16", "spread", "ties", "top32_ties", "tied_max", "tile_edge_ties", "zeros", "masked",
    "subnormal", "huge", "bits", "special",
)  # fmt: skip
#: Tile boundaries of GPU implementations (tiles of 256 to 8,192 IDs and their multiples).
TILE_EDGES: tuple[int, ...] = (256, 512, 1024, 2048, 4096, 8192, 12288, 16384)


@dataclass(frozen=True)
class Profile:
    """Sizes of the drawn calls."""

    name: str
    max_rows: int
    max_vocab: int  # largest V drawn (V <= 33 stays the most frequent)
    examples: int  # default number of examples

    @property
    def big_vocab(self) -> int:
        return max(34, self.max_vocab)


CI = Profile("ci", max_rows=6, max_vocab=2048, examples=200)
DEEP = Profile("deep", max_rows=16, max_vocab=4096, examples=5000)
#: V beyond one GPU tile (every GPU implementation tiles the vocabulary): tile edges and a range above.
TILED_VOCABS: tuple[int, ...] = (4097, 8192, 8193, 12289, 16385, 20000)
TILED_MAX_ROWS = 2  # rows of a call with V > 4,096 (the Triton interpreter runs one tile program a second)


def bits_to_f32(bits: Sequence[int] | U32) -> npt.NDArray[np.float32]:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def f32_bits(values: npt.NDArray[Any]) -> U32:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def u64s() -> st.SearchStrategy[int]:
    """Seeds, rounds, positions: word-boundary values, the high bit set, or anything (clause 1.4)."""
    return st.one_of(
        st.sampled_from(EDGE_U64),
        st.integers(0, (1 << 64) - 1),
        st.integers(1 << 63, (1 << 64) - 1),
        st.integers(0, 1 << 20),
    )


def _moderate_f32_bits(lo: float, hi: float) -> st.SearchStrategy[int]:
    return st.floats(lo, hi, width=32).map(lambda v: int(np.float32(v).view(np.uint32)))


def taus() -> st.SearchStrategy[int]:
    """tau bits (clause 1.3): the default RN32(0.7) most often (what deployments run), edge values,
    moderate values (where every clause-6/7 step matters) or any."""
    return st.one_of(
        st.just(TAU_DEFAULT_BITS), st.just(TAU_DEFAULT_BITS), st.sampled_from(EDGE_TAUS),
        _moderate_f32_bits(0.0625, 16.0), st.integers(1, MAX_FINITE),
    )  # fmt: skip


def temperatures() -> st.SearchStrategy[int]:
    """T bits: mostly sampled rows, with greedy (+0, -0) and bad (NaN, negative, +inf) ones (clause 2.1)."""
    return st.one_of(
        st.sampled_from(SAMPLED_T),
        st.sampled_from(SAMPLED_T),
        st.sampled_from(SAMPLED_T),
        st.sampled_from(GREEDY_T),
        st.sampled_from(BAD_T),
        st.integers(0, 0xFFFFFFFF),
    )


def _f32(values: npt.NDArray[np.float64]) -> U32:
    with np.errstate(over="ignore"):
        return np.asarray(values).astype(np.float32).view(np.uint32)


@st.composite
def logit_rows(draw: st.DrawFn, vocab: int, tau: float = 1.0, kinds: Sequence[str] = ROW_KINDS) -> U32:
    """One row of V logits as binary32 bits, of a drawn kind (ties, -0/+0, -inf masks, ...).

    ``tau`` (the call's) scales the "spread" rows so that their z = d / tau span the range where
    exp results are neither 1 nor 0.
    """
    # beyond one GPU tile, the tile-edge ties are drawn more often (4 in 16)
    more = ("tile_edge_ties",) * 3 if vocab > 4096 and "tile_edge_ties" in kinds else ()
    kind = draw(st.sampled_from((*kinds, *more)))
    rng = np.random.default_rng(draw(st.integers(0, (1 << 32) - 1)))
    n = vocab
    if kind in ("normal", "bf16"):
        scale = draw(st.sampled_from((1e-3, 0.5, 1.0, 4.0, 30.0, 1e4, 1e30)))
        bits = _f32(rng.standard_normal(n) * scale)
        if kind == "bf16":  # bfloat16 logits widened (clause 1.2): coarse values, many exact ties
            bits = bits & np.uint32(0xFFFF0000)
    elif kind == "spread":
        # One maximum and values tens of units below it: e spans many binades, so the binary64
        # sums of clause 6.2 round, and the summation order shows.
        low = draw(st.integers(0, 40))
        values = -rng.uniform(low, low + draw(st.integers(1, 40)), n) * min(tau, 1e30)
        values[rng.integers(0, n)] = 0.0
        bits = _f32(values + draw(st.sampled_from((0.0, 0.0, 3.25, -1000.0, 1e5))))
    elif kind == "ties":
        pool = draw(st.lists(st.sampled_from((*EDGE_LOGITS[:12], NEG_INF)), min_size=1, max_size=4))
        bits = np.asarray(pool, dtype=np.uint32)[rng.integers(0, len(pool), n)]
    elif kind == "top32_ties":
        # A tie group straddling the K = 32 boundary (clauses 3.1-3.2): n_top tokens share the top
        # value, n_tie the next one, the rest are lower or -inf.
        top, tie, low = sorted(draw(st.lists(st.integers(-200, 200), min_size=3, max_size=3)), reverse=True)
        n_top = draw(st.integers(0, min(n, 40)))
        n_tie = draw(st.integers(0, n - n_top))
        values = np.concatenate(
            [np.full(n_top, top / 8.0), np.full(n_tie, tie / 8.0), np.full(n - n_top - n_tie, low / 8.0)]
        )
        bits = _f32(values)
        if draw(st.booleans()):
            bits[n_top + n_tie :] = NEG_INF
        if draw(st.booleans()):  # signed zeros compare equal (clause 3.1)
            zero = bits == 0
            bits[zero & (rng.random(n) < 0.5)] = NEG_ZERO
        bits = bits[rng.permutation(n)]
    elif kind == "tied_max":
        # the maximum at 2-5 IDs (one of them possibly -0 against +0): a greedy row must take the lowest
        # ID (clause 4.1), a sampled one gives the tied tokens equal tickets (clause 5.4)
        top = draw(st.sampled_from((POS_ZERO, ONE, 0x40490FDB, 0xC2C80000)))  # 0, 1, pi, -100
        below = np.float32(np.uint32(top).view(np.float32)) - np.float32(1) - np.abs(rng.standard_normal(n))
        bits = below.astype(np.float32).view(np.uint32).copy()
        where = rng.choice(n, size=min(n, draw(st.integers(2, 5))), replace=False)
        bits[where] = top
        if top == POS_ZERO and draw(st.booleans()):
            bits[where[0]] = NEG_ZERO  # -0 == +0 (clause 3.1)
    elif kind == "tile_edge_ties":
        # The top value tied at IDs on both sides of a tile boundary (one of the three largest below V),
        # the group sometimes straddling the K = 32 cut: a tiled implementation must merge ties by
        # token ID, not by tile (clause 3.1), and give the remainder to the lowest tied ID (7.3).
        cut = draw(st.sampled_from([b for b in TILE_EDGES if b < n][-3:] or [max(1, n // 2)]))
        n_low, n_high = draw(st.integers(1, 24)), draw(st.integers(1, 24))
        peak = np.float32(draw(st.sampled_from((0.0, 1.0, -3.5, 17.25))))
        row = peak - np.float32(1) - np.abs(rng.standard_normal(n)).astype(np.float32)
        row[max(0, cut - n_low) : min(n, cut + n_high)] = peak
        bits = row.view(np.uint32).copy()
    elif kind == "zeros":
        zero_pool = np.array([POS_ZERO, NEG_ZERO, POS_ZERO, NEG_ZERO, MIN_SUBNORMAL | NEG_ZERO,
                              ONE | NEG_ZERO, NEG_INF], dtype=np.uint32)  # fmt: skip
        bits = zero_pool[rng.integers(0, len(zero_pool), n)]
    elif kind == "masked":
        # Fewer than 32 finite logits, -inf between them (clause 3.2: C holds -inf tokens).
        finite = draw(st.integers(0, min(n, 33)))
        bits = np.full(n, NEG_INF, dtype=np.uint32)
        where = rng.choice(n, size=finite, replace=False)
        bits[where] = _f32(rng.standard_normal(finite) * draw(st.sampled_from((0.01, 1.0, 100.0))))
    elif kind == "subnormal":
        mags = rng.integers(0, MIN_NORMAL, n, dtype=np.uint32)
        signs = (rng.random(n) < 0.5).astype(np.uint32) << np.uint32(31)
        bits = mags | signs
    elif kind == "huge":
        # l - m overflows to -inf for opposite-signed huge logits (clause 5.1).
        exps = rng.integers(250, 255, n).astype(np.uint32) << np.uint32(23)
        mants = rng.integers(0, 1 << 23, n, dtype=np.uint32)
        signs = (rng.random(n) < 0.5).astype(np.uint32) << np.uint32(31)
        bits = exps | mants | signs
        small = rng.random(n) < 0.2
        bits[small] = _f32(rng.standard_normal(int(small.sum())))
    elif kind == "bits":
        bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    else:  # "special": a plain row with non-finite values placed by hypothesis below
        bits = _f32(rng.standard_normal(n))
    bits = np.array(bits, dtype=np.uint32)
    # Edge values dropped in; kept occasional, as a large one becomes the maximum and hides the row's shape.
    edge = st.tuples(st.integers(0, n - 1), st.sampled_from(EDGE_LOGITS))
    edits = draw(st.lists(edge, min_size=1, max_size=3)) if draw(st.integers(0, 3)) == 0 else []
    for pos, value in edits:
        bits[pos] = value
    # NaN/+inf fail the row (clause 2.1): always present in "special" rows, rare elsewhere.
    if kind == "special":
        pool = draw(st.sampled_from(_SPECIAL_POOLS))
        placed = draw(
            st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from(pool)), min_size=1, max_size=3)
        )
    elif draw(st.integers(0, 7)) == 0:
        placed = [(draw(st.integers(0, n - 1)), draw(st.sampled_from((POS_INF, NEG_INF, QNAN))))]
    else:
        placed = []
    for pos, value in placed:
        bits[pos] = value
    return bits


@st.composite
def vocab_sizes(draw: st.DrawFn, profile: Profile) -> int:
    """V by band, the band drawn by explicit weight (hypothesis's one_of favours its first branches):
    8 in 20 around K = 32 (1..33, the edges 1, 2, 31, 32, 33 among them; clause 3.2), 5 in 20 34..300,
    5 in 20 up to the profile's limit, 2 in 20 beyond one GPU tile (TILED_VOCABS)."""
    band = draw(st.sampled_from(range(20)))
    if band < 6:
        return draw(st.integers(1, 33))
    if band < 8:
        return draw(st.sampled_from((1, 2, 31, 32, 33)))
    if band < 13:
        return draw(st.integers(34, 300))
    if band < 18:
        return draw(st.integers(34, profile.big_vocab))
    return draw(st.sampled_from(TILED_VOCABS))


def call_inputs(
    logit_bits: U32,
    *,
    temperature_bits: Sequence[int],
    seed: Sequence[int],
    round: Sequence[int],
    position: Sequence[int],
    tau_bits: int,
) -> CallInputs:
    """CallInputs from bit patterns (clause 1)."""
    return CallInputs(
        logits=np.ascontiguousarray(np.asarray(logit_bits, dtype=np.uint32).view(np.float32)),
        temperature=bits_to_f32(list(temperature_bits)),
        seed=np.array(seed, dtype=np.uint64),
        round=np.array(round, dtype=np.uint64),
        position=np.array(position, dtype=np.uint64),
        tau_bits=int(tau_bits),
    )


@st.composite
def _plain_batches(
    draw: st.DrawFn,
    profile: Profile,
    vocab: st.SearchStrategy[int] | None = None,
    tau: st.SearchStrategy[int] | None = None,
    kinds: Sequence[str] = ROW_KINDS,
) -> CallInputs:
    v = draw(vocab if vocab is not None else vocab_sizes(profile))
    rows = draw(st.integers(1, profile.max_rows if v <= 4096 else min(profile.max_rows, TILED_MAX_ROWS)))
    tau_bits = draw(tau if tau is not None else taus())
    tau_value = float(bits_to_f32([tau_bits])[0])
    logit = np.stack([draw(logit_rows(v, tau_value, kinds)) for _ in range(rows)])
    return call_inputs(
        logit,
        temperature_bits=[draw(temperatures()) for _ in range(rows)],
        seed=[draw(u64s()) for _ in range(rows)],
        round=[draw(u64s()) for _ in range(rows)],
        position=[draw(u64s()) for _ in range(rows)],
        tau_bits=tau_bits,
    )


def spread_batches(profile: Profile = CI) -> st.SearchStrategy[CallInputs]:
    """Rows whose e span many binades, at moderate tau: the summation order of clause 6.2 shows in S."""
    return _plain_batches(profile, st.integers(8, 64), _moderate_f32_bits(0.25, 4.0), ("spread",))


def midpoints_path() -> Path:
    return Path(__file__).resolve().parent.parent / "vectors" / "data" / "exp_near_midpoints.json"


@cache
def near_midpoint_z() -> tuple[int, ...]:
    """Binary32 z in [-104, 0] whose exp lies next to a rounding midpoint (empty if the file is absent)."""
    path = midpoints_path()
    if not path.is_file():
        return ()
    data = json.loads(path.read_text(encoding="utf-8"))
    found = {int(entry["z"], 16) for entry in data.get("entries", [])}
    z = np.array(sorted(found), dtype=np.uint32)
    values = z.view(np.float32)
    keep = (values <= 0) & (values >= -104)  # z = d <= 0 in the rule (clause 5.1)
    return tuple(int(b) for b in z[keep])


@st.composite
def midpoint_batches(draw: st.DrawFn, profile: Profile = CI) -> CallInputs:
    """tau = 1.0, m = 0 (either sign): z_i = d_i = l_i exactly, set to near-midpoint z (clause 5.3)."""
    pool = near_midpoint_z()
    vocab = draw(st.integers(2, 40))
    rows = draw(st.integers(1, profile.max_rows))
    logit = np.empty((rows, vocab), dtype=np.uint32)
    for r in range(rows):
        logit[r] = [draw(st.sampled_from(pool)) for _ in range(vocab)]
        logit[r, draw(st.integers(0, vocab - 1))] = draw(st.sampled_from((POS_ZERO, NEG_ZERO)))
    return call_inputs(
        logit,
        temperature_bits=[draw(st.sampled_from(SAMPLED_T)) for _ in range(rows)],
        seed=[draw(u64s()) for _ in range(rows)],
        round=[draw(u64s()) for _ in range(rows)],
        position=[draw(u64s()) for _ in range(rows)],
        tau_bits=ONE,
    )


def _two_token_count(z_bits: int) -> int:
    """c of the non-argmax token of a row holding logits 0 and z at tau = 1 (clause 7).

    The same arithmetic as clauses 5.3-7.2 for two slots: floor(RN64(e / RN64(e + 1)) * 2^24).
    """
    from dyadic24.reference.fast_exp import exp32_np

    e = float(exp32_np(np.array([z_bits], dtype=np.uint32).view(np.float32))[0])
    return int(np.floor(np.float64(e) / (np.float64(e) + 1.0) * float(TICKETS)))


_Z_LIMIT = 0x42D00000  # 104.0: exp(-104) rounds to +0 (clause 5.3)


def z_for_count(target: int) -> int | None:
    """Bits of a z <= 0 whose two-token count is ``target`` (1 <= target <= 2^23), if one exists.

    The count falls as |z| grows, so a binary search over the magnitude bits finds it.
    """
    lo, hi = 0, _Z_LIMIT
    while lo < hi:  # the smallest magnitude whose count is <= target
        mid = (lo + hi) // 2
        if _two_token_count(mid | NEG_ZERO) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo | NEG_ZERO if _two_token_count(lo | NEG_ZERO) == target else None


@st.composite
def boundary_batches(draw: st.DrawFn, profile: Profile = CI) -> CallInputs:
    """Rows whose ticket index u lands on (or next to) a cumulative ticket boundary (clause 9.5).

    Each row has two finite logits (0 and z) among -inf ones and tau = 1.0; u is computed with the
    reference Philox for the drawn seed, round and position (clauses 9.2-9.4) and z is chosen so
    that the lower-ID support entry ends exactly at u: the half-open intervals of clause 9.5 then
    pick the higher-ID entry, a closed-interval implementation the lower one.
    """
    from dyadic24.reference.philox import draw_block, ticket_index

    vocab = draw(st.integers(2, 40))
    rows = draw(st.integers(1, profile.max_rows))
    logit = np.full((rows, vocab), NEG_INF, dtype=np.uint32)
    seeds, rounds, positions = [], [], []
    for r in range(rows):
        s, n, p = draw(u64s()), draw(u64s()), draw(u64s())
        seeds.append(s)
        rounds.append(n)
        positions.append(p)
        u = ticket_index(draw_block(s, n, p)) + draw(st.sampled_from((0, 0, 0, 1, -1)))
        i = draw(st.integers(0, vocab - 2))
        j = draw(st.integers(i + 1, vocab - 1))
        # The lower-ID entry ends at u: it is the non-argmax token (c_i = u) when u <= 2^23, else
        # the argmax one (t_i = 2^24 - c_j).
        low_is_max = u > TICKETS // 2
        target = TICKETS - u if low_is_max else u
        z = z_for_count(target) if 1 <= target <= TICKETS // 2 else None
        if z is None:
            z = 0xBF800000  # -1.0: an ordinary two-token row
        logit[r, i], logit[r, j] = (POS_ZERO, z) if low_is_max else (z, POS_ZERO)
    temps = [draw(st.sampled_from(SAMPLED_T)) for _ in range(rows)]
    return call_inputs(
        logit, temperature_bits=temps, seed=seeds, round=rounds, position=positions, tau_bits=ONE
    )


@st.composite
def _mixed(draw: st.DrawFn, profile: Profile) -> CallInputs:
    # the kind of call drawn by explicit weight, as in vocab_sizes: 3 plain to each special kind
    special = [boundary_batches(profile), spread_batches(profile)]
    if near_midpoint_z():
        special.append(midpoint_batches(profile))
    pick = draw(st.sampled_from(range(3 + len(special))))
    return draw(_plain_batches(profile) if pick < 3 else special[pick - 3])


def batches(profile: Profile = CI) -> st.SearchStrategy[CallInputs]:
    """Mixed calls of several rows (clause 2.4 isolation), plus near-midpoint and ticket-boundary calls."""
    return _mixed(profile)
