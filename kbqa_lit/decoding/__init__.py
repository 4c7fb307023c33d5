"""Grammar-constrained decoding, one feature on one floor (it imports only ``kb``).

The word-level grammar of S-expressions (``grammar.py``) and its rule sets (``rules.py``: the base,
schema and entity vocabularies; ``pairs.py``: FC-KBQA's KB-connected pairs; ``anchor.py``: expressions
anchored on the linked entities), and the token-level ``LogitsProcessor`` that every system's beam
search uses (``processor.py``: token masks per grammar state); ``char_constraint.py``: the same idea for outputs
with fixed punctuation (JSON) and any tokenizer, a character automaton with a cached token mask per state
(Keqing's constrained decomposer).
"""
