"""`dyadic24 conform`: check an implementation against the golden vectors and by hypothesis fuzzing.

Exit status: 0 full conformance, 1 a divergence (or a failing call), 2 a usage or setup error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from dyadic24.conformance.impls import (
    BUNDLED_TARGETS,
    CommandImplementation,
    Implementation,
    PythonImplementation,
    bundled,
    load_target,
)
from dyadic24.conformance.report import ImplementationReport, RunReport

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dyadic24 conform",
        description="Run an implementation of dyadic24-floor-first-v1 against the golden vectors"
        " (clause 13.1),"
        " then fuzz it with hypothesis against a reference. Exit 0 only on full conformance.",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--impl",
        metavar="MODULE:CALLABLE",
        help="a Python callable with the clause-12.2 protocol, e.g. mypkg.sampler:propose",
    )
    what.add_argument(
        "--cmd",
        metavar="'PROGRAM ARGS'",
        help="a program speaking the JSON-lines protocol of conformance/PROTOCOL.md (clause 12.4)",
    )
    what.add_argument(
        "--mutant",
        metavar="NAME",
        help="one of the deliberately wrong implementations of dyadic24.conformance.mutants"
        " (see KILL_MATRIX.md), to see what a failing run reports",
    )
    what.add_argument(
        "--bundled",
        action="store_true",
        help="the bundled implementations: exact and fast references, Triton kernel adapter",
    )
    p.add_argument(
        "--only",
        metavar="NAMES",
        default=",".join(BUNDLED_TARGETS),
        help="with --bundled: comma-separated subset of exact,fast,kernel (default all)",
    )
    p.add_argument(
        "--vectors",
        nargs="+",
        metavar="NAME",
        help="only these vector files (file name, stem or topic, e.g. golden_status.json or status)",
    )
    p.add_argument("--no-vectors", action="store_true", help="skip the golden vectors")
    p.add_argument("--no-fuzz", action="store_true", help="skip hypothesis fuzzing")
    p.add_argument(
        "--accumulated",
        type=int,
        default=None,
        metavar="ROWS",
        help="rows of the accumulated check of clause 13.2 (one of 1, 10, 100, 1000, 10000, 100000,"
        " 1000000; default 10000, 1000000 with --deep, 1000 for the Triton interpreter; 0 skips it)",
    )
    p.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    p.add_argument(
        "--examples", type=int, help="fuzz examples (calls of several rows); default 200, 5000 with --deep"
    )
    p.add_argument(
        "--deep", action="store_true", help="the deep fuzz profile (more rows, larger V, more examples)"
    )
    p.add_argument(
        "--oracle",
        choices=("fast", "exact"),
        default="fast",
        help="the reference the fuzzing compares with (default fast; a reference is never fuzzed"
        " against itself: the other one is used)",
    )
    p.add_argument("--no-shrink", action="store_true", help="report the first failing fuzz example unshrunk")
    p.add_argument(
        "--no-trace", action="store_true", help="compare outputs only, even if a trace is available"
    )
    p.add_argument("--json", metavar="PATH", help="write the JSON report here")
    p.add_argument("--junit", metavar="PATH", help="write a JUnit XML report here")
    p.add_argument(
        "--progress",
        type=int,
        default=100,
        metavar="N",
        help="a progress line on stderr every N vectors / fuzz examples (0: none)",
    )
    p.add_argument(
        "--max-report", type=int, default=20, metavar="N", help="failing vectors listed in the text report"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="--cmd: seconds to wait for one response")
    p.add_argument("--quiet", action="store_true", help="print only the final line")
    return p


def _implementations(args: argparse.Namespace) -> list[tuple[str, Implementation | None, str]]:
    if args.impl:
        func = load_target(args.impl)
        return [(args.impl, PythonImplementation(func, args.impl), "Python callable")]
    if args.mutant:
        from dyadic24.conformance.mutants import MUTANTS

        if args.mutant not in MUTANTS:
            raise ValueError(f"--mutant: unknown mutant {args.mutant!r}; known: {', '.join(MUTANTS)}")
        func, clause, description = MUTANTS[args.mutant]
        mode = f"mutant breaking clause {clause}: {description}"
        return [(args.mutant, PythonImplementation(func, f"mutant {args.mutant}", mode), mode)]
    if args.cmd:
        impl = CommandImplementation(args.cmd, timeout=args.timeout)
        return [(impl.name, impl, impl.mode)]
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in BUNDLED_TARGETS]
    if unknown:
        raise ValueError(
            f"--only: unknown bundled implementation(s) {unknown}; known: {list(BUNDLED_TARGETS)}"
        )
    return bundled(names)


def _hashes() -> tuple[str, str]:
    from dyadic24.vectors import store

    try:
        spec = store.spec_sha256()
    except FileNotFoundError:
        spec = "unavailable"
    return spec, store.vector_set_sha256()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.bundled and "kernel" in args.only:
        # Triton reads TRITON_INTERPRET once, at import: choose the mode before anything imports it.
        from dyadic24.conformance.impls import triton_mode

        triton_mode()
    from dyadic24.conformance import runner
    from dyadic24.conformance.strategies import CI, DEEP
    from dyadic24.vectors import store

    progress = runner.stderr_progress() if args.progress > 0 and not args.quiet else None
    vectors: list[Any] = []
    if not args.no_vectors:
        try:
            vectors = list(store.iter_vectors(args.vectors))
        except KeyError as exc:
            print(f"dyadic24 conform: {exc.args[0]}", file=sys.stderr)
            return EXIT_USAGE
        if not vectors:
            print("dyadic24 conform: no golden vectors found (vectors/data is empty)", file=sys.stderr)
            return EXIT_USAGE
    try:
        impls = _implementations(args)
    except (ImportError, AttributeError, TypeError, ValueError, RuntimeError, OSError) as exc:
        print(f"dyadic24 conform: cannot load the implementation: {exc}", file=sys.stderr)
        return EXIT_USAGE

    spec_sha, vectors_sha = _hashes()
    report = RunReport(spec_sha256=spec_sha, vectors_sha256=vectors_sha)
    profile = DEEP if args.deep else CI
    oracles: dict[str, PythonImplementation] = {}

    def oracle(name: str) -> PythonImplementation:
        if name not in oracles:
            oracles[name] = PythonImplementation(load_target(BUNDLED_TARGETS[name]), f"{name} reference")
        return oracles[name]

    try:
        for name, impl, mode in impls:
            if impl is None:
                report.implementations.append(ImplementationReport(name=name, mode="", skipped=mode))
                continue
            entry = ImplementationReport(
                name=impl.name,
                mode=mode,
                traced=impl.traces and not args.no_trace,
                vector_subset=args.vectors is not None,
            )
            trace = not args.no_trace
            if vectors:
                entry.vectors = runner.run_vectors(
                    impl, vectors, trace=trace, progress=progress, every=args.progress
                )
            acc_rows = args.accumulated
            if acc_rows is None:
                # The Triton interpreter runs about ten rows a second: it checks a prefix.
                acc_rows = 1000 if "INTERPRET" in mode else (1_000_000 if args.deep else 10_000)
            if acc_rows:
                if progress:
                    progress(f"[{impl.name}] accumulated check: {acc_rows} rows")
                entry.accumulated = runner.run_accumulated(impl, acc_rows)
            if not args.no_fuzz:
                oracle_name = args.oracle
                if isinstance(impl, PythonImplementation) and impl.func is oracle(oracle_name).func:
                    # A reference is not fuzzed against itself: the other reference checks it.
                    oracle_name = "exact" if oracle_name == "fast" else "fast"
                examples = args.examples
                if examples is None and "INTERPRET" in mode:
                    examples = max(10, profile.examples // 4)  # the Triton interpreter is slow
                entry.fuzz = runner.run_fuzz(
                    impl, oracle(oracle_name), oracle_name=oracle_name, profile=profile, examples=examples,
                    seed=args.seed, shrink=not args.no_shrink, trace=trace, progress=progress,
                    every=max(args.progress // 2, 1),
                )  # fmt: skip
            report.implementations.append(entry)
    finally:
        for _, impl, _ in impls:
            if impl is not None:
                impl.close()

    from dyadic24.conformance.report import render_text, summary_line, write_json, write_junit

    if not args.quiet:
        print(render_text(report, args.max_report, store.FLAG_NOTES))
    if args.json:
        write_json(report, args.json)
    if args.junit:
        write_junit(report, args.junit)
    print(summary_line(report))
    if all(i.skipped is not None for i in report.implementations):
        print("dyadic24 conform: no implementation could be run", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK if report.conformant else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
