"""``KeqingDecompositionDataModule``: question → Keqing's JSON decomposition, for a causal LM.

Each training example whose gold S-expression is a chain of JOINs from its topic entity gives
one row: the prompt (:func:`~kbqa_lit.data.keqing.decomposition.decomposition_prompt` over the
question, its topic mention written as the slot ``[E0]`` by default) and the response, the
paper's JSON list with one sub-question per hop, each worded by the hop's template in the
:class:`~kbqa_lit.data.keqing.templates.TemplateBank` (``target: subquestions``), or the hop's
chain text itself (``target: chains``, the paper's "generate logical chains directly" ablation).
Examples that are not chains have no target and are counted (``skipped``).

Rows are tokenised by :class:`~kbqa_lit.datamodules.prompt_rows.PromptRowsBase` the way an
LLM backend tokenises a prompt at inference; the loss is on the response only; the Keqing configs
train :class:`~kbqa_lit.modules.lora_causal_lm.LoraCausalLM` on them (named by class path).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from kbqa_lit.data.keqing.decomposition import INSTRUCTION
from kbqa_lit.data.keqing.targets import decomposition_rows
from kbqa_lit.data.keqing.templates import TemplateBank, mine_templates
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.datamodules.prompt_rows import PromptRowsBase
from kbqa_lit.errors import UserInputError, check_choice

log = logging.getLogger(__name__)


class KeqingDecompositionDataModule(PromptRowsBase):
    """Decomposition rows for fine-tuning a causal LM (Keqing's decomposer).

    Args:
        train_file: Training examples (JSON lines, common schema).
        val_file: Validation examples (a held-out part of the training data).
        templates: The template bank (``kbqa keqing templates`` writes one); when the file is
            missing it is mined from ``train_file`` and written there.
        target: ``subquestions`` (template wordings, the paper) or ``chains`` (chain texts:
            the "generate logical chains directly" ablation).
        seed_form: ``slot`` (the topic mention becomes ``[E0]`` in the question and the seed;
            the default for small models trained here) or ``name`` (the entity's name, as a
            served LLM writes it).
        instruction: The prompt's instruction line.
        tokenizer_name_or_path: The base model's tokenizer; ``None`` trains a byte-level BPE on
            the training rows, cached next to the template bank.
        vocab_size: Vocabulary size of a trained tokenizer.
        max_length: Longest row in tokens (a longer row is dropped from training, counted).
        batch_size: Training batch size.
        eval_batch_size: Validation batch size.
        num_workers: DataLoader workers.
    """

    def __init__(
        self,
        train_file: str,
        val_file: str,
        templates: str,
        target: Literal["subquestions", "chains"] = "subquestions",
        seed_form: Literal["slot", "name"] = "slot",
        instruction: str = INSTRUCTION,
        tokenizer_name_or_path: str | None = None,
        vocab_size: int = 2000,
        max_length: int = 320,
        batch_size: int = 32,
        eval_batch_size: int = 64,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        check_choice("target", target, ("subquestions", "chains"))
        check_choice("seed_form", seed_form, ("slot", "name"))
        self.save_hyperparameters()
        self.bank = self._bank(Path(templates), Path(train_file))
        self._texts: dict[str, list[tuple[str, str]]] = {}
        self.skipped: dict[str, int] = {}
        cache = Path(templates).parent / ".tokenizer"
        self._init_rows(tokenizer_name_or_path, cache, vocab_size, max_length, batch_size, eval_batch_size, num_workers)

    def _bank(self, path: Path, train_file: Path) -> TemplateBank:
        if path.is_file():
            return TemplateBank.load(path)
        bank = mine_templates(self._examples(train_file))
        bank.save(path)
        log.info("mined %d templates from %s into %s", len(bank.templates), train_file, path)
        return bank

    @staticmethod
    def _examples(path: Path) -> list[KBQAExample]:
        if not path.is_file():
            raise UserInputError(f"no such example file: {path}")
        return list(read_jsonl(path))

    def texts(self, split: str) -> list[tuple[str, str]]:
        """``(prompt, response)`` of every chain example of ``split`` (``train`` or ``val``)."""
        if split not in self._texts:
            hp = self.hparams
            path = Path(hp.train_file if split == "train" else hp.val_file)
            rows, skipped = decomposition_rows(
                self._examples(path), self.bank, target=hp.target, seed_form=hp.seed_form, instruction=hp.instruction
            )
            self._texts[split] = rows
            self.skipped[split] = skipped
            if skipped:
                log.info("%s: %d examples are not JOIN chains and have no decomposition target", path, skipped)
        return self._texts[split]


__all__ = ["KeqingDecompositionDataModule"]
