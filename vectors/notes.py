"""The notes table of the vector files: for every flag, the mistake its vectors catch and what that
mistake does in production (in the spirit of Wycheproof's ``notes``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Note:
    bug_type: str  # "edge case" | "wrong order" | "wrong rounding" | "wrong algorithm" | "wrong status" | ...
    description: str  # what the vectors exercise and which mistake they catch
    effect: str  # what the mistake would do in production
    clauses: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "bugType": self.bug_type,
            "description": self.description,
            "effect": self.effect,
            "clauses": list(self.clauses),
        }


_DIVERGE = (
    "The drafter and the verifier (or two replicas) disagree on q, so speculative decoding accepts or "
    "rejects with the wrong ratio: the output distribution is silently biased and runs stop being "
    "reproducible across implementations."
)
_CRASH = "A row that should fail is sampled (garbage token, possible NaN propagation into other rows)."

NOTES: dict[str, Note] = {
    # ---- status (clause 2)
    "nan_first": Note(
        "wrong status",
        "A NaN logit at ID 0. Catches scans that start at ID 1 or treat ID 0 as "
        "the initial maximum without checking it.",
        _CRASH,
        ("2.1",),
    ),
    "nan_last": Note(
        "wrong status",
        "A NaN logit at the last ID. Catches scans that stop one short or only look at the candidates.",
        _CRASH,
        ("2.1",),
    ),
    "nan_candidate": Note(
        "wrong status",
        "A NaN at an ID that would otherwise be a top-32 candidate. Catches "
        "comparisons that silently order NaN (max() ignoring NaN).",
        _CRASH,
        ("2.1",),
    ),
    "nan_non_candidate": Note(
        "wrong status",
        "A NaN at an ID outside the top 32. Catches implementations that check only the candidates for NaN.",
        _CRASH,
        ("2.1",),
    ),
    "nan_payload": Note(
        "wrong status",
        "NaNs with a sign bit, signalling NaNs and full payloads. Catches NaN "
        "tests that compare against one canonical bit pattern.",
        _CRASH,
        ("2.1", "0.2"),
    ),
    "pinf_first": Note("wrong status", "+inf at ID 0.", _CRASH + " l - m becomes NaN.", ("2.1",)),
    "pinf_last": Note("wrong status", "+inf at the last ID.", _CRASH, ("2.1",)),
    "pinf_candidate": Note(
        "wrong status",
        "+inf at a top-32 position (or the only non -inf logit). Catches "
        "implementations that sample it (inf - inf = NaN) or report ZERO_MASS.",
        _CRASH,
        ("2.1",),
    ),
    "pinf_non_candidate": Note(
        "wrong status",
        "+inf outside what would be the candidates. Catches +inf checks limited to C.",
        _CRASH,
        ("2.1",),
    ),
    "nan_and_pinf": Note(
        "wrong status",
        "NaN and +inf in one row, in either ID order. NAN_LOGIT takes "
        "precedence; catches first-found-wins scans.",
        "The wrong error code is reported.",
        ("2.1",),
    ),
    "all_neg_inf": Note(
        "wrong status",
        "Every logit -inf: ZERO_MASS (also before greedy and bad temperature). "
        "Catches 0/0 = NaN probabilities and greedy rows that return ID 0.",
        "A fully masked row produces a token instead of an error.",
        ("2.1",),
    ),
    "status_precedence": Note(
        "wrong status",
        "Several failure causes in one row; the first in the clause-2.1 list wins.",
        "The wrong error code is reported.",
        ("2.1", "2.2"),
    ),
    "bad_temperature_nan": Note(
        "wrong status",
        "T is NaN (several payloads). Catches `T <= 0` style tests that are false for NaN.",
        _CRASH,
        ("2.1",),
    ),
    "bad_temperature_negative": Note(
        "wrong status",
        "T < 0 (finite). Catches implementations that take |T| or treat T <= 0 as greedy.",
        "A negative temperature is silently accepted.",
        ("2.1",),
    ),
    "bad_temperature_neg_inf": Note(
        "wrong status", "T = -inf.", "A negative temperature is silently accepted.", ("2.1",)
    ),
    "bad_temperature_pos_inf": Note(
        "wrong status",
        "T = +inf. Catches `T > 0` tests that accept +inf.",
        "An infinite temperature is silently accepted.",
        ("2.1",),
    ),
    "bad_temperature_neg_subnormal": Note(
        "wrong status",
        "T is a negative subnormal. Catches FTZ/DAZ "
        "hardware that flushes it to -0 and so takes the greedy path.",
        "Bad temperatures become greedy rows on some hardware only.",
        ("2.1", "0.3"),
    ),
    "temperature_pos_subnormal": Note(
        "edge case",
        "T is a positive subnormal (or the largest finite "
        "binary32): a valid sampling temperature. Catches FTZ/DAZ flushing T "
        "to 0 (greedy) and range checks on T.",
        "Rows are greedy on some hardware and sampled on others.",
        ("2.1", "4.1"),
    ),
    "mixed_status_batch": Note(
        "row isolation",
        "One call mixing every status with greedy and sampled rows. "
        "Catches batch-level early exits and masks that leak between rows.",
        "One bad row changes or fails its neighbours.",
        ("2.1", "2.4"),
    ),
    "row_isolation": Note(
        "row isolation",
        "The same row at several batch indices and next to different neighbours must give the same outputs.",
        "Outputs depend on batching, so replays with another batch size diverge.",
        ("2.4",),
    ),
    # ---- order (clause 3) and greedy (clause 4)
    "tie_at_boundary": Note(
        "wrong order",
        "Equal logits straddle the top-32 boundary; the lower IDs are in C. "
        "Catches unstable top-k (torch.topk, radix select) and ties broken by higher ID.",
        _DIVERGE,
        ("3.1", "3.2"),
    ),
    "signed_zero_tie": Note(
        "wrong order",
        "-0 and +0 are equal under clause 3.1; only the ID orders them. "
        "Catches ordering by bit pattern or total order (-0 < +0).",
        _DIVERGE,
        ("3.1", "3.3"),
    ),
    "argmax_tie": Note(
        "wrong order",
        "Several maximal logits: a* is the lowest ID and takes the remainder R. "
        "Catches argmax returning the last maximum.",
        _DIVERGE,
        ("3.3", "7.3"),
    ),
    "few_finite": Note(
        "edge case",
        "Fewer than 32 finite logits: C is filled with -inf tokens of the lowest "
        "IDs (e = +0). Catches C truncated to the finite tokens (changes the slot layout and so "
        "the tree) and -inf - m = NaN.",
        _DIVERGE,
        ("3.2", "5.1", "6.1"),
    ),
    "one_finite": Note(
        "edge case",
        "Exactly one finite logit: S = 1 and it gets 2^24 tickets.",
        "A masked row with one allowed token fails or picks a masked one.",
        ("3.2", "6.3"),
    ),
    "neg_inf_interleaved": Note(
        "edge case",
        "-inf tokens sit between finite ones in ID order inside C; their "
        "+0 slots shape the clause-6.2 tree (decision D6). Catches slot layouts that "
        "compact the finite values.",
        _DIVERGE,
        ("3.2", "6.1", "6.2"),
    ),
    "mask_shape_matters": Note(
        "wrong algorithm",
        "A row whose S and tickets change if the finite e values are "
        "compacted into the first slots instead of sitting at their ID positions.",
        _DIVERGE,
        ("6.1", "6.2"),
    ),
    "vocab_1": Note(
        "edge case",
        "V = 1: K = 1, 31 zero slots.",
        "Out-of-bounds reads or a crash for tiny vocabularies.",
        ("3.2",),
    ),
    "vocab_lt_32": Note(
        "edge case",
        "V < 32: K = V, slots K..31 are +0. Catches padding with a value other "
        "than +0 and fixed-32 loops reading past V.",
        "Out-of-bounds reads or wrong q.",
        ("3.2", "6.1"),
    ),
    "vocab_32": Note(
        "edge case", "V = 32: every token is a candidate.", "Off-by-one at the boundary.", ("3.2",)
    ),
    "vocab_33": Note(
        "edge case", "V = 33: exactly one token is left out.", "Off-by-one at the boundary.", ("3.2",)
    ),
    "negative_logits": Note(
        "wrong order",
        "Negative logits (and -0) ordered by value. Catches sorting raw bit "
        "patterns as unsigned or signed integers.",
        _DIVERGE,
        ("3.1",),
    ),
    "greedy_pos_zero": Note(
        "edge case",
        "T = +0: token a*, support [a*] with 2^24 tickets, no Philox.",
        "Greedy rows consume randomness or divide by T.",
        ("4.1", "4.2", "10.3"),
    ),
    "greedy_neg_zero": Note(
        "edge case",
        "T = -0 is greedy too (T == 0 under IEEE). Catches `T > 0` / sign-bit "
        "tests that report BAD_TEMPERATURE or sample.",
        "-0 temperatures fail or sample.",
        ("2.1", "4.1"),
    ),
    # ---- arithmetic (clause 5)
    "subnormal_logit": Note(
        "edge case",
        "Subnormal logits. Catches DAZ (inputs flushed to zero) which changes the order and the differences.",
        "Results differ between hardware modes.",
        ("0.3", "3.1", "5.1"),
    ),
    "subnormal_difference": Note(
        "edge case",
        "d = RN32(l - m) is subnormal. Catches FTZ on the subtraction.",
        "Results differ between hardware modes.",
        ("0.3", "5.1"),
    ),
    "subnormal_z": Note(
        "edge case",
        "z = RN32(d / tau) is subnormal. Catches FTZ on the division.",
        "Results differ between hardware modes (visible in the trace).",
        ("0.3", "5.2"),
    ),
    "z_underflow": Note(
        "edge case",
        "d / tau underflows to -0 (or a subnormal) although d != 0; exp(-0) = 1.",
        "Results differ between hardware modes.",
        ("0.3", "5.2", "5.3"),
    ),
    "subnormal_exp": Note(
        "edge case",
        "e = RN32(exp z) is subnormal (z in about [-103.97, -87.34]). Catches "
        "FTZ on exp and exp kernels that return 0 below FLT_MIN in the trace. A flushed e is below "
        "2^-126, so it usually vanishes in S and the tickets; usually is not always: it can decide a "
        "binary64 tie in the tree and change S and the tickets (flag ftz_exp_decides_tie).",
        "Traces differ between hardware modes; in rare rows (ftz_exp_decides_tie) the tickets too.",
        ("0.3", "5.3"),
    ),
    "ftz_exp_decides_tie": Note(
        "wrong rounding",
        "A subnormal e decides two chained binary64 ties of the clause-6.2 tree: e values (each "
        "RN32(exp z) of a binary32 z, found by vectors/search_edges.py) sum exactly to h = T * 2^-53 in "
        "one subtree and to h * 2^-53 in another, the subnormal e joins the latter, and T = 2 or 4 "
        "(e = 1 values) fills the other half of the tree. Kept, the subnormal tips h + h * 2^-53 up to "
        "h + ulp(h) and then T + h + ulp(h) up to S = T + ulp(T); flushed to zero (FTZ on exp), both "
        "sums are exact ties that round to even, S = T, and p = 1/T gives 2^24 / T tickets to each "
        "e = 1 token instead of one fewer (the remainder then differs too). Catches FTZ / DAZ exp "
        "kernels and exp routines that return 0 below FLT_MIN in the output arrays, not only the trace.",
        _DIVERGE,
        ("0.3", "5.3", "6.2"),
    ),
    "tiled_softmax": Note(
        "wrong rounding",
        "V > 4,096 with candidates of substantial mass in several 4,096-ID tiles. Catches a "
        "vocabulary-tiled (online, flash-style) softmax that exponentiates against each tile's "
        "maximum m_t and rescales: e = RN32(RN32(exp((l - m_t) / tau)) * RN32(exp((m_t - m) / tau))) "
        "rounds three times instead of once, so e is off by an ulp for candidates outside the "
        "argmax's tile and the tickets change.",
        _DIVERGE,
        ("5.1", "5.2", "5.3"),
    ),
    "tile_merge_ties": Note(
        "wrong order",
        "V > 4,096 with the maximum, or the 32nd value, tied between tokens of different 4,096-ID tiles. "
        "Catches a merge of per-tile candidate lists that breaks ties by tile (the later tile first, "
        "as a reduction that walks the tiles from the end and keeps the incumbent on equality does) "
        "instead of by token ID: a* moves (the greedy token and the remainder's owner) or C changes "
        "(ids).",
        "Greedy decoding picks another token than argmax; q differs for tied rows.",
        ("3.1", "3.2", "3.3"),
    ),
    "exp_underflow": Note(
        "edge case",
        "z just below and above the point where exp(z) rounds to +0 or to the least subnormal.",
        "Off-by-one-ulp exp near underflow.",
        ("5.3",),
    ),
    "difference_overflow": Note(
        "edge case",
        "l - m overflows to -inf (e.g. l = -3e38, m = 3e38): e = 0. "
        "Catches NaN from inf arithmetic and saturating subtraction.",
        "NaN or wrong mass for rows with huge logits.",
        ("0.3", "5.1"),
    ),
    "difference_overflow_edge": Note(
        "wrong rounding",
        "The exact l - m is the rounding midpoint between the "
        "largest binary32 and 2^128 (rounds to -inf) or just inside it.",
        "Wrong overflow threshold.",
        ("0.3", "5.1"),
    ),
    "z_overflow": Note(
        "edge case",
        "d / tau overflows to -inf for a tiny tau; exp(-inf) = +0.",
        "NaN or wrong mass for tiny tau.",
        ("0.3", "5.2", "5.3"),
    ),
    "tau_tiny": Note(
        "edge case",
        "tau is tiny (subnormal or near FLT_MIN): most z overflow to -inf. "
        "Catches reciprocal overflow (1/tau = inf) and FTZ of tau.",
        _DIVERGE,
        ("1.3", "5.2"),
    ),
    "tau_huge": Note(
        "edge case",
        "tau is huge (up to the largest binary32): z underflows, all e near 1.",
        _DIVERGE,
        ("1.3", "5.2"),
    ),
    "tau_one": Note("edge case", "tau = 1: z = d exactly.", _DIVERGE, ("1.3", "5.2")),
    "tau_other": Note("edge case", "Other tau values (0.5, 2, 1.3, 1/3).", _DIVERGE, ("1.3", "5.2")),
    "tau_division": Note(
        "wrong rounding",
        "RN32(d / tau) differs from RN32(d * RN32(1 / tau)) and the tickets "
        "change. Catches division by multiplication with a reciprocal.",
        _DIVERGE,
        ("5.2",),
    ),
    "difference_rounding": Note(
        "wrong rounding",
        "z computed from the unrounded l - m (fused, or in binary64) "
        "differs from RN32(RN32(l - m) / tau), and the tickets change.",
        _DIVERGE,
        ("5.1", "5.2"),
    ),
    "exp_via_exp2": Note(
        "wrong rounding",
        "RN32(exp z) differs from exp2(RN32(z * log2 e)) (the usual GPU "
        "fast path, ex2.approx / __expf) and the tickets change.",
        _DIVERGE,
        ("5.3",),
    ),
    "exp_near_midpoint": Note(
        "wrong rounding",
        "z whose exact exp lies within 2^-47 of a binary32 rounding "
        "midpoint (vectors/data/exp_near_midpoints.json), reached exactly with tau = 1 "
        "and m = 0. Catches exp evaluated in binary64 and rounded to binary32 (double "
        "rounding) and exp kernels accurate to less than 2^-47.",
        _DIVERGE,
        ("5.3",),
    ),
    # ---- tree (clause 6)
    "tree_vs_sequential": Note(
        "wrong algorithm",
        "A left-to-right binary64 sum of the slots gives another S "
        "and other tickets than the clause-6.2 tree.",
        _DIVERGE,
        ("6.2",),
    ),
    "tree_vs_descending": Note(
        "wrong algorithm",
        "A binary64 sum in descending order of e (the C order) gives another S and other tickets.",
        _DIVERGE,
        ("6.1", "6.2"),
    ),
    "tree_vs_numpy": Note(
        "wrong algorithm",
        "numpy.sum of the binary64 slots (its 8-way unrolled pairwise "
        "sum) gives another S and other tickets.",
        _DIVERGE,
        ("6.2",),
    ),
    "sum_binary32": Note(
        "wrong rounding", "Summing e in binary32 gives another S and other tickets.", _DIVERGE, ("6.2",)
    ),
    # ---- allocation (clauses 7-8)
    "largest_remainder_differs": Note(
        "wrong algorithm",
        "Largest-remainder (Hamilton) allocation of R differs from giving all of R to a*.",
        _DIVERGE,
        ("7.3",),
    ),
    "near_integer_count": Note(
        "wrong rounding",
        "Some p_i * 2^24 lies within 2^-20 of an integer (not exactly "
        "on it). Catches p in binary32, floor(e * 2^24 / S) in other precisions and "
        "round() instead of floor().",
        _DIVERGE,
        ("7.1", "7.2"),
    ),
    "remainder_zero": Note(
        "edge case", "R = 0: the counts already sum to 2^24.", "Off-by-one in the remainder.", ("7.3", "7.4")
    ),
    "remainder_max": Note(
        "edge case",
        "The largest R the generator could construct.",
        "Overflow of a narrow remainder field or bounds that assume small R.",
        ("7.3", "7.4"),
    ),
    "remainder_to_argmax": Note(
        "wrong algorithm",
        "R > 0 and a* is not the lowest-ID support entry. Catches R "
        "given to the first support entry or to slot 0.",
        _DIVERGE,
        ("7.3", "8.1"),
    ),
    "zero_ticket_excluded": Note(
        "edge case",
        "Candidates with e > 0 but 0 tickets are left out of the support. "
        "Catches supports built from e > 0 or from C.",
        "Support lists differ.",
        ("8.1",),
    ),
    "p_reciprocal": Note(
        "wrong rounding",
        "Rows [0, z1, z2] (tau = 1) where e / S * 2^24 lies within about one binary64 ulp of an "
        "integer for a token other than a*, found by sweeping every binary32 z1 in [-17, 0) "
        "(vectors/search_edges.py). Catches p = e * RN64(1 / S) (a reciprocal multiplied instead of "
        "the division of clause 7.1): a count, hence the tickets, changes.",
        _DIVERGE,
        ("7.1", "7.2"),
    ),
    "p_binary32": Note(
        "wrong rounding",
        "p computed in binary32 (or the counts from binary32 p) changes the tickets.",
        _DIVERGE,
        ("7.1",),
    ),
    # ---- draw (clauses 9-10)
    "philox_mulhi_double": Note(
        "wrong algorithm",
        "Seeds whose proposal key (clause 9.2), or (seed, round, position) whose draw block (clause 9.3, "
        "with the right key), changes when Philox's 32 x 32 -> 64-bit products take their high word "
        "from binary64 (hi = floor(RN64(a * b) / 2^32)), on a uniform 32-way row so that the token "
        "shows it; one vector per first wrong product by M0 and by M1 (vectors/search_edges.py). "
        "Catches Philox ports without a 64-bit integer multiply (JavaScript, WGSL, shaders) that pass "
        "the known-answer tests of clause 9.1.",
        "A few draws per million pick another token: two implementations disagree on rare rows only, "
        "which survives ordinary testing.",
        ("9.1", "9.2", "9.3"),
    ),
    "seed_high_bits": Note(
        "wrong algorithm",
        "Seeds with the high 32 bits set (and rows differing only there). "
        "Catches 32-bit seeds and swapped key words.",
        "Streams collide across seeds.",
        ("0.4", "9.2"),
    ),
    "round_high_bits": Note(
        "wrong algorithm",
        "Rounds with the high 32 bits set. Catches truncated counters.",
        "Draws repeat across rounds.",
        ("0.4", "9.3"),
    ),
    "position_high_bits": Note(
        "wrong algorithm",
        "Positions with the high 32 bits set. Catches truncated or swapped counter words.",
        "Draws repeat across positions.",
        ("0.4", "9.3"),
    ),
    "draw_first_ticket": Note(
        "wrong algorithm",
        "u is the first ticket of the chosen interval. Catches "
        "off-by-one interval searches (<= instead of <).",
        _DIVERGE,
        ("9.5",),
    ),
    "draw_last_ticket": Note(
        "wrong algorithm", "u is the last ticket of the chosen interval.", _DIVERGE, ("9.5",)
    ),
    "draw_u_extreme": Note(
        "edge case", "u = 0 or u = 2^24 - 1.", "Out-of-range interval searches.", ("9.4", "9.5")
    ),
    "interval_order": Note(
        "wrong algorithm",
        "The cumulative intervals in ascending-ID order pick another "
        "token than intervals in the C order would. Catches sampling over the sorted list.",
        _DIVERGE,
        ("9.5",),
    ),
    "philox_extremes": Note(
        "edge case",
        "Seed, round and position 0 and 2^64 - 1.",
        "Wrong key or counter handling at the extremes.",
        ("9.2", "9.3"),
    ),
    "consecutive_positions": Note(
        "wrong algorithm",
        "One proposal of depth d as d rows at consecutive absolute "
        "positions with one seed and round. Catches draws keyed by the depth index "
        "or a running counter.",
        "Draws repeat or shift between steps.",
        ("10.1", "10.2"),
    ),
    "ticket_bits": Note(
        "wrong algorithm",
        "Rows where u = x[0] >> 8 picks another token than the low 24 bits, or x[1], would.",
        _DIVERGE,
        ("9.4",),
    ),
    # ---- large V, widening
    "vocab_large": Note(
        "edge case",
        "V = 163,840 (IDs above 2^16 and 2^17, long scans) and V = 8,192 to 16,384 (several 4,096-ID "
        "tiles; V = 12,289 ends in a partial one).",
        "Truncated IDs or partial scans for real vocabularies.",
        ("1.1", "3.2"),
    ),
    "binary16_representable": Note(
        "edge case",
        "Every logit is exactly representable in binary16 (the narrow "
        "form is given too): widening is exact (clause 1.2), so a binary16 "
        "implementation must give these outputs.",
        "fp16 models diverge.",
        ("1.2",),
    ),
    "binary16_subnormal_max": Note(
        "edge case",
        "The largest logits are binary16 subnormals (k * 2^-24): widened exactly they are distinct "
        "binary32 normals (clause 1.2). A binary16 input flushed to zero on conversion (FTZ/DAZ) makes "
        "them +0 ties and the negative ones -0, which moves the argmax to a lower ID: the greedy token, "
        "and a sampled row's remainder and tickets, differ in the outputs alone.",
        "fp16 drafters on hardware or kernels that flush half subnormals propose another token.",
        ("1.2", "3.1", "3.3"),
    ),
    "bfloat16_representable": Note(
        "edge case",
        "Every logit is exactly representable in bfloat16 (given "
        "too): the high 16 bits of the binary32 pattern.",
        "bf16 models diverge.",
        ("1.2",),
    ),
}
