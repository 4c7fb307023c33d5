"""Decompose a JSON-lines file of examples: batched, cached, resumable, written atomically.

:func:`decompose_file` reads common-schema examples, asks the backend for the decompositions the
cache does not hold, parses them, applies the variant and writes every example with the fields of
:mod:`kbqa_lit.pipelines.coq.decomposition.variants`.

Resuming: finished rows are appended to ``<out>.partial`` and flushed (and fsynced) after each
batch. When a run stops (an exception, Ctrl-C, a killed process), running the same command again
keeps those rows and decomposes only the remaining questions; the cache makes even an unfinished
batch's successful requests free. At the end the rows are written to ``out`` in input order
through a temp file and a rename, and the partial file is removed. A partial file written with
another variant is refused (delete it to start over).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from kbqa_lit.data.entity_slots import mask_text, topic_slots, unmask_text
from kbqa_lit.data.linking import predicted_entities
from kbqa_lit.data.schema import KBQAExample, read_jsonl, write_jsonl
from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.llm.backends import DecompositionBackend, GenerationOutcome
from kbqa_lit.llm.response_cache import DecompositionCache
from kbqa_lit.pipelines.coq.decomposition.few_shot import DecompositionPrompt
from kbqa_lit.pipelines.coq.decomposition.parser import Decomposition, parse_decomposition
from kbqa_lit.pipelines.coq.decomposition.variants import check_variant, gold_decomposition, write_fields

log = logging.getLogger(__name__)


@dataclass
class DecomposeSummary:
    """What a run did.

    Attributes:
        n: Examples in the output.
        ok: Examples with a decomposition from the backend (status ``ok``).
        failed: Examples whose decomposition failed (backend error or nothing parseable).
        gold: Examples with their gold decomposition (status ``gold``).
        none: Examples without decomposition by choice (variant ``none``).
        cached: Prompts answered from the cache in this run.
        generated: Prompts sent to the backend in this run.
        resumed: Rows kept from an interrupted earlier run.
        seconds: Wall-clock time of this run.
    """

    n: int = 0
    ok: int = 0
    failed: int = 0
    gold: int = 0
    none: int = 0
    cached: int = 0
    generated: int = 0
    resumed: int = 0
    seconds: float = 0.0

    def count(self, ex: KBQAExample) -> None:
        """Count one finished example by its status."""
        self.n += 1
        status = ex.meta.get("decomposition_status")
        if status in ("ok", "failed", "gold", "none"):
            setattr(self, status, getattr(self, status) + 1)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out = asdict(self)
        out["seconds"] = round(self.seconds, 3)
        return out


def partial_path(out: str | Path) -> Path:
    """Where the finished rows of an unfinished run of ``out`` are kept."""
    out = Path(out)
    return out.with_name(out.name + ".partial")


def read_partial(path: Path, variant: str) -> dict[str, KBQAExample]:
    """Read the rows of an interrupted run (a torn last line is dropped and cut from the file).

    Raises:
        DataFormatError: For a bad line before the last one.
        UserInputError: When the rows were written with another variant.
    """
    if not path.is_file():
        return {}
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    torn = lines.pop()  # after the last newline: empty, or a row cut short by a crash
    if torn.strip():
        log.warning("dropping a torn last line of %s", path)
        with path.open("r+b") as fh:
            fh.truncate(len(raw) - len(torn))
    rows: dict[str, KBQAExample] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ex = KBQAExample.from_dict(json.loads(line))
        except (ValueError, TypeError) as exc:
            raise DataFormatError(path, lineno, f"bad row in the partial output: {exc}") from None
        got = ex.meta.get("decomposition_variant")
        if got != variant:
            raise UserInputError(f"{path} holds rows of variant {got!r}, not {variant!r}; delete it to start over")
        rows[ex.qid] = ex
    return rows


def _read_input(path: Path, limit: int | None) -> list[KBQAExample]:
    if not path.is_file():
        raise UserInputError(f"no such input file: {path}")
    examples: list[KBQAExample] = []
    seen: set[str] = set()
    for i, ex in enumerate(read_jsonl(path), 1):
        if limit is not None and len(examples) >= limit:
            break
        if ex.qid in seen:
            raise DataFormatError(path, f"record {i}", f"duplicate question id {ex.qid!r}")
        seen.add(ex.qid)
        examples.append(ex)
    return examples


def linked_slots(ex: KBQAExample) -> list[tuple[str, str]]:
    """``(slot, label)`` of the entities an earlier step linked in ``ex`` (never its gold topic entities)."""
    linked = dataclasses.replace(ex, topic_entities=predicted_entities(ex, None))
    return topic_slots(linked)


def _batches(items: Sequence[KBQAExample], size: int) -> Iterator[list[KBQAExample]]:
    for i in range(0, len(items), size):
        yield list(items[i : i + size])


class _Decomposer:
    """Turns batches of examples into decomposed examples (backend + cache + parser + variant)."""

    def __init__(
        self,
        *,
        backend: DecompositionBackend | None,
        prompt: DecompositionPrompt | None,
        variant: str,
        source: str,
        cache: DecompositionCache | None,
        gold_relations: bool,
        summary: DecomposeSummary,
        mask_entities: bool = False,
    ) -> None:
        self.backend = backend
        self.prompt = prompt or DecompositionPrompt()
        if backend is not None:
            backend.set_default_stop(self.prompt.stop)  # stop after the result line, unless configured
        self.variant = variant
        self.source = source
        self.cache = cache
        self.gold_relations = gold_relations
        self.summary = summary
        self.mask_entities = mask_entities

    def run(self, batch: list[KBQAExample]) -> list[KBQAExample]:
        if self.variant == "none":
            return [write_fields(ex, None, variant="none", status="none") for ex in batch]
        if self.source == "gold":
            return [
                write_fields(ex, gold_decomposition(ex, self.gold_relations), variant=self.variant, status="gold")
                for ex in batch
            ]
        slots = [linked_slots(ex) if self.mask_entities else [] for ex in batch]
        texts = self._texts([self.prompt.render(mask_text(ex.question, s)) for ex, s in zip(batch, slots, strict=True)])
        out = []
        for ex, got, ex_slots in zip(batch, texts, slots, strict=True):
            if got.text is None:
                parsed = Decomposition.failure(f"backend: {got.error}")
            else:
                parsed = parse_decomposition(unmask_text(got.text, ex_slots), ex.question)
            out.append(write_fields(ex, parsed, variant=self.variant, status="ok"))
        return out

    def _texts(self, prompts: list[str]) -> list[GenerationOutcome]:
        assert self.backend is not None
        identity = self.backend.identity
        found = self.cache.get_many(identity, prompts) if self.cache is not None else {}
        todo = list(dict.fromkeys(p for p in prompts if p not in found))
        self.summary.cached += sum(1 for p in prompts if p in found)
        outcomes: dict[str, GenerationOutcome] = {p: GenerationOutcome(t) for p, t in found.items()}
        if todo:
            self.summary.generated += len(todo)
            fresh = self.backend.generate_outcomes(todo)
            outcomes.update(zip(todo, fresh, strict=True))
            if self.cache is not None:
                self.cache.put_many(
                    identity, [(p, o.text) for p, o in zip(todo, fresh, strict=True) if o.text is not None]
                )
        return [outcomes[p] for p in prompts]


def _progress(enabled: bool) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]decompose[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    )


def decompose_file(
    input: str | Path,
    out: str | Path,
    *,
    backend: DecompositionBackend | None = None,
    prompt: DecompositionPrompt | None = None,
    variant: str = "full",
    source: str = "backend",
    batch_size: int = 16,
    cache: DecompositionCache | None = None,
    limit: int | None = None,
    gold_relations: bool = False,
    progress: bool = True,
    mask_entities: bool = False,
) -> DecomposeSummary:
    """Decompose every example of ``input`` and write them to ``out`` (resumable; see the module doc).

    Args:
        input: Common-schema JSON lines.
        out: Output JSON lines (the input rows with the decomposition fields).
        backend: The LLM backend (needed for ``source="backend"`` unless the variant is ``none``).
        prompt: The few-shot prompt (default: the synthetic world's cases).
        variant: ``full``, ``placeholders``, ``no_answers`` or ``none``.
        source: ``backend`` or ``gold`` (the examples' own gold decompositions).
        batch_size: Examples per backend call and per flush of the partial file.
        cache: The output cache (``None``: no caching).
        limit: Only the first ``limit`` examples of ``input``.
        gold_relations: With ``source="gold"``, list the gold relations in the schema (an oracle).
        mask_entities: Write the linked entities' mentions as slots ``[E0]``... in the prompt and put
            the names back into the answer (a model fine-tuned so, :mod:`.training_rows`); the
            entities are the ones an earlier step linked (``meta.entity_candidates``), never the gold.
        progress: Show a rich progress bar on stderr.

    Returns:
        The run's summary.

    Raises:
        UserInputError: Bad arguments, a missing input, a partial file of another variant.
        DataFormatError: A bad input record.
        DecompositionBackendError: The backend cannot serve (the finished rows are kept).
    """
    start = time.perf_counter()
    check_variant(variant, source)
    if batch_size < 1:
        raise UserInputError(f"batch_size must be >= 1, got {batch_size}")
    if limit is not None and limit < 0:
        raise UserInputError(f"limit must be >= 0, got {limit}")
    if source == "backend" and variant != "none" and backend is None:
        raise UserInputError("decomposition with source 'backend' needs a backend (or use source 'gold')")
    input, out = Path(input), Path(out)
    examples = _read_input(input, limit)
    part = partial_path(out)
    done = read_partial(part, variant)
    summary = DecomposeSummary()
    wanted = {ex.qid for ex in examples}
    summary.resumed = sum(1 for qid in done if qid in wanted)
    todo = [ex for ex in examples if ex.qid not in done]
    worker = _Decomposer(
        backend=backend,
        prompt=prompt,
        variant=variant,
        source=source,
        cache=cache,
        gold_relations=gold_relations,
        mask_entities=mask_entities,
        summary=summary,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    with _progress(progress) as bar, part.open("a", encoding="utf-8") as fh:
        task = bar.add_task(f"{input.name} ({variant})", total=len(examples), completed=summary.resumed)
        for batch in _batches(todo, batch_size):
            for ex in worker.run(batch):
                fh.write(json.dumps(ex.to_dict(), ensure_ascii=False) + "\n")
                done[ex.qid] = ex
            fh.flush()
            os.fsync(fh.fileno())
            bar.advance(task, len(batch))
    rows = [done[ex.qid] for ex in examples]
    for ex in rows:
        summary.count(ex)
    write_jsonl(rows, out)
    part.unlink(missing_ok=True)
    summary.seconds = time.perf_counter() - start
    return summary


__all__ = ["DecomposeSummary", "decompose_file", "partial_path", "read_partial"]
