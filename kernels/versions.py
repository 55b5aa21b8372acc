"""The Python, torch, triton and numpy releases dyadic24.kernels supports, checked when the package is
imported (issue 42).

Tested: Python 3.11, 3.12 and 3.13; triton 3.6 compiled on the GPU, 3.7.1 (what torch 2.13 pins on
Python 3.13) and the newest in the interpreter; numpy 2.x. The lower bounds are those of
``pyproject.toml`` (tests/test_kernel_versions.py keeps the two equal). Newer releases than those
tested are not refused: an upper cap makes pip fall back to older releases instead of failing, and a
newer release that breaks the rule fails the conformance run, not silently.

The installed versions are read from the distributions' metadata, so the check imports neither torch
nor triton (tests/test_package_imports.py). A package that is not installed is left to the import that
needs it; one that is installed at an unsupported version refuses the import with one line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from importlib import metadata

# (name, lowest supported (major, minor)); the pyproject bounds: requires-python, numpy, the kernels extra
MINIMUM: dict[str, tuple[int, int]] = {
    "Python": (3, 11),
    "torch": (2, 11),  # the oldest tested: with triton 3.6 on the GPU machine (README's H200 run)
    "triton": (3, 6),  # the oldest tested: the GPU machine's
    "numpy": (2, 0),
}
SUPPORTED = (
    "supported: Python 3.11, 3.12, 3.13; torch >= 2.11; triton >= 3.6 (3.6 compiled on GPUs, "
    "3.7 and the newest in the interpreter); numpy 2.x"
)
# distributions that install the ``triton`` module (PyTorch's nightly builds name it pytorch-triton)
DISTRIBUTIONS = {"torch": ("torch",), "triton": ("triton", "pytorch-triton"), "numpy": ("numpy",)}


class UnsupportedVersionError(ImportError):
    """An installed release that dyadic24.kernels does not support; the message is one line."""


def release(version: str) -> tuple[int, int] | None:
    """(major, minor) of a version string such as '3.7.1', '2.13.0+cpu' or '3.6.0+git9a1b'."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def installed(lookup: Callable[[str], str] = metadata.version) -> dict[str, str]:
    """The versions of Python and of the installed torch, triton and numpy (absent ones left out)."""
    found = {"Python": ".".join(str(v) for v in sys.version_info[:3])}
    for name, dists in DISTRIBUTIONS.items():
        for dist in dists:
            try:
                found[name] = lookup(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return found


def problem(versions: Mapping[str, str]) -> str | None:
    """One line naming the unsupported versions and every version found, or None if all are supported."""
    low = [
        f"{name} {versions[name]} (needs >= {MINIMUM[name][0]}.{MINIMUM[name][1]})"
        for name in MINIMUM
        if name in versions and (got := release(versions[name])) is not None and got < MINIMUM[name]
    ]
    if not low:
        return None
    found = ", ".join(f"{name} {version}" for name, version in versions.items())
    return f"dyadic24.kernels does not support {'; '.join(low)}; found {found}; {SUPPORTED}"


def check(lookup: Callable[[str], str] = metadata.version) -> None:
    """Raise UnsupportedVersionError (one line) if an installed release is below its supported minimum."""
    line = problem(installed(lookup))
    if line is not None:
        raise UnsupportedVersionError(line)
