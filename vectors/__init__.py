"""Golden vectors of dyadic24-floor-first-v1 (clause 13): reader, generator, accumulated check.

``dyadic24.vectors.store`` reads the files in ``vectors/data``; ``dyadic24.vectors.generate`` writes
them from the exact reference only; ``dyadic24.vectors.accumulated`` is the seeded stream of
clause 13.2. Format: ``vectors/README.md`` and ``vectors/schema.json``.
"""
