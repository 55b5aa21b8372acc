"""Conformance results and their renderings: text tables, JSON, JUnit XML, the citation line."""

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

REPRODUCER_CHARS = 2000  # longer reproducers are cut in the text report (the JSON report has them whole)


@dataclass
class VectorResult:
    """One golden vector run against one implementation (clause 13.1)."""

    file: str
    tc_id: int
    comment: str
    flags: tuple[str, ...]
    clauses: tuple[str, ...]
    rows: int
    divergences: list[Divergence] = field(default_factory=list)
    traced: bool = False  # the implementation's trace was compared

    @property
    def passed(self) -> bool:
        return not self.divergences

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.file, "tcId": self.tc_id, "comment": self.comment, "flags": list(self.flags),
            "clauses": list(self.clauses), "rows": self.rows, "passed": self.passed, "traced": self.traced,
            "divergences": [d.as_json() for d in self.divergences],
        }  # fmt: skip


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
    def examples_per_s(self) -> float:
        return self.examples / self.seconds if self.seconds > 0 else 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "oracle": self.oracle, "seed": self.seed, "profile": self.profile, "budget": self.budget,
            "examples": self.examples, "passed": self.passed, "rows": self.rows,
            "seconds": round(self.seconds, 3), "examples_per_s": round(self.examples_per_s, 2),
            "rows_per_s": round(self.rows_per_s, 1),
            "failure": self.failure.as_json() if self.failure else None, "reproducer": self.reproducer,
        }  # fmt: skip


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
        return {"rows": self.rows, "expected": self.expected, "got": self.got, "ok": self.ok,
                "seconds": round(self.seconds, 3), "error": self.error}  # fmt: skip


@dataclass
class ImplementationReport:
    name: str
    mode: str
    traced: bool = False
    skipped: str | None = None
    vectors: list[VectorResult] = field(default_factory=list)
    fuzz: FuzzResult | None = None
    vector_subset: bool = False
    accumulated: AccumulatedResult | None = None

    @property
    def conformant(self) -> bool:
        return (
            self.skipped is None
            and all(v.passed for v in self.vectors)
            and (self.fuzz is None or self.fuzz.ok)
            and (self.accumulated is None or self.accumulated.ok)
        )

    def divergences(self) -> list[Divergence]:
        found = [d for v in self.vectors for d in v.divergences]
        if self.fuzz is not None and self.fuzz.failure is not None:
            found.append(self.fuzz.failure)
        return found

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "mode": self.mode, "traced": self.traced, "skipped": self.skipped,
            "conformant": self.conformant if self.skipped is None else None,
            "vector_subset": self.vector_subset,
            "vectors_passed": sum(v.passed for v in self.vectors), "vectors_run": len(self.vectors),
            "clauses": clause_table(self.vectors), "flags": flag_table(self.vectors),
            "vectors": [v.as_json() for v in self.vectors],
            "fuzz": self.fuzz.as_json() if self.fuzz else None,
            "accumulated": self.accumulated.as_json() if self.accumulated else None,
        }  # fmt: skip


@dataclass
class RunReport:
    spec_sha256: str
    vectors_sha256: str
    implementations: list[ImplementationReport] = field(default_factory=list)
    semantic_id: str = SEMANTIC_ID

    @property
    def conformant(self) -> bool:
        ran = [i for i in self.implementations if i.skipped is None]
        return bool(ran) and all(i.conformant for i in ran)

    def citation(self) -> str:
        return citation(self.spec_sha256, self.vectors_sha256, self.semantic_id)

    def as_json(self) -> dict[str, Any]:
        return {
            "semanticId": self.semantic_id, "specSha256": self.spec_sha256,
            "vectorsSha256": self.vectors_sha256, "conformant": self.conformant,
            "summary": summary_line(self), "implementations": [i.as_json() for i in self.implementations],
        }  # fmt: skip


def citation(spec_sha: str, vectors_sha: str, semantic_id: str = SEMANTIC_ID) -> str:
    """The one-line citation of appendix E."""
    return f"{semantic_id} spec-sha256:{spec_sha} vectors-sha256:{vectors_sha}"


def _sort_clause(clause: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in clause.split("."))
    except ValueError:
        return (1 << 30,)


def clause_table(vectors: Iterable[VectorResult]) -> dict[str, dict[str, int]]:
    """Per clause: vectors declaring it that pass / fail, and divergences attributed to it."""
    table: dict[str, dict[str, int]] = {}
    blamed: Counter[str] = Counter()
    for v in vectors:
        for clause in v.clauses:
            row = table.setdefault(clause, {"pass": 0, "fail": 0, "diverged": 0})
            row["pass" if v.passed else "fail"] += 1
        blamed.update(d.clause for d in v.divergences)
    for clause, n in blamed.items():
        table.setdefault(clause, {"pass": 0, "fail": 0, "diverged": 0})["diverged"] = n
    return {c: table[c] for c in sorted(table, key=_sort_clause)}


def flag_table(vectors: Iterable[VectorResult]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for v in vectors:
        for flag in v.flags:
            row = table.setdefault(flag, {"pass": 0, "fail": 0})
            row["pass" if v.passed else "fail"] += 1
    return dict(sorted(table.items()))


def _counts(report: RunReport) -> tuple[int, int, int, int, int]:
    ran = [i for i in report.implementations if i.skipped is None]
    v_pass = sum(sum(v.passed for v in i.vectors) for i in ran)
    v_run = sum(len(i.vectors) for i in ran)
    f_pass = sum(i.fuzz.passed for i in ran if i.fuzz)
    f_run = sum(i.fuzz.examples for i in ran if i.fuzz)
    rows = sum(i.fuzz.rows for i in ran if i.fuzz)
    return v_pass, v_run, f_pass, f_run, rows


def implementation_line(impl: ImplementationReport) -> str:
    if impl.skipped is not None:
        return f"[{impl.name}] SKIPPED: {impl.skipped}"
    verdict = "CONFORMANT" if impl.conformant else "NON-CONFORMANT"
    text = f"[{impl.name}] {verdict} vectors {sum(v.passed for v in impl.vectors)}/{len(impl.vectors)}"
    if impl.vector_subset:
        text += " (subset)"
    if impl.accumulated is not None:
        acc = impl.accumulated
        text += f" accumulated {acc.rows} {'ok' if acc.ok else 'MISMATCH'}"
    if impl.fuzz is not None:
        text += f" fuzz {impl.fuzz.passed}/{impl.fuzz.examples} rows {impl.fuzz.rows}"
    return text


def summary_line(report: RunReport) -> str:
    """The final line: citation, verdict and counts.

    E.g. ``<citation> CONFORMANT vectors 512/512 fuzz 200/200 rows 931``.
    """
    v_pass, v_run, f_pass, f_run, rows = _counts(report)
    verdict = "CONFORMANT" if report.conformant else "NON-CONFORMANT"
    subset = any(i.vector_subset for i in report.implementations)
    text = f"{report.citation()} {verdict} vectors {v_pass}/{v_run}{' (subset)' if subset else ''}"
    accs = [i.accumulated for i in report.implementations if i.skipped is None and i.accumulated]
    if accs:
        text += f" accumulated {sum(a.ok for a in accs)}/{len(accs)}"
    return text + f" fuzz {f_pass}/{f_run} rows {rows}"


def _table(title: str, header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    out = [title, "  " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    out += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def render_text(
    report: RunReport, max_divergences: int = 20, flag_notes: dict[str, str] | None = None
) -> str:
    """The human-readable report (without the final summary line, which the CLI prints last)."""
    lines: list[str] = []
    for impl in report.implementations:
        lines.append(f"== {impl.name}" + (f" -- {impl.mode}" if impl.mode else ""))
        if impl.skipped is not None:
            lines.append("  " + implementation_line(impl))
            continue
        if impl.vectors:
            lines.append(f"  trace compared: {'yes' if impl.traced else 'no (outputs only)'}")
            ct = clause_table(impl.vectors)
            lines += _table(
                "  per clause (vectors declaring the clause; divergences attributed to it):",
                ["clause", "pass", "fail", "diverged"],
                [[c, str(r["pass"]), str(r["fail"]), str(r["diverged"])] for c, r in ct.items()],
            )
            ft = flag_table(impl.vectors)
            lines += _table(
                "  per flag:",
                ["flag", "pass", "fail"],
                [[f, str(r["pass"]), str(r["fail"])] for f, r in ft.items()],
            )
            failed = [d for v in impl.vectors for d in v.divergences]
            if failed:
                lines.append(f"  failing vectors ({sum(not v.passed for v in impl.vectors)}):")
                explained: set[str] = set()  # each flag's note once: what mistake it catches
                listed = 0
                for v in impl.vectors:
                    if v.passed or listed >= max_divergences:
                        continue
                    listed += 1
                    lines.append(f"    {v.file} {v.divergences[0].message()}")
                    for flag in v.flags:
                        if flag_notes and flag in flag_notes and flag not in explained:
                            explained.add(flag)
                            lines.append(f"      [{flag}] {flag_notes[flag]}")
        if impl.accumulated is not None:
            acc = impl.accumulated
            verdict = "ok" if acc.ok else f"MISMATCH: got {acc.got or acc.error}"
            lines.append(
                f"  accumulated check (clause 13.2): {acc.rows} rows in {acc.seconds:.1f} s,"
                f" sha256 {acc.expected[:16]}... {verdict}"
            )
        if impl.fuzz is not None:
            f = impl.fuzz
            lines.append(
                f"  fuzz (oracle {f.oracle}, seed {f.seed}, profile {f.profile}):"
                f" {f.passed}/{f.examples} examples, {f.rows} rows, {f.seconds:.1f} s,"
                f" {f.examples_per_s:.1f} examples/s, {f.rows_per_s:.0f} rows/s"
            )
            if f.failure is not None:
                lines.append(f"    minimal failing example: {f.failure.message()}")
                if f.reproducer:
                    shown = f.reproducer
                    if len(shown) > REPRODUCER_CHARS:
                        shown = f"{shown[:REPRODUCER_CHARS]}... ({len(shown)} characters; whole in --json)"
                    lines.append(f"    reproduce (JSON-lines request, PROTOCOL.md): {shown}")
        lines.append("  " + implementation_line(impl))
    return "\n".join(lines)


def write_json(report: RunReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report.as_json(), indent=1) + "\n", encoding="utf-8")


def write_junit(report: RunReport, path: str | Path) -> None:
    """One test suite per implementation, one test case per vector plus one for the fuzzing."""
    suites = ET.Element("testsuites", name=report.citation())
    for impl in report.implementations:
        cases: list[ET.Element] = []
        for v in impl.vectors:
            case = ET.Element("testcase", classname=f"{impl.name}.{v.file}", name=f"tcId {v.tc_id}")
            if not v.passed:
                fail = ET.SubElement(case, "failure", message=v.divergences[0].message())
                fail.text = "\n".join(d.message() for d in v.divergences)
            cases.append(case)
        if impl.fuzz is not None:
            case = ET.Element(
                "testcase",
                classname=f"{impl.name}.fuzz",
                name=f"hypothesis seed {impl.fuzz.seed}",
                time=f"{impl.fuzz.seconds:.3f}",
            )
            if impl.fuzz.failure is not None:
                fail = ET.SubElement(case, "failure", message=impl.fuzz.failure.message())
                fail.text = impl.fuzz.reproducer or ""
            cases.append(case)
        if impl.skipped is not None:
            case = ET.Element("testcase", classname=impl.name, name="implementation")
            ET.SubElement(case, "skipped", message=impl.skipped)
            cases.append(case)
        suite = ET.SubElement(
            suites, "testsuite", name=impl.name, tests=str(len(cases)),
            failures=str(sum(1 for c in cases if c.find("failure") is not None)),
            skipped=str(sum(1 for c in cases if c.find("skipped") is not None)),
        )  # fmt: skip
        suite.extend(cases)
    ET.ElementTree(suites).write(str(path), encoding="utf-8", xml_declaration=True)
