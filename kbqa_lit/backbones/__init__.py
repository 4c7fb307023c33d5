"""Backbone factories shared by every system: seq2seq (T5), encoders (MiniLM/BERT), causal LMs.

One rule for "is this a local model folder" and one tokenizer round trip (:mod:`.common`).
"""
