"""The conformance suite of dyadic24-floor-first-v1 (clauses 12-13).

- ``cli``: ``dyadic24 conform`` (golden vectors, then hypothesis fuzzing; exit 0 only on conformance);
  ``cite``: ``dyadic24 cite``.
- ``runner`` / ``compare`` / ``report``: running, first-divergence search in clause order, reports.
- ``impls``: Python callables, JSON-lines programs (``jsonl``, PROTOCOL.md), the bundled implementations.
- ``strategies``: public hypothesis strategies aimed at the edges of the rule.
- ``mutants``: deliberately wrong implementations, one broken clause each; ``kill_matrix`` records
  which of them the vectors and the fuzzing reject (KILL_MATRIX.md).

Importing this package never imports torch or triton.
"""
