"""Lightning callbacks, importable by class path from YAML.

Execution-guided evaluation, prediction writers, adapter export.
"""
