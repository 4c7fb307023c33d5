"""Inference across each system's trained parts (one folder per system); shared execution-guided selection."""
