"""Conformance results, the verdict they earn, and their renderings: text, JSON, JUnit XML, the citation line.

The verdict (clause 13): CONFORMANT needs every required check run in full and passed: every golden
vector (clause 13.1; in every 16-bit format the implementation takes; its trace compared where it
offers one), every invalid call of dyadic24.conformance.invalid rejected naming its argument (1.5), the
accumulated check over at least REQUIRED_ACCUMULATED rows (13.2), and at least REQUIRED_FUZZ fuzz
examples. Any failure in any check that ran is NON-CONFORMANT. A run that passed everything it ran but
left out a required check is REDUCED, and says what it left out: it is not a conformance verdict.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dyadic24.api import SEMANTIC_ID
from dyadic24.conformance.compare import Divergence

REQUIRED_ACCUMULATED = 10_000  # rows (clause 13.2's value that every run checks)
REQUIRED_FUZZ = 200  # examples (the CI profile's default)
REPRODUCER_CHARS = 2000  # longer reproducers are cut in the text report (the JSON report has them whole)
CONFORMANT, NON_CONFORMANT, REDUCED, SKIPPED = "CONFORMANT", "NON-CONFORMANT", "REDUCED", "SKIPPED"
INTERRUPTED = "INTERRUPTED"  # stopped by SIGINT or SIGTERM before every check had run


@dataclass
class VectorResult:
    """One golden vector run against one implementation in one logit format (clause 13.1)."""

    file: str
    tc_id: int
    comment: str
    flags: tuple[str, ...]
    clauses: tuple[str, ...]
    rows: int
    divergences: list[Divergence] = field(default_factory=list)
    traced: bool = False  # the implementation returned a trace (every row)
    fmt: str = "binary32"  # the logits' format on the way in (clause 1.2)
    trace_keys: tuple[int, int] = (0, 0)  # (values its trace held, values the reference's trace holds)

    @property
    def passed(self) -> bool:
        return not self.divergences

    @property
    def label(self) -> str:
        return f"{self.file} tcId {self.tc_id}" + ("" if self.fmt == "binary32" else f" ({self.fmt})")

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "tcId": self.tc_id,
            "format": self.fmt,
            "comment": self.comment,
            "flags": list(self.flags),
            "clauses": list(self.clauses),
            "rows": self.rows,
            "passed": self.passed,
            "traced": self.traced,
            "traceKeys": list(self.trace_keys),
            "divergences": [d.as_json() for d in self.divergences],
        }


@dataclass
class FuzzResult:
    """Hypothesis fuzzing of one implementation against an oracle."""

    oracle: str
    seed: int
    profile: str
    budget: int  # examples asked for
    examples: int = 0  # examples run before the first failure (shrinking not counted)
    passed: int = 0
    rows: int = 0
    seconds: float = 0.0
    failure: Divergence | None = None  # the shrunk failing example's first divergence
    reproducer: str | None = None  # the failing call as a JSON-lines request (PROTOCOL.md)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "oracle": self.oracle,
            "seed": self.seed,
            "profile": self.profile,
            "budget": self.budget,
            "examples": self.examples,
            "passed": self.passed,
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
            "rows_per_s": round(self.rows_per_s, 1),
            "failure": self.failure.as_json() if self.failure else None,
            "reproducer": self.reproducer,
        }


@dataclass
class AccumulatedResult:
    """The accumulated check of clause 13.2: the digest of the first ``rows`` stream rows."""

    rows: int
    expected: str
    got: str | None  # None when a call failed
    seconds: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.got == self.expected

    def as_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "expected": self.expected,
            "got": self.got,
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "error": self.error,
        }


@dataclass
class InvalidOutcome:
    """One invalid call (clause 1.5) and what came back."""

    name: str
    argument: str  # the argument the error must name
    rule: str
    got: str  # what the implementation did
    passed: bool

    def message(self) -> str:
        return (
            f"invalid call {self.name} ({self.rule}): {self.got};"
            f" expected an error naming {self.argument!r} (clause 1.5)"
        )


@dataclass
class InvalidResult:
    outcomes: list[InvalidOutcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(o.passed for o in self.outcomes)

    def as_json(self) -> dict[str, Any]:
        return {
            "cases": len(self.outcomes),
            "passed": sum(o.passed for o in self.outcomes),
            "failures": [o.message() for o in self.outcomes if not o.passed],
        }


@dataclass
class BulkFailure:
    call: int  # the call's index in the bulk stream
    row: int
    family: str
    divergence: Divergence
    reproducer: str  # the failing row as a one-row JSON-lines request

    def as_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "row": self.row,
            "family": self.family,
            "divergence": self.divergence.as_json(),
            "reproducer": self.reproducer,
        }


@dataclass
class BulkResult:
    """``conform --bulk N``: seeded batched calls of dyadic24.conformance.bulk against the fast reference."""

    seed: int
    rows: int = 0
    calls: int = 0
    workers: int = 1  # processes computing the expected outputs
    profile: str = ""  # the deployment profile (--shapes), empty for the whole stream
    differing_rows: int = 0
    failed_calls: int = 0  # calls that gave no outputs
    seconds: float = 0.0
    failures: list[BulkFailure] = field(default_factory=list)
    families: dict[str, int] = field(default_factory=dict)
    formats: dict[str, int] = field(default_factory=dict)
    vocab_bands: dict[str, int] = field(default_factory=dict)
    call_errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.differing_rows == 0 and self.failed_calls == 0

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "rows": self.rows,
            "calls": self.calls,
            "workers": self.workers,
            "profile": self.profile,
            "differing_rows": self.differing_rows,
            "failed_calls": self.failed_calls,
            "seconds": round(self.seconds, 2),
            "rows_per_s": round(self.rows_per_s, 1),
            "families": self.families,
            "formats": self.formats,
            "vocab_bands": self.vocab_bands,
            "failures": [f.as_json() for f in self.failures],
            "call_errors": self.call_errors,
        }


@dataclass
class ExpSweepResult:
    """``conform --exp-sweep``: the implementation's exp (clause 5.3) on every z of the rule's domain."""

    total: int = 0
    expected_total: int = 0
    mismatches: int = 0
    examples: list[tuple[str, str, str]] = field(default_factory=list)  # (z, got, expected) hex
    seconds: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        """No mismatch and no failure in what was swept (a sweep cut short by a signal is incomplete,
        not failed: ``complete``)."""
        return self.error is None and self.mismatches == 0

    @property
    def complete(self) -> bool:
        return self.total == self.expected_total

    def as_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "expected_total": self.expected_total,
            "mismatches": self.mismatches,
            "examples": [list(e) for e in self.examples],
            "seconds": round(self.seconds, 2),
            "error": self.error,
        }


@dataclass
class ImplementationReport:
    name: str
    mode: str
    traced: bool = False  # traces were asked for (the implementation offers them, --no-trace not given)
    formats: tuple[str, ...] = ("binary32",)
    skipped: str | None = None
    vectors: list[VectorResult] = field(default_factory=list)
    vectors_total: int = 0  # golden vectors in the release (the full set)
    vectors_note: str | None = None  # why the vector check is not the full set, if it is not
    fuzz: FuzzResult | None = None
    accumulated: AccumulatedResult | None = None
    invalid: InvalidResult | None = None
    invalid_note: str | None = None  # why invalid calls were not sent, if they were not
    bulk: BulkResult | None = None
    exp_sweep: ExpSweepResult | None = None
    exp_asked: bool = False  # --exp-sweep was given: the sweep is then required of this subject
    interrupted: str | None = None  # the signal that stopped the run during this subject's checks

    def base_vectors(self) -> list[VectorResult]:
        return [v for v in self.vectors if v.fmt == "binary32"]

    def narrow_vectors(self) -> list[VectorResult]:
        return [v for v in self.vectors if v.fmt != "binary32"]

    @property
    def failed(self) -> bool:
        return (
            any(not v.passed for v in self.vectors)
            or (self.fuzz is not None and not self.fuzz.ok)
            or (self.accumulated is not None and not self.accumulated.ok)
            or (self.invalid is not None and not self.invalid.ok)
            or (self.bulk is not None and not self.bulk.ok)
            or (self.exp_sweep is not None and not self.exp_sweep.ok)
        )

    def missing(self) -> list[str]:
        """The required checks this run did not complete (clause 13; empty for a full run)."""
        out = []
        if (
            self.vectors_note is not None
            or len(self.base_vectors()) < self.vectors_total
            or not self.vectors_total
        ):
            out.append("golden vectors" + (f" ({self.vectors_note})" if self.vectors_note else ""))
        if self.invalid is None:
            out.append("invalid calls" + (f" ({self.invalid_note})" if self.invalid_note else ""))
        if self.accumulated is None or self.accumulated.rows < REQUIRED_ACCUMULATED:
            out.append(f"accumulated check ({REQUIRED_ACCUMULATED:,} rows)")
        short = self.fuzz is not None and self.fuzz.ok and self.fuzz.examples < self.fuzz.budget
        if self.fuzz is None or self.fuzz.budget < REQUIRED_FUZZ or short:
            out.append(f"fuzz ({REQUIRED_FUZZ} examples)")
        if self.exp_asked and (self.exp_sweep is None or not self.exp_sweep.complete):
            out.append("exp sweep")
        return out

    @property
    def verdict(self) -> str:
        if self.skipped is not None:
            return SKIPPED
        if self.failed:
            return NON_CONFORMANT
        if self.interrupted is not None:
            return INTERRUPTED
        return REDUCED if self.missing() else CONFORMANT

    def divergences(self) -> list[Divergence]:
        found = [d for v in self.vectors for d in v.divergences]
        if self.fuzz is not None and self.fuzz.failure is not None:
            found.append(self.fuzz.failure)
        return found

    def as_json(self) -> dict[str, Any]:
        base = self.base_vectors()
        return {
            "name": self.name,
            "mode": self.mode,
            "verdict": self.verdict,
            "missing": self.missing(),
            "traced": self.traced,
            "formats": list(self.formats),
            "skipped": self.skipped,
            "vectors_passed": sum(v.passed for v in base),
            "vectors_run": len(base),
            "vectors_total": self.vectors_total,
            "vectors_traced": sum(v.traced for v in base),
            "trace_keys": [
                sum(v.trace_keys[0] for v in self.vectors),
                sum(v.trace_keys[1] for v in self.vectors),
            ],
            "narrow_passed": sum(v.passed for v in self.narrow_vectors()),
            "narrow_run": len(self.narrow_vectors()),
            "clauses": clause_table(self.vectors),
            "flags": flag_table(self.vectors),
            "vectors": [v.as_json() for v in self.vectors],
            "invalid": self.invalid.as_json() if self.invalid else None,
            "invalid_note": self.invalid_note,
            "fuzz": self.fuzz.as_json() if self.fuzz else None,
            "accumulated": self.accumulated.as_json() if self.accumulated else None,
            "bulk": self.bulk.as_json() if self.bulk else None,
            "exp_sweep": self.exp_sweep.as_json() if self.exp_sweep else None,
            "interrupted": self.interrupted,
        }


@dataclass
class RunReport:
    spec_sha256: str
    vectors_sha256: str
    implementations: list[ImplementationReport] = field(default_factory=list)
    semantic_id: str = SEMANTIC_ID
    subject: str = ""  # what was checked, as the user named it (--impl, --cmd, --mutant, bundled)
    label: str | None = None  # --label: the user's name for this build (a commit, a version)
    interrupted: str | None = None  # the signal that stopped the run (SIGINT, SIGTERM)

    @property
    def verdict(self) -> str:
        ran = [i for i in self.implementations if i.skipped is None]
        if not ran and self.interrupted is None:
            return SKIPPED
        if any(i.verdict == NON_CONFORMANT for i in ran):
            return NON_CONFORMANT
        if self.interrupted is not None:
            return INTERRUPTED
        # a bundled implementation that cannot run here leaves its checks undone: not CONFORMANT
        if any(i.skipped is not None for i in self.implementations):
            return REDUCED
        return CONFORMANT if all(i.verdict == CONFORMANT for i in ran) else REDUCED

    @property
    def conformant(self) -> bool:
        return self.verdict == CONFORMANT

    def citation(self) -> str:
        return citation(self.spec_sha256, self.vectors_sha256, self.semantic_id)

    def as_json(self) -> dict[str, Any]:
        return {
            "semanticId": self.semantic_id,
            "specSha256": self.spec_sha256,
            "vectorsSha256": self.vectors_sha256,
            "verdict": self.verdict,
            "conformant": self.conformant,
            "subject": self.subject,
            "label": self.label,
            "interrupted": self.interrupted,
            "summary": summary_line(self),
            "implementations": [i.as_json() for i in self.implementations],
        }


def citation(spec_sha: str, vectors_sha: str, semantic_id: str = SEMANTIC_ID) -> str:
    """The one-line citation of appendix E."""
    return f"{semantic_id} spec-sha256:{spec_sha} vectors-sha256:{vectors_sha}"


def _sort_clause(clause: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in clause.split("."))
    except ValueError:
        return (1 << 30,)


def clause_table(vectors: Iterable[VectorResult]) -> dict[str, dict[str, int]]:
    """Per clause: passing vectors that declare it; failing vectors and diverging rows whose first
    divergence is attributed to it (a failing vector counts under that one clause only)."""
    table: dict[str, dict[str, int]] = {}

    def row(clause: str) -> dict[str, int]:
        return table.setdefault(clause, {"pass": 0, "fail": 0, "diverged": 0})

    for v in vectors:
        if v.passed:
            for clause in v.clauses:
                row(clause)["pass"] += 1
            continue
        row(v.divergences[0].clause)["fail"] += 1
        for d in v.divergences:
            row(d.clause)["diverged"] += 1
    return {c: table[c] for c in sorted(table, key=_sort_clause)}


def flag_table(vectors: Iterable[VectorResult]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for v in vectors:
        for flag in v.flags:
            row = table.setdefault(flag, {"pass": 0, "fail": 0})
            row["pass" if v.passed else "fail"] += 1
    return dict(sorted(table.items()))


def _counts(report: RunReport) -> Counter[str]:
    ran = [i for i in report.implementations if i.skipped is None]
    c: Counter[str] = Counter()
    for i in ran:
        base = i.base_vectors()
        c["v_pass"] += sum(v.passed for v in base)
        c["v_run"] += len(base)
        for v in i.narrow_vectors():
            c[f"{v.fmt}_pass"] += v.passed
            c[f"{v.fmt}_run"] += 1
        if i.traced:
            c["k_got"] += sum(v.trace_keys[0] for v in i.vectors)
            c["k_all"] += sum(v.trace_keys[1] for v in i.vectors)
        if i.invalid is not None:
            c["i_pass"] += sum(o.passed for o in i.invalid.outcomes)
            c["i_run"] += len(i.invalid.outcomes)
        if i.accumulated is not None:
            c["a_ok"] += i.accumulated.ok
            c["a_run"] += 1
        if i.fuzz is not None:
            c["f_pass"] += i.fuzz.passed
            c["f_run"] += i.fuzz.examples
            c["rows"] += i.fuzz.rows
        if i.bulk is not None:
            c["b_run"] += i.bulk.rows
            c["b_ok"] += i.bulk.rows - i.bulk.differing_rows
        if i.exp_sweep is not None:
            c["e_run"] += i.exp_sweep.total
            c["e_ok"] += i.exp_sweep.total - i.exp_sweep.mismatches
    return c


def implementation_line(impl: ImplementationReport) -> str:
    if impl.skipped is not None:
        return f"[{impl.name}] SKIPPED: {impl.skipped}"
    text = f"[{impl.name}] {impl.verdict}"
    if impl.verdict == REDUCED:
        text += f" (not a conformance verdict; not checked: {', '.join(impl.missing())})"
    if impl.verdict == INTERRUPTED:
        text += f" (stopped by {impl.interrupted}: not a conformance verdict)"
    return text


def summary_line(report: RunReport) -> str:
    """The final line: citation, verdict, the subject (and --label), and the count of every check that
    ran, e.g. ``<citation> CONFORMANT subject "mypkg.sampler:propose" vectors 310/310 binary16 5/5
    trace-keys 61234/61234 invalid 25/25 accumulated 1/1 fuzz 200/200 rows 767``. A 16-bit form, a
    trace key, a bulk row or an exp value is counted only where it was compared."""
    c = _counts(report)
    text = f"{report.citation()} {report.verdict} subject {json.dumps(report.subject)}"
    if report.label is not None:
        text += f" label {json.dumps(report.label)}"
    text += f" vectors {c['v_pass']}/{c['v_run']}"
    for fmt in ("binary16", "bfloat16"):
        if c[f"{fmt}_run"]:
            text += f" {fmt} {c[f'{fmt}_pass']}/{c[f'{fmt}_run']}"
    if c["k_all"]:
        text += f" trace-keys {c['k_got']}/{c['k_all']}"
    text += (
        f" invalid {c['i_pass']}/{c['i_run']} accumulated {c['a_ok']}/{c['a_run']}"
        f" fuzz {c['f_pass']}/{c['f_run']} rows {c['rows']}"
    )
    if "b_run" in c:
        text += f" bulk {c['b_ok']}/{c['b_run']}"
    if "e_run" in c:
        text += f" exp {c['e_ok']}/{c['e_run']}"
    skipped = [i.name for i in report.implementations if i.skipped is not None]
    if skipped:
        text += f" (could not run: {', '.join(skipped)})"
    if report.verdict == REDUCED:
        missing = sorted(
            {m.split(" (")[0] for i in report.implementations if i.skipped is None for m in i.missing()}
        )
        if missing:
            text += f" (reduced run, not checked: {', '.join(missing)})"
    if report.interrupted is not None:
        text += f" (stopped by {report.interrupted})"
    return text


def explanation() -> str:
    """What the checks are and what CONFORMANT needs, printed once at the top of the text report."""
    return (
        "CONFORMANT needs all of: every golden vector (clause 13.1; its trace compared where the\n"
        "implementation offers one; again in each 16-bit format it takes, 1.2), every invalid call\n"
        f"rejected naming its argument (1.5), the accumulated check over {REQUIRED_ACCUMULATED:,} rows\n"
        f"(13.2) and {REQUIRED_FUZZ}+ fuzz examples against a reference. Any divergence is NON-CONFORMANT;\n"
        "a run that leaves a check out is REDUCED. --bulk and --exp-sweep add deeper checks."
    )


def _table(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    out = [indent + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out += [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out


def _check_rows(impl: ImplementationReport) -> list[list[str]]:
    rows: list[list[str]] = []
    base = impl.base_vectors()
    if base:
        detail = f"{sum(v.rows for v in base)} rows"
        if impl.vectors_note:
            detail += f"; {impl.vectors_note}"
        if impl.traced:
            got, total = (
                sum(v.trace_keys[0] for v in impl.vectors),
                sum(v.trace_keys[1] for v in impl.vectors),
            )
            returned = sum(v.traced for v in base)
            detail += f"; trace keys compared {got:,}/{total:,} (traces returned {returned}/{len(base)})"
        else:
            detail += "; outputs only (no trace offered)"
        narrow = impl.narrow_vectors()
        for fmt in sorted({v.fmt for v in narrow}):
            of = [v for v in narrow if v.fmt == fmt]
            detail += f"; {fmt} forms {sum(v.passed for v in of)}/{len(of)}"
        rows.append(["vectors", f"{sum(v.passed for v in base)}/{len(base)}", detail])
    else:
        rows.append(["vectors", "-", f"not run ({impl.vectors_note or 'no vectors'})"])
    if impl.invalid is not None:
        n = len(impl.invalid.outcomes)
        rows.append(
            [
                "invalid calls",
                f"{sum(o.passed for o in impl.invalid.outcomes)}/{n}",
                "an error naming the argument (clause 1.5)",
            ]
        )
    else:
        rows.append(["invalid calls", "-", f"not run ({impl.invalid_note or '--no-invalid'})"])
    acc = impl.accumulated
    if acc is not None:
        res = "ok" if acc.ok else "MISMATCH"
        detail = f"{acc.rows:,} rows, sha256 {acc.expected[:16]}..., {acc.seconds:.1f} s"
        if not acc.ok:
            detail += f"; got {acc.got or acc.error}"
        rows.append(["accumulated", res, detail])
    else:
        rows.append(["accumulated", "-", "not run (--accumulated 0)"])
    f = impl.fuzz
    if f is not None:
        rows.append(
            [
                "fuzz",
                f"{f.passed}/{f.examples}",
                f"{f.rows} rows, oracle {f.oracle}, seed {f.seed}, {f.seconds:.1f} s"
                f" ({f.rows_per_s:,.0f} rows/s)",
            ]
        )
    else:
        rows.append(["fuzz", "-", "not run (--no-fuzz)"])
    b = impl.bulk
    if b is not None:
        rows.append(
            [
                "bulk",
                f"{b.rows - b.differing_rows}/{b.rows}",
                f"{b.calls:,} calls, seed {b.seed}, {b.seconds:.1f} s ({b.rows_per_s:,.0f} rows/s,"
                f" {b.workers} reference workers)" + (f", shapes {b.profile}" if b.profile else ""),
            ]
        )
    e = impl.exp_sweep
    if e is not None:
        rows.append(
            [
                "exp sweep",
                f"{e.total - e.mismatches}/{e.expected_total}",
                e.error or f"every binary32 z of the rule's domain, {e.seconds:.1f} s",
            ]
        )
    elif impl.exp_asked:
        rows.append(["exp sweep", "-", "not completed"])
    return rows


def _failures(
    impl: ImplementationReport, max_report: int, flag_notes: dict[str, dict[str, Any]]
) -> list[str]:
    lines: list[str] = []
    failed = [v for v in impl.vectors if not v.passed]
    if failed:
        lines.append(f"  failing vectors ({len(failed)}):")
        explained: set[str] = set()
        for v in failed[:max_report]:
            first = v.divergences[0]
            lines.append(f"    {v.file} {first.message()}")
            for flag in v.flags:  # each note once, and only where the flag bears on the diverging clause
                note = flag_notes.get(flag)
                if note and flag not in explained and first.clause in note["clauses"]:
                    explained.add(flag)
                    lines.append(f"      [{flag}] {note['text']}")
        if len(failed) > max_report:
            lines.append(f"    and {len(failed) - max_report} more (--max-report N, or --json for all)")
        table = clause_table(impl.vectors)
        lines.append(
            "  per clause: passing vectors declaring it; failing vectors and diverging rows whose first"
            " divergence it is:"
        )
        lines += _table(
            ["clause", "pass", "fail", "diverged"],
            [
                [c, str(r["pass"]), str(r["fail"]), str(r["diverged"])]
                for c, r in table.items()
                if r["fail"] or r["diverged"]
            ],
            "    ",
        )
    if impl.invalid is not None:
        bad = [o for o in impl.invalid.outcomes if not o.passed]
        for o in bad[:max_report]:
            lines.append(f"  {o.message()}")
        if len(bad) > max_report:
            lines.append(f"  and {len(bad) - max_report} more invalid calls")
    if impl.accumulated is not None and not impl.accumulated.ok and impl.accumulated.error:
        lines.append(f"  accumulated check: {impl.accumulated.error}")
    f = impl.fuzz
    if f is not None and f.failure is not None:
        lines.append(f"  fuzz: minimal failing example: {f.failure.message()}")
        if f.reproducer:
            lines.append(f"    reproduce (JSON-lines request, PROTOCOL.md): {_cut(f.reproducer)}")
    b = impl.bulk
    if b is not None and not b.ok:
        lines.append(
            f"  bulk: {b.differing_rows} differing rows in {b.rows} ({b.failed_calls} calls without outputs)"
        )
        for err in b.call_errors[:3]:
            lines.append(f"    call failed: {err}")
        for bf in b.failures[:max_report]:
            lines.append(f"    {bf.divergence.message()} (a {bf.family} row)")
            lines.append(f"      reproduce: {_cut(bf.reproducer)}")
    sweep = impl.exp_sweep
    if sweep is not None and not sweep.ok:
        lines.append(f"  exp sweep: {sweep.error or f'{sweep.mismatches} mismatches'}")
        for z, got, want in sweep.examples[:max_report]:
            lines.append(f"    z {z}: got {got}, expected {want} (clause 5.3)")
    return lines


def _cut(text: str) -> str:
    return (
        text
        if len(text) <= REPRODUCER_CHARS
        else f"{text[:REPRODUCER_CHARS]}... ({len(text)} characters; whole in --json)"
    )


def render_text(
    report: RunReport, max_report: int = 20, flag_notes: dict[str, dict[str, Any]] | None = None
) -> str:
    """The human-readable report (without the final summary line, which the CLI prints last)."""
    lines = [explanation(), ""]
    for impl in report.implementations:
        lines.append(f"== {impl.name}" + (f" -- {impl.mode}" if impl.mode else ""))
        if impl.skipped is not None:
            lines.append("  " + implementation_line(impl))
            continue
        lines += _table(["check", "result", "detail"], _check_rows(impl))
        lines += _failures(impl, max_report, flag_notes or {})
        lines.append("  " + implementation_line(impl))
    return "\n".join(lines)


def write_json(report: RunReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report.as_json(), indent=1) + "\n", encoding="utf-8")


def _junit_case(impl_name: str, cases: list[ET.Element]) -> Any:
    """A function adding one test case of implementation ``impl_name`` to ``cases``."""

    def case(
        classname: str, name: str, failure: str | None = None, text: str = "", skipped: str | None = None
    ) -> None:
        el = ET.Element("testcase", classname=f"{impl_name}.{classname}", name=name)
        if failure is not None:
            ET.SubElement(el, "failure", message=failure).text = text
        if skipped is not None:
            ET.SubElement(el, "skipped", message=skipped)
        cases.append(el)

    return case


def write_junit(report: RunReport, path: str | Path) -> None:
    """One test suite per implementation: a test case per vector (and format), per invalid call, and one
    each for the accumulated check, the fuzzing, the bulk run and the exp sweep; a required check that
    did not run is a skipped test case."""
    suites = ET.Element("testsuites", name=report.citation())
    for impl in report.implementations:
        cases: list[ET.Element] = []

        case = _junit_case(impl.name, cases)

        for v in impl.vectors:
            case(
                v.file,
                f"tcId {v.tc_id}" + ("" if v.fmt == "binary32" else f" {v.fmt}"),
                None if v.passed else v.divergences[0].message(),
                "\n".join(d.message() for d in v.divergences),
            )
        if impl.invalid is not None:
            for o in impl.invalid.outcomes:
                case("invalid", o.name, None if o.passed else o.message())
        if impl.accumulated is not None:
            acc = impl.accumulated
            case("accumulated", f"{acc.rows} rows", None if acc.ok else f"digest {acc.got or acc.error}")
        if impl.fuzz is not None:
            case(
                "fuzz",
                f"hypothesis seed {impl.fuzz.seed}",
                None if impl.fuzz.ok else impl.fuzz.failure.message(),  # type: ignore[union-attr]
                impl.fuzz.reproducer or "",
            )
        if impl.bulk is not None:
            b = impl.bulk
            case(
                "bulk",
                f"{b.rows} rows seed {b.seed}",
                None if b.ok else f"{b.differing_rows} differing rows",
                "\n".join(f.divergence.message() for f in b.failures),
            )
        if impl.exp_sweep is not None:
            e = impl.exp_sweep
            case("exp", "sweep", None if e.ok else (e.error or f"{e.mismatches} mismatches"))
        if impl.skipped is not None:
            case("implementation", "run", skipped=impl.skipped)
        else:
            for m in impl.missing():
                case("required", m, skipped="not run: the verdict is REDUCED")
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=impl.name,
            tests=str(len(cases)),
            failures=str(sum(1 for c in cases if c.find("failure") is not None)),
            skipped=str(sum(1 for c in cases if c.find("skipped") is not None)),
        )
        suite.extend(cases)
    ET.ElementTree(suites).write(str(path), encoding="utf-8", xml_declaration=True)
