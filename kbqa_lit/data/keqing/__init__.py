"""Keqing's input texts: question templates, logical chains, decomposition targets and parsing."""
