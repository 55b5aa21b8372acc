"""Triton implementation of dyadic24-floor-first-v1 (clauses 1-12).

Importing this package imports neither torch nor triton; the submodules that hold kernels do.
Entry points: :func:`dyadic24.kernels.propose.propose` (torch tensors, CUDA-graph capturable, also
registered as the custom op ``dyadic24::propose``) and :func:`dyadic24.kernels.adapter.propose` (the
numpy call protocol of clause 12.2). Without a CUDA device the kernels run under Triton's CPU
interpreter; :mod:`dyadic24.kernels.backend` selects it before any kernel is defined. An installed
Python, torch, triton or numpy older than :mod:`dyadic24.kernels.versions` supports refuses the import
with one line naming the versions.
"""

from dyadic24.kernels.versions import check as _check_versions

_check_versions()
