"""LLM backends (a local Hugging Face causal LM, an OpenAI-compatible HTTP server) and their response cache.

Shared by CoQ decomposition, TFS inference and Keqing's decomposer and reasoner.
"""
