"""Where this package's own files are: the places no command of it ever writes into.

The package may be a source checkout (whose sub-packages are symbolic links to the top-level folders),
a wheel in site-packages, or a ``pip install --target`` folder; every one of its directories is
resolved, so a path that reaches them through a symbolic link is recognised too.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

SUBPACKAGES = ("conformance", "kernels", "reference", "spec", "vectors")


@cache
def package_dirs() -> tuple[Path, ...]:
    """The resolved directories holding this package's files."""
    import dyadic24

    dirs = {Path(p).resolve() for p in dyadic24.__path__}
    for name in SUBPACKAGES:
        try:
            # a sub-package's __path__ without running its code (kernels imports torch when used)
            spec = importlib.util.find_spec(f"dyadic24.{name}")
        except (ImportError, ValueError):
            continue
        for loc in (spec.submodule_search_locations or []) if spec is not None else []:
            dirs.add(Path(loc).resolve())
    return tuple(sorted(dirs))


def source_checkout() -> bool:
    """Whether this package runs from a git checkout of the project (whose data its maintainers
    regenerate) rather than from an installation."""
    import dyadic24

    return (Path(next(iter(dyadic24.__path__))).resolve().parent / ".git").exists()


def inside_package(path: Path | str) -> Path | None:
    """The package directory that ``path`` (resolved, symbolic links followed) lies in, if any."""
    resolved = Path(path).resolve()
    for d in package_dirs():
        if resolved == d or resolved.is_relative_to(d):
            return d
    return None
