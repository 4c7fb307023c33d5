"""The example schema, dataset readers and the synthetic world (builds on ``kbqa_lit.kb`` only)."""

from kbqa_lit.data.schema import Answer, KBQAExample

__all__ = ["Answer", "KBQAExample"]
