"""Keqing's datamodules: the decomposer's instruction rows."""
