"""The ground floor; it imports nothing else of kbqa_lit.

The logical-form language (``lf/``), stores (``store/``), indexes (``index/``) and Virtuoso
administration (``virtuoso/``). The decoding grammar is one floor up, in :mod:`kbqa_lit.decoding`.
"""
