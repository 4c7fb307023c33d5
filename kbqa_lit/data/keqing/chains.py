"""Keqing's logical chains, now :mod:`kbqa_lit.kb.chains` (a shared floor: the KB-path fallback reads them too)."""

from kbqa_lit.kb.chains import Chain, Hop, chain_from_sexpr, chain_text, chain_to_sexpr, parse_chain

__all__ = ["Chain", "Hop", "chain_from_sexpr", "chain_text", "chain_to_sexpr", "parse_chain"]
