"""Virtuoso administration: the server (start, load, stop; ``kbqa kb serve-virtuoso``) and its ini file."""
