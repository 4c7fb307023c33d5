"""FC-KBQA's first stages at inference: detection → linking → skeleton top-2 → KB-connected pairs.

:class:`ComponentStage` turns questions into the composer's :class:`~kbqa_lit.data.fc.composer_examples.Components`:

1. :class:`~kbqa_lit.pipelines.fc.detection.ComponentDetector`: the top-k relations and classes;
2. :class:`~kbqa_lit.pipelines.fc.linking.FCEntityLinker`: mentions, literals, relation-aware
   pruning against the detected relations;
3. the skeleton parser (a trained seq2seq part, or the nearest training questions:
   :mod:`~kbqa_lit.pipelines.fc.skeleton_neighbours`) on the question with the linked mentions masked
   (:func:`~kbqa_lit.data.fc.skeletons.mask_mentions`), top-2 by the chain rule
   (:func:`~kbqa_lit.data.fc.skeletons.top2_skeletons`); without a parser, no skeletons (the
   −logical-skeleton ablation, and relation–entity pairs are then always built);
4. :class:`~kbqa_lit.pipelines.fc.pairs.PairBuilder`: the three pair sets.

Only the question (and the qid, for a precomputed linker) is read: no gold field.
:meth:`ComponentStage.annotate` writes the result into ``meta["fc"]`` (with the mentions), what
:class:`~kbqa_lit.datamodules.fc.composer.ComposerDataModule` and
:class:`~kbqa_lit.datamodules.fc.skeleton.SkeletonParserDataModule` read at evaluation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from kbqa_lit.data.fc.composer_examples import FC_META, Components, components_meta
from kbqa_lit.data.fc.skeletons import mask_mentions, top2_skeletons, well_formed
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.pipelines.fc.detection import ComponentDetector, Detected
from kbqa_lit.pipelines.fc.generation import Seq2SeqPart, generate_beams
from kbqa_lit.pipelines.fc.linking import FCEntityLinker, LinkingResult
from kbqa_lit.pipelines.fc.pairs import PairBuilder
from kbqa_lit.pipelines.fc.skeleton_neighbours import NeighbourSkeletons


@dataclass
class Detection:
    """Everything the first stages found for one question.

    Attributes:
        components: What the composer reads (pairs, entities, skeletons).
        mentions: The linked entities' mentions, in order (what the skeleton parser masks).
        detected: The extractors' top relations and classes.
        linking: The linker's result (entities with their edges, literals).
    """

    components: Components
    mentions: list[str]
    detected: Detected
    linking: LinkingResult


class ComponentStage:
    """Detection, linking, skeletons and pairs for a batch of questions (see the module docstring).

    Args:
        detector: Relation and class detection.
        linker: Entity linking with relation-aware pruning.
        pair_builder: The KB-connected pairs.
        skeleton_parser: The trained skeleton parser, or the nearest-training-question source
            (:class:`~kbqa_lit.pipelines.fc.skeleton_neighbours.NeighbourSkeletons`; ``None``: no skeletons).
        skeleton_beams: Beams of the skeleton parser (the top-2 rule reads them).
        max_new_tokens: Longest skeleton.
        batch_size: Questions per ``generate`` call.
        mask_mentions: Mask the linked mentions in the parser's input (as it was trained).
    """

    def __init__(
        self,
        detector: ComponentDetector,
        linker: FCEntityLinker,
        pair_builder: PairBuilder,
        skeleton_parser: Seq2SeqPart | NeighbourSkeletons | None = None,
        skeleton_beams: int = 4,
        max_new_tokens: int = 48,
        batch_size: int = 16,
        mask_mentions: bool = True,
    ) -> None:
        self.detector = detector
        self.linker = linker
        self.pair_builder = pair_builder
        self.skeleton_parser = skeleton_parser
        self.skeleton_beams = max(2, int(skeleton_beams))
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.mask_mentions = mask_mentions

    def run(self, examples: Sequence[KBQAExample]) -> list[Detection]:
        """The detections of ``examples``, in order."""
        detected = [self.detector.detect(ex.question) for ex in examples]
        linked = [
            self.linker.link(ex.question, [r for r, _ in d.relations], qid=ex.qid)
            for ex, d in zip(examples, detected, strict=True)
        ]
        mentions = [[e.mention for e in link.entities] for link in linked]
        skeletons: list[list[str]] = [[] for _ in examples]
        ranked: list[list[str]] = [[] for _ in examples]
        if self.skeleton_parser is not None and examples:
            masked = [
                mask_mentions(ex.question, m) if self.mask_mentions else ex.question
                for ex, m in zip(examples, mentions, strict=True)
            ]
            if isinstance(self.skeleton_parser, NeighbourSkeletons):
                beams = self.skeleton_parser.beams(masked)
            else:
                beams = generate_beams(
                    self.skeleton_parser, masked, self.skeleton_beams, self.max_new_tokens, batch_size=self.batch_size
                )
            skeletons = [top2_skeletons(b) for b in beams]
            ranked = [well_formed(b) for b in beams]
        out = []
        for d, link, m, sk, more in zip(detected, linked, mentions, skeletons, ranked, strict=True):
            pairs = self.pair_builder.build(d.classes, d.relations, link.entities, sk)
            entities = {e.id: e.label or e.mention for e in link.entities}
            comp = Components(
                pairs.all,
                entities,
                sk,
                [r for r, _ in d.relations],
                [c for c, _ in d.classes],
                [s for _, s in d.relations],
                [s for _, s in d.classes],
                more,
            )
            out.append(Detection(comp, m, d, link))
        return out

    @property
    def skeleton_source(self) -> str:
        """Where the skeletons come from: ``neighbours`` (ours), ``parser`` (the paper's) or ``none``."""
        if self.skeleton_parser is None:
            return "none"
        return "neighbours" if isinstance(self.skeleton_parser, NeighbourSkeletons) else "parser"

    def annotate(self, examples: Sequence[KBQAExample]) -> list[KBQAExample]:
        """Copies of ``examples`` with ``meta["fc"]``: the components, the mentions and the skeletons' source."""
        extra = {"skeleton_source": self.skeleton_source}
        return [
            dataclasses.replace(
                ex, meta={**ex.meta, FC_META: {**components_meta(d.components), "mentions": d.mentions, **extra}}
            )
            for ex, d in zip(examples, self.run(examples), strict=True)
        ]


__all__ = ["ComponentStage", "Detection"]
