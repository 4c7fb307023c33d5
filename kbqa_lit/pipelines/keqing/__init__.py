"""Keqing inference: template matching, chain execution over a store, reasoning and responses.

Keqing ("knowledge-based question answering is a nature chain-of-thought mentor of LLM")
decomposes a question into sub-questions, matches each to question templates and their logical
chains (:mod:`.matching`), executes the chains over the knowledge base (:mod:`.retrieval`), reads
the answers from the retrieved triples (:mod:`.reasoning`) and summarises the execution log
(:mod:`.response`).
"""
