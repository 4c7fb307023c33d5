"""``LogicalFormRanker``: the coarse ranker of FC-KBQA's pilot study, the shared cross-encoder on whole logical forms.

The pilot (FC-KBQA, section 2) compares ranking candidate logical forms as wholes — one encoder
over ``(question, logical form)`` — with the fine-grained ranking of their components. This
module is the coarse side: :class:`~kbqa_lit.modules.cross_encoder.CrossEncoderRetriever` (the
same encoder, linear head and group-softmax loss as the extractors) whose items are texts, read
as they are: the normalised logical forms (``( join [ people , person , place of birth ] [ Ada ] )``)
that :mod:`kbqa_lit.pipelines.fc.pilot` writes.
"""

from __future__ import annotations

from kbqa_lit.modules.cross_encoder import CrossEncoderRetriever


class LogicalFormRanker(CrossEncoderRetriever):
    """Scores ``(question, logical form text)`` pairs (the arguments of the shared cross-encoder)."""

    def item_text(self, item: str) -> str:
        """The item is the logical form's text itself."""
        return item


__all__ = ["LogicalFormRanker"]
