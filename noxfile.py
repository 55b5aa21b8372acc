"""CI's version matrix beyond the README's test command (issue 42); `.ci/run` calls it after that command.

    nox --error-on-missing-interpreters           # every session
    nox -s kernels-3.13                           # one

nox rather than tox: a session is plain Python (the README's install as it stands, the test files picked
by glob, the steps in order), checked by ruff with the rest of the repository, where tox says
the same in its ini dialect; nox builds its environments with the stdlib venv, as the README does, and
installs from PyPI with pip into a venv of its own.

The README's command covers the system Python (3.11 on CI) with the newest triton in the interpreter;
these sessions add:

- ``kernels-3.13``: Python 3.13, the README's install (``torch==2.13.0 '.[kernels,test]'``), so triton is
  the release torch 2.13 pins there (3.7.1, with PyPI's CUDA build of torch: 2.7 GB of wheels); the
  kernel and conformance tests in the interpreter, then the bundled kernel's conformance run.
- ``kernels-gpu-pair``: the GPU machine's Python 3.12, torch 2.11 and triton 3.6 (the oldest supported
  pair): the kernel tests in its interpreter and its compiler's sm_90 audits, which differ by release.
- ``reference-3.12``: Python 3.12 and the lowest numpy supported (2.0), without torch: the reference,
  vectors and conformance tests (the kernel tests skip themselves).

On two shared cores (fresh clone of 9d19f49, 2026-12-06): kernels-3.13 26 minutes (install 1.5, tests
9.3, the conform run 14.2: its accumulated check 12), reference-3.12 4; kernels-gpu-pair 6 (e67ed2b);
with the README's command (about 10), CI stays well inside its 90 minutes.
"""

from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
nox.options.default_venv_backend = "venv"  # (the README's `python3 -m venv`)
nox.options.reuse_existing_virtualenvs = False
PYTEST = ["python", "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider"]
# (the versions pip resolved, in the log; importing dyadic24.kernels also refuses unsupported ones)
SHOW_VERSIONS = "from dyadic24.kernels.versions import installed; print('versions:', installed())"


def _tests(*patterns: str) -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for pattern in patterns for p in ROOT.glob(f"tests/{pattern}"))


@nox.session(name="kernels-3.13", python="3.13")
def kernels_313(session: nox.Session) -> None:
    """Python 3.13 with the triton torch 2.13 pins: kernel and conformance tests, the kernel's conform run."""
    session.install("torch==2.13.0", ".[kernels,test]")
    session.run("python", "-c", SHOW_VERSIONS)
    session.run(*PYTEST, *_tests("test_kernel_*.py", "test_sharded_*.py", "test_conformance_*.py"))
    # (the README's main job on the kernel alone, from the source tree: CONFORMANT is exit 0)
    session.run("python", "-m", "dyadic24", "conform", "--bundled", "--only", "kernel", "--no-progress")


@nox.session(name="kernels-gpu-pair", python="3.12")
def kernels_gpu_pair(session: nox.Session) -> None:
    """The GPU machine's versions (Python 3.12, torch 2.11, triton 3.6): the kernel tests in its
    interpreter and its compiler's sm_90 audits (triton 3.6 puts no barrier before a noinline call;
    later releases do: aot_check.call_fence_problems fails there alone)."""
    session.install("torch==2.11.0", "triton==3.6.0", ".[kernels,test]")
    session.run("python", "-c", SHOW_VERSIONS)
    session.run(*PYTEST, *_tests("test_kernel_*.py"))


@nox.session(name="reference-3.12", python="3.12")
def reference_312(session: nox.Session) -> None:
    """Python 3.12 with numpy 2.0: the tests that need no torch (the kernel tests skip without it)."""
    session.install("numpy==2.0.*", ".[test]")
    session.run("python", "-c", SHOW_VERSIONS)
    tests = ("exact", "fast", "vectors", "conformance", "spec", "package", "verify")
    session.run(*PYTEST, *_tests(*(f"test_{name}_*.py" for name in tests)))
