"""Entity linking as a stage: which entities validation, test and predict may see.

Gold topic entities are an answer key, not an input: a user asking a question has the question
and what earlier stages predicted. :func:`inference_view` rewrites an example into what inference
may use, under one ``linking`` setting:

- ``predicted`` (the default everywhere): the entities the pipeline produced — the classifier's
  ``meta["refined_entities"]`` (``[[id, prob], ...]``, best first), else the linked
  ``meta["entity_candidates"]`` (``{id: label}``), else a :class:`Linker` over the question text
  (e.g. :class:`IndexLinker`, the KB's surface-name index);
- ``dataset-given``: the dataset itself gives the topic entity to every system (MetaQA's
  bracketed entity, PathQuestion's path head), so the example's ``topic_entities`` stay;
- ``gold``: an explicit oracle — the example is used as it is, gold entities included; metrics of
  such a run are logged under an ``oracle/`` prefix.

In every mode but ``gold`` the view drops the gold-derived labels (``meta["entity_labels"]``,
e.g. WebQSP's ``mid2name`` of the gold logical form), and keeps a ``decomposition`` only when a
predictor wrote it (``meta["decomposition_status"] == "ok"``, set by ``kbqa decompose`` with an
LLM backend): a dataset's own decomposition (the synthetic world's ends with the gold answers)
and ``kbqa decompose --source gold`` output (status ``gold``) are annotations, so ``gold`` is the
only mode that lets them through. Gold answers and the gold S-expression stay
on the view: they are what the prediction is scored against and what a validation loss is
computed on, never an input.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.errors import UserInputError, check_choice

log = logging.getLogger(__name__)

LINKING_MODES: tuple[str, ...] = ("predicted", "dataset-given", "gold")
#: Meta fields derived from the gold logical form: never part of an inference input.
GOLD_META_KEYS: tuple[str, ...] = ("entity_labels",)
#: The prefix of metrics measured with gold linking.
ORACLE_PREFIX = "oracle/"
#: ``meta["decomposition_status"]`` values of decompositions a predictor (an LLM) wrote.
PREDICTED_DECOMPOSITION_STATUSES: tuple[str, ...] = ("ok",)


class Linker(Protocol):
    """Anything that links a question to ``{entity id: label}``, best first."""

    def link(self, question: str) -> dict[str, str]:
        """The linked entities of ``question``, best first."""
        ...


class IndexLinker:
    """Link by the KB's surface-name index (:class:`~kbqa_lit.kb.index.entity_index.EntityIndex`).

    Args:
        index: The entity index (``EntityIndex.for_store(store)``).
        top_k: Keep the ``top_k`` best candidates (ambiguous names give several ids of one label;
            execution-guided decoding tries them in order).
        fuzzy_threshold: Least similarity of a fuzzy match.
    """

    def __init__(self, index: Any, top_k: int = 3, fuzzy_threshold: float = 0.8) -> None:
        if top_k < 1:
            raise UserInputError(f"linking top_k must be at least 1, got {top_k}")
        self.index = index
        self.top_k = int(top_k)
        self.fuzzy_threshold = float(fuzzy_threshold)

    def link(self, question: str) -> dict[str, str]:
        """The ``top_k`` best candidate entities of ``question`` as ``{id: label}``."""
        found = self.index.search(question, top_l=self.top_k, fuzzy_threshold=self.fuzzy_threshold)
        return {c.id: c.label for c in found}


def check_linking(mode: str) -> str:
    """Return ``mode`` when it is a linking mode.

    Raises:
        UserInputError: Naming the accepted modes.
    """
    return check_choice("linking", mode, LINKING_MODES)


def predicted_entities(ex: KBQAExample, linker: Linker | None) -> dict[str, str]:
    """The entities earlier stages produced for ``ex`` (see the module docstring), ``{}`` if none."""
    candidates: Mapping[str, Any] = ex.meta.get("entity_candidates") or {}
    refined = ex.meta.get("refined_entities") or []
    if refined:
        out: dict[str, str] = {}
        for item in refined:
            eid = str(item[0] if isinstance(item, (list, tuple)) else item)
            out[eid] = str(candidates.get(eid) or eid)
        return out
    if candidates:
        return {str(e): str(label) for e, label in candidates.items()}
    if linker is not None:
        return linker.link(ex.question)
    return {}


def oracle_inputs(linking: str | None, patterns: str | None = None, oracle: str | None = None) -> list[str]:
    """The gold inputs evaluation sees under these settings; ``[]`` for an honest run.

    ``linking`` when linking is ``gold`` (gold entities and the file's own decompositions),
    ``patterns`` when the generator's patterns are ``gold`` (oracle patterns), and the value of
    an ``oracle`` setting other than ``none`` (FC-KBQA's datamodules: ``linking``,
    ``components``). The one rule behind ``oracle/`` metric prefixes (the datamodules'
    ``oracle_inputs()``) and ``-oracle-<inputs>`` run names (:func:`kbqa_lit.lightning_cli.mark_oracle_run`).
    """
    found = [name for name, value in (("linking", linking), ("patterns", patterns)) if value == "gold"]
    if oracle not in (None, "none") and str(oracle) not in found:
        found.append(str(oracle))
    return found


def inference_decomposition(ex: KBQAExample) -> str | None:
    """The example's decomposition when a predictor wrote it, else ``None`` (see the module docstring)."""
    if ex.meta.get("decomposition_status") in PREDICTED_DECOMPOSITION_STATUSES:
        return ex.decomposition
    return None


def inference_view(ex: KBQAExample, mode: str, linker: Linker | None = None) -> KBQAExample:
    """The example as inference may see it under ``mode`` (a copy; ``gold`` returns ``ex`` itself).

    Args:
        ex: The example as read from its file.
        mode: ``predicted``, ``dataset-given`` or ``gold``.
        linker: Links the question when the example carries no predicted entities.

    Returns:
        An example whose ``topic_entities`` are the linked entities, whose meta holds no
        gold-derived labels and whose ``decomposition`` is a predicted one or ``None``;
        ``meta["linking"]`` names the mode.
    """
    check_linking(mode)
    if mode == "gold":
        return ex
    meta = {k: v for k, v in ex.meta.items() if k not in GOLD_META_KEYS}
    meta["linking"] = mode
    topics = dict(ex.topic_entities) if mode == "dataset-given" else predicted_entities(ex, linker)
    return dataclasses.replace(ex, topic_entities=topics, meta=meta, decomposition=inference_decomposition(ex))


def linking_recall(views: list[KBQAExample], golds: list[KBQAExample]) -> float | None:
    """The share of gold topic entities found by linking (``None`` without any gold topic entity)."""
    found = total = 0
    for view, gold in zip(views, golds, strict=True):
        total += len(gold.topic_entities)
        found += sum(e in view.topic_entities for e in gold.topic_entities)
    return found / total if total else None


__all__ = [
    "GOLD_META_KEYS",
    "IndexLinker",
    "LINKING_MODES",
    "Linker",
    "ORACLE_PREFIX",
    "PREDICTED_DECOMPOSITION_STATUSES",
    "check_linking",
    "inference_decomposition",
    "inference_view",
    "linking_recall",
    "oracle_inputs",
    "predicted_entities",
]
