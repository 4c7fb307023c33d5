"""The YAML config of ``kbqa keqing run`` (Keqing inference), typed and parsed with jsonargparse.

A config names the questions, the knowledge base, the template bank and the settings of the five
stages (see ``configs/keqing/run.yaml``)::

    data: {file: outputs/keqing_mq/world/test.jsonl}
    kb: {store: outputs/keqing_mq/kb, semantics: simple-path}
    templates: outputs/keqing_mq/templates.json
    linking: {mode: dataset-given}
    decomposer: {backend: {class_path: kbqa_lit.llm.hf_backend.HFCausalLMBackend, init_args: {model: ...}}}
    matching: {encoder: all-MiniLM-L6-v2, top_k: 3}
    retrieval: {max_paths: 2000, select: first-nonempty}
    reasoner: {kind: all, scope: step}
    out: outputs/keqing_mq/test_predictions.jsonl

Every field is typed: an unknown key, a wrong type or a missing required value is a
:class:`~kbqa_lit.errors.UserInputError` naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from kbqa_lit.backbones.common import MINILM
from kbqa_lit.errors import KBQAError, UserInputError
from kbqa_lit.llm.backends import DecompositionBackend
from kbqa_lit.pipelines.config_files import class_parser, read_config_mapping
from kbqa_lit.pipelines.kb_config import KBConfig
from kbqa_lit.pipelines.selection.chain import ChainSettings


@dataclass
class DataConfig:
    """Which questions to answer.

    Attributes:
        file: A JSON-lines file in the common schema (``kbqa data convert`` writes one).
        limit: Answer only the first ``limit`` questions.
    """

    file: str
    limit: Optional[int] = None  # noqa: UP045  (jsonargparse resolves typing forms)


@dataclass
class LinkingConfig:
    """Where the seed entities come from (see :mod:`kbqa_lit.data.linking`).

    Attributes:
        mode: ``predicted`` (the KB's surface-name index over the question), ``dataset-given``
            (MetaQA's bracketed entity, PathQuestion's path head) or ``gold`` (an oracle: its
            figures are reported under ``oracle/``).
        top_k: Linked entities kept per question (``predicted``).
        fuzzy_threshold: Least similarity of a fuzzy name match (``predicted``).
    """

    mode: Literal["predicted", "dataset-given", "gold"] = "predicted"
    top_k: int = 3
    fuzzy_threshold: float = 0.8


@dataclass
class DecomposerConfig:
    """Stage 2: the LLM that writes the JSON decomposition.

    Attributes:
        backend: The LLM (``class_path``/``init_args``: a local Hugging Face model, e.g. the
            merged decomposer ``kbqa lora merge`` writes, or an OpenAI-compatible server).
        source: ``backend`` or ``gold`` (an oracle: the gold decomposition of the gold chain;
            figures under ``oracle/``).
        seed_form: How the question shows its entities to the model, as in training: ``slot``
            (``[E0]``) or ``name``.
        instruction: The prompt's instruction line (the one the decomposer was trained with).
        target: What the sub-question texts are: ``subquestions`` (template wordings) or
            ``chains`` (chain texts, the "generate logical chains directly" ablation).
        batch_size: Questions per backend call.
        cache: A sqlite file caching the backend's outputs by backend identity and prompt (meant for
            served LLMs: a re-run, or a run cut short, asks only for what is missing), or ``None``.
    """

    backend: Optional[DecompositionBackend] = None  # noqa: UP045
    source: Literal["backend", "gold"] = "backend"
    seed_form: Literal["slot", "name"] = "slot"
    instruction: Optional[str] = None  # noqa: UP045
    target: Literal["subquestions", "chains"] = "subquestions"
    batch_size: int = 64
    cache: Optional[str] = None  # noqa: UP045


@dataclass
class MatchingConfig:
    """Stage 3: sub-question → templates.

    Attributes:
        encoder: A sentence encoder (all-MiniLM-L6-v2 offline, or any Hugging Face encoder).
        top_k: Templates kept per sub-question.
        cache_dir: Where template embeddings are cached.
        device: Torch device of the encoder (``cpu``, ``cuda``, ``cuda:1``).
    """

    encoder: str = "all-MiniLM-L6-v2"
    top_k: int = 3
    cache_dir: Optional[str] = None  # noqa: UP045
    device: str = "cpu"


@dataclass
class RetrievalConfig:
    """Stage 4: executing the matched templates' chains.

    Attributes:
        max_paths: Most paths kept per sub-question (what is cut is counted).
        select: ``union`` (the paper's, the default: the chains of the top-K matched templates
            together give the candidates, best template first) or ``first-nonempty`` (ours: only
            the best-ranked template whose chains reach something).
        dense_k: The paper's dense retrieval beside the templates (a sentence encoder in place of
            DPR): the ``dense_k`` one-hop chains from the step's start nodes nearest the
            sub-question are executed too (:mod:`~kbqa_lit.pipelines.keqing.dense`); ``0``: off.
        dense_encoder: The dense retrieval's sentence encoder.
    """

    max_paths: int = 2000
    select: Literal["union", "first-nonempty"] = "union"
    dense_k: int = 0
    dense_encoder: str = MINILM


@dataclass
class ReasonerConfig:
    """Stage 5: choosing the answers among the candidates, and the response.

    Attributes:
        kind: ``all`` (no reasoner: every candidate of every step is kept; the retrieval upper
            bound), ``llm`` (``backend`` picks the answers: a served LLM, or the fine-tuned local
            reasoner of ``configs/keqing/reasoner.yaml`` merged and served by ``HFCausalLMBackend``)
            or ``encoder`` (the CPU stand-in for the LLM: a sentence encoder keeps the candidates
            whose triples' relations best match the question;
            :mod:`~kbqa_lit.pipelines.keqing.encoder_reasoner`).
        scope: What the ``llm`` or ``encoder`` reasoner answers. ``step`` (the paper's Eq. 4, the default): after
            each sub-question's retrieval it picks that step's answers among the step's candidates,
            reading the sub-question (its slot written as the seeds' names) over the step's triples,
            and only those answers seed the sub-questions that depend on it; the last step's are the
            answers. ``last`` (ours): every candidate flows through the steps and one call reads the
            whole question over the last sub-question's triples. With ``kind: all`` both keep everything.
        backend: The reasoning LLM (``kind: llm``); it is loaded when the run starts, so a missing
            trained model is a typed error then.
        response_backend: An LLM that writes the response; ``None``: a deterministic summary.
        max_triples: Most triples in a reasoning prompt.
        encoder: The ``encoder`` reasoner's sentence encoder (all-MiniLM-L6-v2 offline).
        margin: The ``encoder`` reasoner keeps the candidates scoring within ``margin`` of the best.
    """

    kind: Literal["all", "llm", "encoder"] = "all"
    scope: Literal["step", "last"] = "step"
    backend: Optional[DecompositionBackend] = None  # noqa: UP045
    response_backend: Optional[DecompositionBackend] = None  # noqa: UP045
    max_triples: int = 200
    encoder: str = MINILM
    margin: float = 0.0


@dataclass
class KeqingConfig:
    """A whole ``kbqa keqing run`` config.

    Attributes:
        form: ``paper`` (the default) or ``extended`` (every extension Keqing offers:
            ``constrained_decoding``, ``path_fallback``, ``path_constraints`` and ``answer_type``, the
            last three read through the question's chains; :mod:`kbqa_lit.pipelines.keqing.extensions`).
        extensions: A list instead of the form's preset.
        answer_chain: The extensions' settings (read only when they are on).
    """

    data: DataConfig
    kb: KBConfig
    templates: str
    linking: LinkingConfig = field(default_factory=LinkingConfig)
    decomposer: DecomposerConfig = field(default_factory=DecomposerConfig)
    matching: MatchingConfig = field(default_factory=MatchingConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    reasoner: ReasonerConfig = field(default_factory=ReasonerConfig)
    form: Optional[Literal["paper", "extended"]] = None  # noqa: UP045
    extensions: Optional[list[str]] = None  # noqa: UP045
    answer_chain: ChainSettings = field(default_factory=ChainSettings)
    out: str = "outputs/keqing/predictions.jsonl"


def _set(raw: dict[str, Any], dotted: str, value: Any) -> None:
    node = raw
    *parents, last = dotted.split(".")
    for key in parents:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise UserInputError(f"--set {dotted}: {key} is not a mapping in the config")
        node = child
    node[last] = value


def load_keqing_config(path: str | Path, overrides: dict[str, Any] | None = None) -> KeqingConfig:
    """Parse and type-check a Keqing config; ``overrides`` (dotted keys) win over the file.

    Raises:
        UserInputError: A missing file, or a config that does not parse, naming the file and why.
    """
    path = Path(path)
    raw = read_config_mapping(path, "Keqing")
    for key, value in (overrides or {}).items():
        _set(raw, key, value)
    parser = class_parser(KeqingConfig, "keqing", "kbqa keqing run")
    try:
        built = parser.instantiate(parser.parse_object({"keqing": raw})).keqing
    except KBQAError:
        raise
    except (Exception, SystemExit) as exc:  # jsonargparse raises ArgumentError (or exits) on a bad value
        raise UserInputError(f"bad Keqing config {path}: {exc}") from None
    if built.decomposer.source == "backend" and built.decomposer.backend is None:
        raise UserInputError(
            f"bad Keqing config {path}: decomposer.backend is required unless decomposer.source is gold"
        )
    if built.retrieval.dense_k < 0:
        raise UserInputError(f"bad Keqing config {path}: retrieval.dense_k must be >= 0, got {built.retrieval.dense_k}")
    if built.reasoner.kind == "llm" and built.reasoner.backend is None:
        raise UserInputError(f"bad Keqing config {path}: reasoner.kind llm needs reasoner.backend")
    return built


__all__ = ["KeqingConfig", "load_keqing_config"]
