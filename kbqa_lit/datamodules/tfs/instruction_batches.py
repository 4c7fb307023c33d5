"""Token ids of instruction examples, and the batches a causal LM trains and generates on.

:class:`InstructionEncoder` turns ``(task, input, response)`` into one causal-LM row::

    input_ids  = <s> prefix input suffix  response </s>
    labels     = -100 ...................  response </s>      (loss on the response only)
    prompt_ids = <s> prefix input suffix                       (what generation starts from)

The *input* (the question, or the S2 items) is at most ``max_input_length`` tokens — the paper's
128-token limit counts the input, not the template: a longer input loses its end, and the
template (preamble, instruction, response cue) is never cut. ``max_length`` optionally caps the
whole prompt (``<s>`` + prefix + input + suffix) as well, again by cutting the input only. The
response is at most ``max_response_length`` tokens including the closing ``</s>``, which is never
cut. Every piece is encoded with ``add_special_tokens=False``
and ``<s>``/``</s>`` are added here, so hub LLaMA tokenizers and the trained BPE tokenizer
behave alike, and training and inference (:meth:`InstructionEncoder.prompt_batch`) tokenise a
prompt the same way.

:class:`InstructionCollator` pads a list of rows into a batch: ``input_ids``/``attention_mask``/
``labels`` right-padded (labels with ``-100``) for teacher forcing, ``prompt_input_ids``/
``prompt_attention_mask`` **left**-padded for batched generation (new tokens start at the same
column for every row), ``index`` (row positions in the datamodule's ``examples(split)``) and
``task`` (positions in :data:`~kbqa_lit.data.tfs.prompts.TASKS`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.data.tfs.prompts import check_format, prompt_parts, resolve_instructions, task_input, task_target
from kbqa_lit.datamodules.collate import IGNORE_INDEX, pad_sequences
from kbqa_lit.errors import check_choice


def left_pad(seqs: Sequence[Sequence[int]], value: int) -> torch.Tensor:
    """Left-pad integer lists to one ``LongTensor`` of shape ``(len(seqs), max_len)`` (max_len ≥ 1)."""
    width = max((len(s) for s in seqs), default=0) or 1
    out = torch.full((len(seqs), width), value, dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            out[i, width - len(s) :] = torch.as_tensor(s, dtype=torch.long)
    return out


class InstructionEncoder:
    """Prompt formatting and tokenisation of the instruction tasks.

    Args:
        tokenizer: The causal LM's tokenizer (needs an end token; padding uses its pad id).
            ``None`` formats text only (:meth:`prompt_batch` then carries no tensors).
        template: ``"alpaca"`` or ``"llama2_chat"``.
        instructions: Task → instruction overrides of the paper's instructions.
        system_prompt: System prompt of the ``llama2_chat`` template.
        max_length: Most tokens of the whole prompt (``<s>`` and template included), or ``None``
            for no such cap; only the input is cut to meet it.
        max_response_length: Most response tokens, ``</s>`` included (kept when cutting).
        max_input_length: Most input tokens (the question, or the S2 items; the paper's 128);
            longer inputs are cut at the end, the template never.
        s2_lf_input: What S2-t2 reads: ``items`` (the paper) or ``question_items``.
        schema_form: How logical forms and S2 items write relations: ``words`` or ``ids``.

    Raises:
        ValueError: For a bad length, template or format setting.
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase | None,
        template: str = "alpaca",
        instructions: Mapping[str, str] | None = None,
        system_prompt: str | None = None,
        max_length: int | None = None,
        max_response_length: int = 128,
        max_input_length: int = 128,
        s2_lf_input: str = "items",
        schema_form: str = "words",
    ) -> None:
        if max_input_length < 1 or max_response_length < 1 or (max_length is not None and max_length < 4):
            raise ValueError(
                "max_input_length and max_response_length must be at least 1, max_length at least 4 (or None)"
            )
        prompt_parts(template, "", "")  # validates the template name
        self.s2_lf_input, self.schema_form = check_format(s2_lf_input, schema_form)
        self.tokenizer = tokenizer
        self.template = template
        self.instructions = resolve_instructions(instructions)
        self.system_prompt = system_prompt
        self.max_length = None if max_length is None else int(max_length)
        self.max_response_length = int(max_response_length)
        self.max_input_length = int(max_input_length)
        self._frames: dict[str, tuple[list[int], list[int]]] = {}

    # ------------------------------------------------------------------ text

    def parts(self, task: str, input_text: str) -> tuple[str, str, str]:
        """``(prefix, input, suffix)`` of the prompt of ``task``."""
        check_choice("task", task, self.instructions, error=ValueError)
        return prompt_parts(self.template, self.instructions[task], input_text, self.system_prompt)

    def prompt_text(self, task: str, input_text: str) -> str:
        """The prompt of ``task`` for ``input_text`` as text."""
        return "".join(self.parts(task, input_text))

    def input_of(self, task: str, ex: KBQAExample) -> str:
        """The teacher-forced input of ``task`` for ``ex`` under this encoder's format settings."""
        return task_input(task, ex, self.s2_lf_input, self.schema_form)

    def target_of(self, task: str, ex: KBQAExample, max_answers: int | None = None) -> str | None:
        """The gold response of ``task`` for ``ex`` in this encoder's schema form (``None``: no gold)."""
        return task_target(task, ex, max_answers, self.schema_form)

    def settings(self) -> dict[str, Any]:
        """The prompt settings as a JSON-ready dict (saved next to adapters for inference)."""
        return {
            "template": self.template,
            "instructions": dict(self.instructions),
            "system_prompt": self.system_prompt,
            "max_length": self.max_length,
            "max_response_length": self.max_response_length,
            "max_input_length": self.max_input_length,
            "s2_lf_input": self.s2_lf_input,
            "schema_form": self.schema_form,
        }

    # ------------------------------------------------------------------ ids

    def _tok(self) -> PreTrainedTokenizerBase:
        if self.tokenizer is None:
            raise RuntimeError("this InstructionEncoder has no tokenizer")
        return self.tokenizer

    def _ids(self, text: str) -> list[int]:
        if not text:
            return []
        return list(self._tok()(text, add_special_tokens=False)["input_ids"])

    def _frame(self, task: str) -> tuple[list[int], list[int]]:
        """Ids of the prompt's prefix and suffix for ``task`` (computed once per task)."""
        if task not in self._frames:
            prefix, _, suffix = self.parts(task, "")
            self._frames[task] = (self._ids(prefix), self._ids(suffix))
        prefix_ids, suffix_ids = self._frames[task]
        return list(prefix_ids), list(suffix_ids)

    def encode_prompt(self, task: str, input_text: str) -> list[int]:
        """``<s>`` + prompt ids; the input is cut to ``max_input_length`` (and ``max_length``), the template never.

        Raises:
            ValueError: When ``max_length`` leaves no room for the template itself.
        """
        tok = self._tok()
        prefix, suffix = self._frame(task)
        head = [tok.bos_token_id] if tok.bos_token_id is not None else []
        body = self._ids(input_text)[: self.max_input_length]
        if self.max_length is not None:
            room = self.max_length - len(head) - len(prefix) - len(suffix)
            if room < 0:
                raise ValueError(
                    f"max_length {self.max_length} is shorter than the {task} template "
                    f"({len(head) + len(prefix) + len(suffix)} tokens); raise it or set it to null"
                )
            body = body[:room]
        return head + prefix + body + suffix

    def encode_response(self, response: str) -> list[int]:
        """Response ids + ``</s>``, at most ``max_response_length`` long (``</s>`` always kept)."""
        ids = self._ids(response)[: self.max_response_length - 1]
        return ids + [int(self._tok().eos_token_id)]

    def encode(self, task: str, input_text: str, response: str | None) -> dict[str, list[int]]:
        """One row: ``input_ids``, ``labels`` (``-100`` on the prompt) and ``prompt_ids``.

        Without a response (no gold), ``input_ids`` is the prompt and ``labels`` are all ``-100``.
        """
        prompt = self.encode_prompt(task, input_text)
        if response is None:
            return {"input_ids": prompt, "labels": [IGNORE_INDEX] * len(prompt), "prompt_ids": prompt}
        resp = self.encode_response(response)
        return {
            "input_ids": prompt + resp,
            "labels": [IGNORE_INDEX] * len(prompt) + resp,
            "prompt_ids": prompt,
        }

    def prompt_batch(self, task: str, inputs: Sequence[str]) -> dict[str, Any]:
        """A generation batch for raw inputs (pipelines build S2-t2 inputs this way).

        Returns:
            ``{"task": [task]*n, "inputs": [...], "prompts": [prompt texts]}`` and, with a
            tokenizer, left-padded ``prompt_input_ids``/``prompt_attention_mask`` tensors.
        """
        batch: dict[str, Any] = {
            "task": [task] * len(inputs),
            "inputs": list(inputs),
            "prompts": [self.prompt_text(task, x) for x in inputs],
        }
        if self.tokenizer is not None:
            ids = [self.encode_prompt(task, x) for x in inputs]
            batch["prompt_input_ids"] = left_pad(ids, pad_id(self.tokenizer))
            batch["prompt_attention_mask"] = left_pad([[1] * len(s) for s in ids], 0)
        return batch


def pad_id(tokenizer: PreTrainedTokenizerBase) -> int:
    """The padding id (the pad token, else ``<unk>``, else ``</s>``)."""
    for value in (tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.eos_token_id):
        if value is not None:
            return int(value)
    return 0


class InstructionCollator:
    """Pad instruction rows (``index``, ``task``, ``input_ids``, ``labels``, ``prompt_ids``) into a batch.

    Args:
        pad_token_id: Id used to pad ``input_ids`` and ``prompt_input_ids``.
    """

    def __init__(self, pad_token_id: int) -> None:
        self.pad_token_id = int(pad_token_id)

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        """Pad ``rows``; see the module docstring for the fields."""
        inputs = [r["input_ids"] for r in rows]
        prompts = [r["prompt_ids"] for r in rows]
        return {
            "input_ids": pad_sequences(inputs, self.pad_token_id),
            "attention_mask": pad_sequences([[1] * len(s) for s in inputs], 0),
            "labels": pad_sequences([r["labels"] for r in rows], IGNORE_INDEX),
            "prompt_input_ids": left_pad(prompts, self.pad_token_id),
            "prompt_attention_mask": left_pad([[1] * len(s) for s in prompts], 0),
            "index": torch.as_tensor([int(r["index"]) for r in rows], dtype=torch.long),
            "task": torch.as_tensor([int(r["task"]) for r in rows], dtype=torch.long),
        }


__all__ = ["InstructionCollator", "InstructionEncoder", "left_pad", "pad_id"]
