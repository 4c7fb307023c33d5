"""Answer selection shared by every system.

Execution-guided selection over candidate logical forms (the first executable beam), the KB-path
fallback and the answer-type check.
"""
