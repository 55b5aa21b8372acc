"""The normative specification of dyadic24-floor-first-v1 (``dyadic24-floor-first-v1.md``).

``worked_example`` generates Appendix A of the specification from the exact reference.
"""
