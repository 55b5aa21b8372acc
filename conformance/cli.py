"""`dyadic24 conform`: check an implementation of dyadic24-floor-first-v1 (clause 13).

Exit status: 0 CONFORMANT (every required check run in full and passed); 1 NON-CONFORMANT (a
divergence, a failed or rejected valid call, an accepted invalid call); 2 a usage or setup error (a
bad option, a spec or vector file that is not this release's, an implementation that cannot be
started, nothing to check); 3 REDUCED (no divergence in what ran, but a required check was left out:
not a conformance verdict).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dyadic24.conformance.impls import (
    BUNDLED_TARGETS,
    DEFAULT_TIMEOUT,
    CommandImplementation,
    HostedImplementation,
    Implementation,
    PythonImplementation,
    SubjectError,
    bundled,
    load_target,
)
from dyadic24.conformance.report import (
    CONFORMANT,
    NON_CONFORMANT,
    REDUCED,
    ExpSweepResult,
    FuzzResult,
    ImplementationReport,
    InvalidResult,
    RunReport,
)
from dyadic24.conformance.stop import Interrupted

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_REDUCED = 0, 1, 2, 3
MAX_BULK = 10**15  # rows (days of any machine's time; larger is a typo)
MAX_TIMEOUT = 10**6  # seconds
MINOR0_NOTE = "the subject speaks JSON-lines minor version 0; announce minor 1 (PROTOCOL.md) to be sent them"


class UsageError(Exception):
    """A bad option or setup; the message is one line naming the argument and the rule."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dyadic24 conform",
        description="Check an implementation of dyadic24-floor-first-v1 bit for bit: golden vectors (clause"
        " 13.1), invalid calls (1.5), the accumulated check (13.2) and fuzzing; optionally a bulk run and an"
        " exhaustive exp sweep. Exit 0 only on full conformance (1 divergence, 2 usage, 3 reduced run).",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--impl",
        metavar="MODULE:CALLABLE",
        help="a Python callable with the clause-12.2 protocol, e.g. mypkg.sampler:propose, run in a"
        " process of its own (the current directory is searched first for its module, as python -m"
        " does; dyadic24 itself is always this runner's)",
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
        " (KILL_MATRIX.md), to see what a failing run reports",
    )
    what.add_argument(
        "--bundled",
        action="store_true",
        help="the bundled implementations: exact and fast references, Triton kernel adapter",
    )
    p.add_argument(
        "--only", metavar="NAMES", help="with --bundled: comma-separated subset of exact,fast,kernel"
    )
    p.add_argument(
        "--vectors",
        nargs="+",
        metavar="NAME",
        help="only these vector files (file name, stem or topic; a reduced run)",
    )
    p.add_argument("--no-vectors", action="store_true", help="skip the golden vectors (a reduced run)")
    p.add_argument(
        "--no-invalid", action="store_true", help="skip the invalid calls of clause 1.5 (a reduced run)"
    )
    p.add_argument(
        "--accumulated",
        type=int,
        default=None,
        metavar="ROWS",
        help="rows of the accumulated check of clause 13.2: one of the digests in"
        " vectors/data/accumulated.json (default 10000, 1000000 with --deep); 0 skips it (a reduced run)",
    )
    p.add_argument("--no-fuzz", action="store_true", help="skip hypothesis fuzzing (a reduced run)")
    p.add_argument(
        "--examples",
        type=int,
        metavar="N",
        help="fuzz examples (calls of several rows); default 200, 5000 with --deep; fewer than 200"
        " is a reduced run",
    )
    p.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    p.add_argument(
        "--deep", action="store_true", help="the deep fuzz profile (more rows, larger V, more examples)"
    )
    p.add_argument(
        "--oracle",
        choices=("fast", "exact"),
        default="fast",
        help="the reference the fuzzing compares with (a reference is never fuzzed against itself)",
    )
    p.add_argument("--no-shrink", action="store_true", help="report the first failing fuzz example unshrunk")
    p.add_argument("--no-trace", action="store_true", help="compare outputs only, even if a trace is offered")
    p.add_argument(
        "--bulk",
        type=int,
        metavar="ROWS",
        help="also run ROWS rows of seeded batched calls from dyadic24.conformance.bulk against the"
        " fast reference (V up to 262,144, every format and status)",
    )
    p.add_argument(
        "--bulk-seed", type=int, default=0, metavar="S", help="seed of the bulk stream (default 0)"
    )
    p.add_argument(
        "--shapes",
        metavar="'V=.. formats=.. B=..'",
        help="with --bulk: a deployment profile, the shapes it serves, e.g. 'V=151936,163840"
        " formats=bf16,fp32 B=1..256' (each key optional): every bulk call takes its V, format and B"
        " from these, with every row family, status and golden vector placed at them",
    )
    p.add_argument(
        "--exp-sweep",
        action="store_true",
        help="also check the implementation's exp (clause 5.3) on every binary32 z of the rule's"
        " domain (+0 and -0 .. -inf), if it exposes one",
    )
    p.add_argument(
        "--exp",
        metavar="MODULE:CALLABLE",
        help="with --impl and --exp-sweep: the Python exp routine (uint32 z bit patterns in, uint32 e out)",
    )
    p.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="processes for the reference side of --bulk and --exp-sweep (default and most: the CPUs"
        " available)",
    )
    p.add_argument(
        "--label",
        metavar="TEXT",
        help="your name for what is checked (a commit, a version), shown in the final line",
    )
    p.add_argument("--json", metavar="PATH", help="write the JSON report here")
    p.add_argument("--junit", metavar="PATH", help="write a JUnit XML report here")
    p.add_argument(
        "--max-report", type=int, default=20, metavar="N", help="failures listed per check (default 20)"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds the subject (a Python callable or a program) has for its start and for each"
        f" response before it is ended and its remaining calls fail (default {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    p.add_argument("--quiet", action="store_true", help="print only the final line")
    return p


def _writable(option: str, value: str | None) -> None:
    if value is None:
        return
    from dyadic24.install import inside_package

    path = Path(value)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UsageError(f"{option} {value}: is a directory; give a file path")
    if not parent.is_dir():
        raise UsageError(f"{option} {value}: the directory {parent} does not exist")
    inside = inside_package(path)
    if inside is not None:
        raise UsageError(
            f"{option} {value}: lies inside the dyadic24 package ({inside}); write reports elsewhere"
        )
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{option} {value}: the directory {parent} is not writable")


def validate(args: argparse.Namespace) -> None:
    """Every option checked before any work (UsageError: one line naming the option and the rule)."""
    if args.only is not None and not args.bundled:
        raise UsageError("--only: applies to --bundled only")
    if args.bundled:
        names = [n.strip() for n in (args.only or ",".join(BUNDLED_TARGETS)).split(",") if n.strip()]
        unknown = [n for n in names if n not in BUNDLED_TARGETS]
        if unknown or not names:
            raise UsageError(
                f"--only: unknown bundled implementation(s) {unknown or [args.only]};"
                f" known: {list(BUNDLED_TARGETS)}"
            )
        args.only_names = names
        if args.exp_sweep and set(names) - {"kernel"}:
            raise UsageError(
                "--exp-sweep: the bundled exact and fast references expose no sweepable exp (the fast"
                " reference's is the sweep's oracle); use --bundled --only kernel --exp-sweep"
            )
    if args.vectors is not None and args.no_vectors:
        raise UsageError("--vectors: cannot be combined with --no-vectors")
    if args.examples is not None:
        if args.no_fuzz:
            raise UsageError("--examples: has no effect with --no-fuzz")
        if args.examples < 1:
            raise UsageError(f"--examples: must be >= 1, got {args.examples}")
    if args.seed < 0:
        raise UsageError(f"--seed: must be >= 0, got {args.seed}")
    if args.accumulated is not None and args.accumulated < 0:
        raise UsageError(
            "--accumulated: must be 0 or a row count of vectors/data/accumulated.json,"
            f" got {args.accumulated}"
        )
    if args.bulk is not None and not 1 <= args.bulk <= MAX_BULK:
        raise UsageError(f"--bulk: must be 1 to 10^15 rows, got {args.bulk}")
    if args.bulk_seed < 0:
        raise UsageError(f"--bulk-seed: must be >= 0, got {args.bulk_seed}")
    if args.shapes is not None:
        from dyadic24.conformance.bulk import Profile, ProfileError

        if args.bulk is None:
            raise UsageError("--shapes: applies to --bulk")
        try:
            args.profile = Profile.parse(args.shapes)
        except ProfileError as exc:
            raise UsageError(f"--shapes: {exc}") from exc
    if args.exp is not None and not args.exp_sweep:
        raise UsageError("--exp: needs --exp-sweep")
    if args.exp is not None and not args.impl:
        raise UsageError("--exp: applies to --impl (a JSON-lines subject announces exp in its handshake)")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers: must be >= 1, got {args.workers}")
    if args.max_report < 1:
        raise UsageError(f"--max-report: must be >= 1, got {args.max_report}")
    if not (math.isfinite(args.timeout) and 0 < args.timeout <= MAX_TIMEOUT):
        raise UsageError(f"--timeout: must be a finite number of seconds in (0, 10^6], got {args.timeout}")
    if args.label is not None and (not args.label.isprintable() or not 1 <= len(args.label) <= 200):
        raise UsageError("--label: must be 1 to 200 printable characters on one line")
    _writable("--json", args.json)
    _writable("--junit", args.junit)
    if args.cmd is not None and not args.cmd.strip():
        raise UsageError("--cmd: the command is empty")
    nothing = args.no_vectors and args.no_fuzz and args.accumulated == 0 and args.no_invalid
    if nothing and args.bulk is None and not args.exp_sweep:
        raise UsageError(
            "nothing to check: --no-vectors, --no-fuzz, --accumulated 0 and --no-invalid leave no check"
            " (drop one, or add --bulk N or --exp-sweep)"
        )


def subject_name(args: argparse.Namespace) -> str:
    if args.impl:
        return str(args.impl)
    if args.cmd:
        return str(args.cmd)
    if args.mutant:
        return f"mutant {args.mutant}"
    return "bundled " + ",".join(args.only_names)


def _implementations(args: argparse.Namespace) -> list[tuple[str, Implementation | None, str]]:
    """The subjects, each started in a process of its own (SubjectError: one that cannot start)."""
    if args.impl:
        load = HostedImplementation(f"target:{args.impl}", args.impl, exp=args.exp, timeout=args.timeout)
        return [(args.impl, load, load.mode)]
    if args.mutant:
        from dyadic24.conformance.mutants import MUTANTS

        if args.mutant not in MUTANTS:
            raise UsageError(f"--mutant: unknown mutant {args.mutant!r}; known: {', '.join(MUTANTS)}")
        impl = HostedImplementation(f"mutant:{args.mutant}", f"mutant {args.mutant}", timeout=args.timeout)
        return [(args.mutant, impl, impl.mode)]
    if args.cmd:
        cmd = CommandImplementation(args.cmd, timeout=args.timeout)
        return [(cmd.name, cmd, cmd.mode)]
    return bundled(args.only_names, timeout=args.timeout)


def _option(args: argparse.Namespace) -> str:
    return "--impl" if args.impl else "--cmd" if args.cmd else "--mutant" if args.mutant else "--bundled"


def main(argv: Sequence[str] | None = None) -> int:
    import faulthandler

    from dyadic24.conformance import stop

    if not faulthandler.is_enabled():  # a crash of the runner itself shows where, not a bare signal
        with contextlib.suppress(AttributeError, ValueError, OSError):  # (no usable standard error)
            faulthandler.enable()
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        validate(args)
    except UsageError as exc:
        print(f"dyadic24 conform: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with stop.handlers():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from dyadic24.conformance.report import render_text, summary_line, write_json, write_junit
    from dyadic24.vectors import accumulated, store

    try:
        spec_sha, vectors_sha = store.verify_release(args.vectors)
        vectors: list[Any] = [] if args.no_vectors else list(store.iter_vectors(args.vectors))
        notes = store.flag_notes()
        known = sorted(accumulated.expected())
    except store.VectorDataError as exc:
        print(f"dyadic24 conform: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyError as exc:
        print(f"dyadic24 conform: --vectors: {exc.args[0]}", file=sys.stderr)
        return EXIT_USAGE
    if args.accumulated not in (None, 0, *known):
        print(
            f"dyadic24 conform: --accumulated: must be 0 or one of {', '.join(map(str, known))} rows,"
            f" got {args.accumulated}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    report = RunReport(
        spec_sha256=spec_sha, vectors_sha256=vectors_sha, subject=subject_name(args), label=args.label
    )
    impls: list[tuple[str, Implementation | None, str]] = []
    stopped: Interrupted | None = None
    try:
        try:
            impls = _implementations(args)
        except UsageError as exc:
            print(f"dyadic24 conform: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except SubjectError as exc:
            print(
                f"dyadic24 conform: {_option(args)}: cannot load the implementation: {exc}", file=sys.stderr
            )
            return EXIT_USAGE
        if args.exp_sweep:
            lacking = [impl.name for _, impl, _ in impls if impl is not None and not impl.has_exp]
            if lacking:
                how = "--exp MODULE:CALLABLE" if args.impl else '"exp": true in its handshake (PROTOCOL.md)'
                print(
                    f"dyadic24 conform: --exp-sweep: {lacking[0]} exposes no exp routine ({how})",
                    file=sys.stderr,
                )
                return EXIT_USAGE
        for name, impl, mode in impls:
            if impl is None:
                report.implementations.append(ImplementationReport(name=name, mode="", skipped=mode))
                continue
            entry = ImplementationReport(
                name=impl.name, mode=mode, traced=impl.traces and not args.no_trace, formats=impl.formats
            )
            report.implementations.append(entry)
            try:
                _check(impl, args, vectors, entry)
            except Interrupted as exc:
                entry.interrupted = exc.name
                raise
    except Interrupted as exc:
        stopped = exc
        report.interrupted = exc.name
    finally:
        for _, impl, _ in impls:
            if impl is not None:
                try:
                    impl.close()
                except Interrupted:
                    # a signal while closing: the checks are over (or already stopped) and the verdict
                    # stands; signals are ignored from the first on, so this close runs to its end
                    impl.close()
    if not args.quiet:
        print(render_text(report, args.max_report, notes))
    for option, path, write in (("--json", args.json, write_json), ("--junit", args.junit, write_junit)):
        if path:
            try:
                write(report, path)
            except OSError as exc:
                print(
                    f"dyadic24 conform: {option} {path}: the report could not be written"
                    f" ({exc.strerror or exc}); the verdict below stands",
                    file=sys.stderr,
                )
    print(summary_line(report), flush=True)
    if stopped is not None:
        return stopped.exit_status
    if all(i.skipped is not None for i in report.implementations):
        print("dyadic24 conform: no implementation could be run", file=sys.stderr)
        return EXIT_USAGE
    return {CONFORMANT: EXIT_OK, NON_CONFORMANT: EXIT_FAIL, REDUCED: EXIT_REDUCED}.get(
        report.verdict, EXIT_USAGE
    )


_ORACLES: dict[str, PythonImplementation] = {}


def oracle(name: str) -> PythonImplementation:
    """A reference the runner compares with, in its own process (the runner's own code)."""
    if name not in _ORACLES:
        target = BUNDLED_TARGETS[name]
        _ORACLES[name] = PythonImplementation(
            load_target(target), f"{name} reference", origin=f"target:{target}"
        )
    return _ORACLES[name]


def _check(
    impl: Implementation, args: argparse.Namespace, vectors: list[Any], entry: ImplementationReport
) -> None:
    """Every check asked for, filling ``entry`` as results come (a stopped run keeps what it has)."""
    from dyadic24.conformance import runner
    from dyadic24.conformance.strategies import CI, DEEP
    from dyadic24.conformance.workers import usable_workers

    progress = not (args.quiet or args.no_progress)
    trace = not args.no_trace
    workers = usable_workers(args.workers)
    entry.exp_asked = bool(args.exp_sweep)
    if args.no_vectors:
        entry.vectors_note = "--no-vectors"
    elif args.vectors is not None:
        entry.vectors_note = f"a subset: {' '.join(args.vectors)}"
    if vectors:
        entry.vectors_total = len(vectors) if args.vectors is None else 0
        runner.run_vectors(impl, vectors, trace=trace, progress=progress, results=entry.vectors)
    if args.no_invalid:
        entry.invalid_note = "--no-invalid"
    elif impl.invalid_calls:
        entry.invalid = InvalidResult()
        runner.run_invalid(impl, progress, entry.invalid)
    else:
        entry.invalid_note = MINOR0_NOTE
    acc_rows = args.accumulated if args.accumulated is not None else (1_000_000 if args.deep else 10_000)
    if acc_rows:
        entry.accumulated = runner.run_accumulated(impl, acc_rows, progress)
    if not args.no_fuzz:
        oracle_name = args.oracle
        if getattr(impl, "origin", None) == f"target:{BUNDLED_TARGETS[oracle_name]}":
            oracle_name = (
                "exact" if oracle_name == "fast" else "fast"
            )  # a reference is not fuzzed against itself
        profile = DEEP if args.deep else CI
        entry.fuzz = FuzzResult(
            oracle=oracle_name,
            seed=args.seed,
            profile=profile.name,
            budget=profile.examples if args.examples is None else args.examples,
        )
        runner.run_fuzz(
            impl,
            oracle(oracle_name),
            oracle_name=oracle_name,
            profile=profile,
            examples=args.examples,
            seed=args.seed,
            shrink=not args.no_shrink,
            trace=trace,
            progress=progress,
            result=entry.fuzz,
        )
    if args.bulk is not None:
        from dyadic24.conformance.bulk import ALL, run_bulk
        from dyadic24.conformance.report import BulkResult

        entry.bulk = BulkResult(seed=args.bulk_seed)
        run_bulk(
            impl,
            args.bulk,
            seed=args.bulk_seed,
            workers=workers,
            progress=progress,
            max_failures=args.max_report,
            result=entry.bulk,
            profile=getattr(args, "profile", None) or ALL,
        )
    if args.exp_sweep:
        from dyadic24.conformance.expsweep import run_exp_sweep

        entry.exp_sweep = ExpSweepResult()
        run_exp_sweep(
            impl, workers=workers, progress=progress, max_examples=args.max_report, result=entry.exp_sweep
        )


if __name__ == "__main__":
    sys.exit(main())
