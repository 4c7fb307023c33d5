"""The ground floor; it imports nothing else of kbqa_lit.

The logical-form language (``lf/``), stores (``store/``), indexes (``index/``), Virtuoso administration
(``virtuoso/``) and the decoding grammar (``grammar*.py``).
"""
