"""``SkeletonParserDataModule``: FC-KBQA's logical skeleton parser as seq2seq rows.

Source: the question with its mentions masked as ``<entity0>``, ``<entity1>``... in order
(:func:`~kbqa_lit.data.fc.skeletons.mask_mentions`); target: the skeleton of the gold
S-expression (:func:`~kbqa_lit.data.fc.skeletons.lf_skeleton`, ``(R <rel>)`` for reverse hops).

Which mentions are masked: training, the gold topic entities' labels
(:func:`~kbqa_lit.data.fc.skeletons.parser_example`); validation, test and predict, the mentions
the FC linker found (``meta["fc"]["mentions"]``, written by the FC pipeline) or else the labels of
the inference view's linked entities (:mod:`kbqa_lit.data.linking`) — never the gold, unless
``oracle: linking`` (then the run is labelled an oracle run). Inference takes the top-2 of the
parser's beams by :func:`~kbqa_lit.data.fc.skeletons.top2_skeletons`.
"""

from __future__ import annotations

from typing import Any

from kbqa_lit.data.fc.composer_examples import FC_META
from kbqa_lit.data.fc.skeletons import lf_skeleton, mask_mentions, parser_example
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.datamodules.fc.seq2seq import FCSeq2SeqDataModule
from kbqa_lit.datamodules.split_files import canonical_split
from kbqa_lit.errors import SExprError


def inference_mentions(view: KBQAExample) -> list[str]:
    """The mentions an inference view may mask: the FC linker's, else its linked entities' labels."""
    found = (view.meta.get(FC_META) or {}).get("mentions")
    if found is not None:
        return [str(m) for m in found]
    return [str(label) for label in view.topic_entities.values()]


def _skeleton_or_none(ex: KBQAExample) -> str | None:
    if not ex.s_expression:
        return None
    try:
        return lf_skeleton(ex.s_expression)
    except SExprError:
        return None


class SkeletonParserDataModule(FCSeq2SeqDataModule):
    """Masked question → skeleton rows for the seq2seq generator (see the module docstring).

    Args:
        mask_mentions: Mask the mentions (false: the question as it is, for the masked-vs-unmasked figure).
        **kwargs: The arguments of :class:`~kbqa_lit.datamodules.fc.seq2seq.FCSeq2SeqDataModule`;
            ``oracle`` is ``none`` or ``linking`` (evaluation masks the gold mentions).
    """

    ORACLES = ("none", "linking")

    def __init__(self, mask_mentions: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def row_texts(self, split: str) -> list[tuple[str, str | None]]:
        """``(masked question, skeleton)`` per example of ``split``, in file order."""
        split = canonical_split(split)
        if split == "train":
            out: list[tuple[str, str | None]] = []
            for ex in self.gold_examples(split):
                try:
                    pair = parser_example(ex)
                except SExprError:
                    pair = None
                out.append(pair if pair is not None else (ex.question, None))
            return (
                out
                if self.hparams.mask_mentions
                else [(ex.question, t) for ex, (_, t) in zip(self.gold_examples(split), out, strict=True)]
            )
        views, golds = self.examples(split), self.gold_examples(split)
        return [
            (
                mask_mentions(view.question, inference_mentions(view)) if self.hparams.mask_mentions else view.question,
                _skeleton_or_none(gold),
            )
            for view, gold in zip(views, golds, strict=True)
        ]


__all__ = ["SkeletonParserDataModule", "inference_mentions"]
