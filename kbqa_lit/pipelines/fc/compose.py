"""FC-KBQA's coarse-grained composition at inference: constrained beams, then the first executable one.

:class:`ComposerStage` writes each question's composer input
(:func:`~kbqa_lit.data.fc.composer_examples.composer_row`, as the composer was trained on), runs
beam search with the KB-connected pairs as the decoding constraint — the project's one
grammar-constrained processor (:class:`~kbqa_lit.decoding.processor.GrammarLogitsProcessor`
over :class:`~kbqa_lit.decoding.grammar.SExprGrammar`) with FC's rule set
(:class:`~kbqa_lit.decoding.pairs.PairRules`; ``constraint`` the paper's ``bag`` or ``trie``,
``none`` the −decode-constraint ablation; ``partners`` and ``chain_heads`` as there, the paper's
by default) — puts the entity labels back into slot-masked beams and picks the first beam that
executes to a non-empty answer
(:class:`~kbqa_lit.pipelines.selection.execution_guided.ExecutionGuidedSelector`), as for CoQ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

from kbqa_lit.data.entity_slots import SLOT_TOKENS, topic_slots, unmask_lf
from kbqa_lit.data.fc.composer_examples import Components, composer_row
from kbqa_lit.data.fc.composer_inputs import check_input_format
from kbqa_lit.data.fc.decoding import pair_rules
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.decoding.grammar import BaseRules, SExprGrammar
from kbqa_lit.decoding.pairs import PAIR_PARTNERS
from kbqa_lit.decoding.processor import GrammarLogitsProcessor
from kbqa_lit.decoding.tokens import TokenIndex
from kbqa_lit.errors import UserInputError, check_choice
from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.kb.store import KnowledgeBase
from kbqa_lit.pipelines.fc.generation import Seq2SeqPart, generate_beams
from kbqa_lit.pipelines.selection.execution_guided import ExecutionGuidedSelector, Selection

CONSTRAINTS = ("trie", "bag", "none")


def view_of(ex: KBQAExample, components: Components) -> KBQAExample:
    """The example as composition sees it: its detected entities as ``topic_entities`` (slots follow them)."""
    return dataclasses.replace(ex, topic_entities=dict(components.entities))


def pair_grammar(
    components: Components,
    view: KBQAExample,
    mode: Literal["trie", "bag"] = "bag",
    chain_heads: int = 0,
    partners: Literal["last", "any"] = "last",
) -> SExprGrammar:
    """The decoding grammar of one question: well-formed S-expressions over its pairs and entities.

    Args:
        components: Its pairs and entities.
        view: The question as composition sees it (:func:`view_of`: its slots follow the entities).
        mode: ``bag`` (the paper's) or ``trie``; see :class:`~kbqa_lit.decoding.pairs.PairRules`.
        chain_heads: See :class:`~kbqa_lit.decoding.pairs.PairRules` (0: the paper's start set).
        partners: ``last`` (the paper's) or ``any``; see :class:`~kbqa_lit.decoding.pairs.PairRules`.
    """
    rules = pair_rules(components, [slot for slot, _ in topic_slots(view)], mode, chain_heads, partners)
    return SExprGrammar([BaseRules(SLOT_TOKENS), rules])


class ComposerStage:
    """Constrained composition and execution-guided choice (see the module docstring).

    Args:
        composer: The trained composer (a seq2seq part).
        kb: The knowledge base beams are executed on (``None``: :meth:`answer` is unavailable).
        constraint: ``bag`` (the paper's bag of words), ``trie`` (exact pair items) or ``none``.
        num_beams: Beams per question (all are tried in order).
        max_new_tokens: Longest logical form.
        chain_heads: See :class:`~kbqa_lit.decoding.pairs.PairRules` (0: the paper's start set).
        partners: ``last`` (the paper's) or ``any``; see :class:`~kbqa_lit.decoding.pairs.PairRules`.
        mask_entities: Entities as slots (as the composer was trained).
        knowledge: ``pairs``, ``components`` or ``none`` in the input (as trained).
        input_format: ``paper`` (§4.5) or ``entity-pairs`` (ours), as the composer was trained.
        use_skeletons: Write the skeletons into the input (as trained).
        max_input_words: The input's length limit in words.
        batch_size: Questions per ``generate`` call.
        workers: Queries in flight per question.
    """

    def __init__(
        self,
        composer: Seq2SeqPart,
        kb: KnowledgeBase | None = None,
        constraint: Literal["trie", "bag", "none"] = "bag",
        num_beams: int = 10,
        max_new_tokens: int = 96,
        chain_heads: int = 0,
        partners: Literal["last", "any"] = "last",
        mask_entities: bool = True,
        knowledge: Literal["pairs", "components", "none"] = "pairs",
        input_format: Literal["paper", "entity-pairs"] = "paper",
        use_skeletons: bool = True,
        max_input_words: int | None = None,
        batch_size: int = 16,
        workers: int = 1,
    ) -> None:
        check_choice("constraint", constraint, CONSTRAINTS)
        check_choice("partners", partners, PAIR_PARTNERS)
        self.composer = composer
        self.constraint = constraint
        self.num_beams, self.max_new_tokens, self.chain_heads = num_beams, max_new_tokens, chain_heads
        self.partners = partners
        self.row_settings: dict[str, Any] = {
            "mask_entities": mask_entities,
            "knowledge": knowledge,
            "input_format": check_input_format(input_format),
            "use_skeletons": use_skeletons,
            "max_tokens": max_input_words,
        }
        self.batch_size = batch_size
        self.selector = ExecutionGuidedSelector(kb, workers=workers) if kb is not None else None
        self._index: TokenIndex | None = None

    def _token_index(self) -> TokenIndex:
        if self._index is None:
            config = getattr(getattr(self.composer, "model", None), "config", None)
            self._index = TokenIndex(self.composer.tokenizer, getattr(config, "vocab_size", None))
        return self._index

    def beams(self, examples: Sequence[KBQAExample], components: Sequence[Components]) -> list[list[str]]:
        """Normalised S-expression beams per question, best first, slots replaced by the entity labels."""
        views = [view_of(ex, c) for ex, c in zip(examples, components, strict=True)]
        texts = [composer_row(v, c, **self.row_settings)[0] for v, c in zip(views, components, strict=True)]
        grammars = (
            [
                pair_grammar(c, v, self.constraint, self.chain_heads, self.partners)  # type: ignore[arg-type]
                for v, c in zip(views, components, strict=True)
            ]
            if self.constraint != "none"
            else []
        )

        def processor(start: int, stop: int) -> GrammarLogitsProcessor | None:
            if not grammars:
                return None
            return GrammarLogitsProcessor(
                self._token_index(),
                grammars[start:stop],
                num_beams=self.num_beams,
                max_new_tokens=self.max_new_tokens,
                budget_top_k=2 * self.num_beams,  # generate's beam search takes the 2 * num_beams best tokens
            )

        found = generate_beams(
            self.composer, texts, self.num_beams, self.max_new_tokens, batch_size=self.batch_size, processor=processor
        )
        return [[unmask_lf(b, v) for b in bs] for bs, v in zip(found, views, strict=True)]

    def answer(self, examples: Sequence[KBQAExample], components: Sequence[Components]) -> list[Selection]:
        """The execution-guided selection of each question (the first beam that executes).

        Raises:
            UserInputError: Without a knowledge base.
        """
        if self.selector is None:
            raise UserInputError("ComposerStage.answer needs a knowledge base (kb=...)")
        out = []
        for ex, c, beams in zip(examples, components, self.beams(examples, components), strict=True):
            out.append(
                self.selector.select(
                    beams,
                    semantics=ex.semantics,
                    label_to_ids=invert_labels(c.entities),
                    candidates=list(c.entities.items()),
                )
            )
        return out


__all__ = ["CONSTRAINTS", "ComposerStage", "pair_grammar", "view_of"]
