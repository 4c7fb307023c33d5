"""LLM backends (a local Hugging Face causal LM, an OpenAI-compatible HTTP server) and their response cache.

Shared by CoQ decomposition, Keqing and TFS inference.
"""
