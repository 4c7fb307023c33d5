"""TFS-KBQA chain members: a generator and a prompt encoder per task, loaded from adapter folders.

:func:`member_from_adapters` loads every adapter of one member once, with the prompt settings it
was trained with (``instruction.json``: template, lengths, ``s2_lf_input``, ``schema_form``), so
inference builds prompts — and S2-t2 inputs — exactly as training did. A pipeline config may name
``s2_lf_input``/``schema_form`` for adapters that record none; contradicting a recorded value is a
:class:`~kbqa_lit.errors.UserInputError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kbqa_lit.data.tfs.prompts import read_schema_ids, s2_lf_input
from kbqa_lit.datamodules.tfs.instruction_batches import InstructionEncoder
from kbqa_lit.errors import UserInputError

#: The instruction tasks each strategy needs.
STRATEGY_TASKS: dict[str, tuple[str, ...]] = {"s1": ("s1",), "s2": ("s2_items", "s2_lf"), "s3": ("s3",)}


class Generator(Protocol):
    """What a chain member's model must offer."""

    def generate(
        self, batch: dict[str, Any], num_beams: int, num_return_sequences: int, max_new_tokens: int
    ) -> list[list[str]]:
        """Per prompt of ``batch``, the generated responses in beam order."""
        ...


@dataclass
class ChainMember:
    """One trained model of the fallback chain: a generator (and prompt encoder) per task.

    Attributes:
        name: Reported in the rows (``member``) and the per-member shares.
        generators: Task (``s1``, ``s2_items``, ``s2_lf``, ``s3``) → generator.
        encoders: Task → prompt encoder (its settings must be those of training); a task
            without one gets default settings and the generator's ``tokenizer``.
    """

    name: str
    generators: dict[str, Generator]
    encoders: dict[str, InstructionEncoder] = field(default_factory=dict)

    def has(self, strategy: str) -> bool:
        """Whether this member can run ``strategy`` (it has every task the strategy needs)."""
        return all(t in self.generators for t in STRATEGY_TASKS[strategy])

    def encoder(self, task: str) -> InstructionEncoder:
        """The prompt encoder of ``task`` (default settings and the generator's tokenizer if none)."""
        encoder = self.encoders.get(task)
        if encoder is None:
            gen = self.generators.get(task)
            encoder = self.encoders[task] = InstructionEncoder(getattr(gen, "tokenizer", None))
        return encoder

    def s2_lf_text(self, question: str, items: str) -> str:
        """The S2-t2 input, built as the t2 adapter was trained (items only, or question and items)."""
        return s2_lf_input(question, items, self.encoder("s2_lf").s2_lf_input)

    def read_lf(self, task: str, text: str) -> str:
        """A generated logical form made readable: bracketed raw ids unbracketed for the ``ids`` form."""
        return read_schema_ids(text) if self.encoder(task).schema_form == "ids" else text

    def run(self, task: str, inputs: Sequence[str], num_beams: int, max_new_tokens: int) -> list[list[str]]:
        """Generate ``num_beams`` responses per input for ``task``."""
        if not inputs:
            return []
        gen = self.generators[task]
        batch = self.encoder(task).prompt_batch(task, list(inputs))
        out = gen.generate(batch, num_beams=num_beams, num_return_sequences=num_beams, max_new_tokens=max_new_tokens)
        if len(out) != len(inputs):
            raise ValueError(f"{self.name}/{task}: {len(out)} generations for {len(inputs)} inputs")
        return [list(b) for b in out]


#: Format settings of ``instruction.json`` files written before they existed (what those runs used).
LEGACY_FORMAT: dict[str, str] = {"s2_lf_input": "question_items", "schema_form": "words"}


def load_instruction_settings(adapter_dir: str | Path) -> dict[str, Any]:
    """Prompt settings saved next to an adapter (``instruction.json``), without ``tasks``; ``{}`` if none.

    A file from before the format settings existed gets what those runs used (:data:`LEGACY_FORMAT`).
    """
    path = Path(adapter_dir) / "instruction.json"
    if not path.is_file():
        return {}
    settings = json.loads(path.read_text(encoding="utf-8"))
    settings.pop("tasks", None)
    for key, value in LEGACY_FORMAT.items():
        settings.setdefault(key, value)
    return settings


def resolve_format(folder: str | Path, recorded: Mapping[str, Any], wanted: Mapping[str, str | None]) -> dict[str, str]:
    """Format settings for one adapter: what it recorded, else what the config asks for.

    Raises:
        UserInputError: When the config asks for a setting the adapter was not trained with.
    """
    out: dict[str, str] = {}
    for key, value in wanted.items():
        if value is None:
            continue
        if key in recorded and recorded[key] != value:
            raise UserInputError(
                f"{folder}: trained with {key}={recorded[key]!r}, the pipeline config asks for {value!r} "
                "(training and inference must build inputs alike; drop the setting or retrain)"
            )
        out[key] = value
    return out


def member_from_adapters(
    name: str,
    adapters: Mapping[str, str | Path],
    base: str | None = None,
    *,
    formats: Mapping[str, str | None] | None = None,
    **overrides: Any,
) -> ChainMember:
    """Load a chain member from adapter folders written by ``AdapterExport`` / ``save_adapter``.

    Args:
        name: The member's name.
        adapters: Task → adapter folder; one folder may serve several tasks (loaded once).
        base: Base model name or folder (default: the one each adapter records).
        formats: ``s2_lf_input`` / ``schema_form`` for adapters that record none (``None``: the
            recorded value, else the default); a value that contradicts a recorded one is an error.
        **overrides: :class:`~kbqa_lit.modules.lora_causal_lm.LoraCausalLM` arguments
            (``torch_dtype``...).

    Raises:
        UserInputError: When ``formats`` contradicts what an adapter was trained with.
    """
    from kbqa_lit.modules.lora_causal_lm import LoraCausalLM

    loaded: dict[str, Any] = {}
    generators: dict[str, Generator] = {}
    encoders: dict[str, InstructionEncoder] = {}
    for task, folder in adapters.items():
        settings = load_instruction_settings(folder)
        settings.update(resolve_format(folder, settings, formats or {}))
        key = str(Path(folder).resolve())
        if key not in loaded:
            loaded[key] = LoraCausalLM.from_adapter(folder, base=base, **overrides).eval()
        model = loaded[key]
        generators[task] = model
        encoders[task] = InstructionEncoder(model.tokenizer, **settings)
    return ChainMember(name, generators, encoders)


__all__ = [
    "LEGACY_FORMAT",
    "STRATEGY_TASKS",
    "ChainMember",
    "Generator",
    "load_instruction_settings",
    "member_from_adapters",
    "resolve_format",
]
