"""Lightning callbacks (importable by class path from YAML): execution-guided evaluation, prediction writers, adapter export."""
