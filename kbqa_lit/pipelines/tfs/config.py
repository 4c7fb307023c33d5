"""The YAML config of ``kbqa lora pipeline`` (TFS-KBQA inference), typed and parsed with jsonargparse.

A config lists the questions, the knowledge base, the chain of models and the decoding and linking
settings (see ``configs/tfs/pipeline.yaml``)::

    data: {data_dir: outputs/synthetic/seed0, synthetic_seed: 0, split: test}
    kb: {store: outputs/synthetic/seed0/store, build_from: outputs/synthetic/seed0/kb.nt}
    strategies: [s1, s2, s3]
    order: strategy
    members:
      - name: tiny
        adapters: {s1: outputs/tfs/s1/adapter, s2_items: ..., s2_lf: ..., s3: ...}
    decoding: {s1_beams: 5, max_new_tokens: 96}
    linking: {mode: predicted, linkers: [kb, file], kb_match: exact, results_file: elq_test.jsonl}
    form: paper                      # or extended; or extensions: [path_fallback]
    answer_chain: {encoder: all-MiniLM-L6-v2, type_threshold: 0.8}
    out: outputs/tfs/pipeline_predictions.jsonl

Every field is typed: an unknown key, a wrong type or a missing required value is a
:class:`~kbqa_lit.errors.UserInputError` naming the file and the field. :func:`run_pipeline` runs
a parsed config. The old ``linking.surface_index: kb`` (``null``) still reads, as ``linkers: [kb]``
(``[]``). ``kbqa lora pipeline --set members.0.adapters.s1=DIR`` changes the mapping read from the
file before :func:`parse_pipeline_config` types it; :func:`check_override_key` names a key that is
no field.
"""

from __future__ import annotations

import dataclasses
import logging
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union, get_args, get_origin, get_type_hints

from kbqa_lit.data.linking import ORACLE_PREFIX
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.errors import UserInputError
from kbqa_lit.pipelines.config_files import class_parser, read_config_mapping
from kbqa_lit.pipelines.kb_config import KBConfig
from kbqa_lit.pipelines.selection.chain import ChainSettings

log = logging.getLogger(__name__)

Strategy = Literal["s1", "s2", "s3"]
Linker = Literal["kb", "file"]


@dataclass
class DataConfig:
    """Which questions to answer.

    Attributes:
        file: A JSON-lines file in the common schema (wins over ``data_dir``).
        data_dir: A folder with ``train.jsonl``/``dev.jsonl``/``test.jsonl``.
        split: The split of ``data_dir`` (``train``, ``dev``/``val``, ``test``).
        synthetic_seed: Build the synthetic world into ``data_dir`` when its files are missing.
        synthetic_size: Size of that world (``small``, ``medium``, ``large``).
    """

    file: Optional[str] = None  # noqa: UP045  (jsonargparse resolves typing forms)
    data_dir: Optional[str] = None  # noqa: UP045
    split: str = "test"
    synthetic_seed: Optional[int] = None  # noqa: UP045
    synthetic_size: str = "small"


@dataclass
class MemberConfig:
    """One model of the chain.

    Attributes:
        name: Its name in the prediction rows.
        adapters: Task (``s1``, ``s2_items``, ``s2_lf``, ``s3``) → adapter folder; one folder may serve several.
        base: Base model name or folder (default: the one each adapter records).
        torch_dtype: Dtype to load the base in (``bfloat16`` on GPUs).
        s2_lf_input: What S2-t2 reads (``items`` or ``question_items``) for adapters that record
            none; ``None``: as each adapter records (``items`` when it records nothing). A value
            an adapter contradicts is an error: training and inference build the input alike.
        schema_form: How the adapters write relations (``words`` or ``ids``), likewise; both
            forms are read either way, ``ids`` also unbrackets ``[ a.b.c ]``.
        overrides: Further :class:`~kbqa_lit.modules.lora_causal_lm.LoraCausalLM` arguments.
    """

    name: str
    adapters: dict[str, str]
    base: Optional[str] = None  # noqa: UP045
    torch_dtype: Optional[str] = None  # noqa: UP045
    s2_lf_input: Optional[Literal["items", "question_items"]] = None  # noqa: UP045
    schema_form: Optional[Literal["words", "ids"]] = None  # noqa: UP045
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class DecodingConfig:
    """Generation settings (see :class:`~kbqa_lit.pipelines.tfs.fallback.TFSFallbackPipeline`)."""

    s1_beams: int = 5
    s2_item_beams: int = 1
    s2_lf_beams: int = 5
    max_new_tokens: int = 128
    answer_max_new_tokens: int = 64
    batch_size: int = 8


@dataclass
class LinkingConfig:
    """How entity mentions become KB ids.

    Attributes:
        mode: Which entities the example may contribute (see :mod:`kbqa_lit.data.linking`):
            ``predicted`` (its ``meta.refined_entities``/``entity_candidates`` only; the default),
            ``dataset-given`` (its topic entities, for MetaQA/PathQuestion) or ``gold`` (an oracle:
            gold topic entities and the gold form's labels; the metrics are reported under
            ``oracle/``).
        linkers: The mention linkers, merged per mention in this order (each one an ablation
            switch; see :mod:`kbqa_lit.pipelines.tfs.linkers`): ``kb`` (names in the store,
            ``kb_match``) and ``file`` (``results_file``). ``[]``: only the example's own entities.
        kb_match: ``exact`` (one SPARQL query per mention; any store, Freebase endpoints too) or
            ``fuzzy`` (the store's surface-name index: names and aliases, normalised and fuzzy
            matches; reads every name once, so meant for embedded stores).
        results_file: Precomputed linking results (ELQ/ReFinED-style JSON lines or JSON: per
            question id, mention → candidate ids with scores); read when ``file`` is a linker.
        fuzzy_threshold: Least similarity of a fuzzy match (``kb_match: fuzzy``, and a generated
            mention against the file's mentions).
        candidates_per_mention: Ids each linker gives per mention.
        max_readings: Readings (choices of ids) executed per logical form.
    """

    mode: Literal["predicted", "dataset-given", "gold"] = "predicted"
    linkers: list[Linker] = field(default_factory=lambda: ["kb"])
    kb_match: Literal["exact", "fuzzy"] = "exact"
    results_file: Optional[str] = None  # noqa: UP045
    fuzzy_threshold: float = 0.8
    candidates_per_mention: int = 5
    max_readings: int = 8


@dataclass
class TFSPipelineConfig:
    """A whole ``kbqa lora pipeline`` config.

    Attributes:
        form: ``paper`` (the default: S1 → S2 → S3 as the paper) or ``extended`` (every extension
            TFS offers: ``path_fallback``, ``answer_type``; :mod:`kbqa_lit.pipelines.selection.forms`).
        extensions: A list instead of the form's preset.
        answer_chain: The extensions' settings (read only when they are on).
    """

    kb: KBConfig
    members: list[MemberConfig]
    data: DataConfig = field(default_factory=DataConfig)
    strategies: list[Strategy] = field(default_factory=lambda: ["s1", "s2", "s3"])
    order: Literal["strategy", "member"] = "strategy"
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    linking: LinkingConfig = field(default_factory=LinkingConfig)
    form: Optional[Literal["paper", "extended"]] = None  # noqa: UP045
    extensions: Optional[list[str]] = None  # noqa: UP045
    answer_chain: ChainSettings = field(default_factory=ChainSettings)
    out: str = "outputs/tfs/pipeline_predictions.jsonl"


def load_pipeline_config(path: str | Path) -> TFSPipelineConfig:
    """Parse and type-check a pipeline YAML.

    Raises:
        UserInputError: A missing file, or a config that does not parse, naming the file and why.
    """
    return parse_pipeline_config(read_config_mapping(path, "pipeline"), path)


def parse_pipeline_config(raw: dict[str, Any], path: str | Path) -> TFSPipelineConfig:
    """Type-check a pipeline config read from ``path`` (and changed by ``--set``, :func:`check_override_key`).

    Raises:
        UserInputError: A config that does not parse, naming the file and why: an unknown key, a wrong
            type, no member, a member's adapter for a task that is none of ``s1``, ``s2_items``,
            ``s2_lf``, ``s3``, or the ``file`` linker without ``linking.results_file``.
    """
    path = Path(path)
    _upgrade_linking(raw, path)
    parser = class_parser(TFSPipelineConfig, "pipeline", "kbqa lora pipeline")
    try:
        cfg = parser.parse_object({"pipeline": raw})
        built = parser.instantiate(cfg).pipeline
    except (Exception, SystemExit) as exc:  # jsonargparse raises ArgumentError (or exits) on a bad value
        raise UserInputError(f"bad pipeline config {path}: {exc}") from None
    if not built.members:
        raise UserInputError(f"bad pipeline config {path}: 'members' lists at least one model")
    tasks = _adapter_tasks()
    for member in built.members:
        unknown = sorted(set(member.adapters) - set(tasks))
        if unknown:
            raise UserInputError(
                f"bad pipeline config {path}: member {member.name}: adapters for unknown tasks {unknown} "
                f"(tasks: {', '.join(tasks)})"
            )
    if "file" in built.linking.linkers and not built.linking.results_file:
        raise UserInputError(f"bad pipeline config {path}: linking.linkers has 'file' but no linking.results_file")
    return built


def _adapter_tasks() -> tuple[str, ...]:
    """The tasks a member's ``adapters`` may name (``s1``, ``s2_items``, ``s2_lf``, ``s3``)."""
    from kbqa_lit.pipelines.tfs.members import STRATEGY_TASKS

    return tuple(task for tasks in STRATEGY_TASKS.values() for task in tasks)


def check_override_key(key: str) -> None:
    """Require a ``--set`` key to name a field of :class:`TFSPipelineConfig`.

    The parts walk the config's dataclasses; a list takes an index (``members.0.adapters.s1``), a
    member's ``adapters`` a task, its ``overrides`` any key. Whether an index exists is for the
    setter to say (:func:`kbqa_lit.tools.common.set_dotted`), the value's type for the parser.

    Raises:
        UserInputError: Naming ``key``, the part that is wrong and what it could be.
    """
    hint: Any = TFSPipelineConfig
    owner: tuple[Any, str] | None = None
    parts = key.split(".")
    for depth, part in enumerate(parts):
        where = ".".join(parts[:depth]) or "the config"
        hint = _without_none(hint)
        if dataclasses.is_dataclass(hint):
            names = [f.name for f in dataclasses.fields(hint)]
            if part not in names:
                raise UserInputError(f"--set {key}: {where} has no key {part!r} (keys: {', '.join(names)})")
            owner, hint = (hint, part), get_type_hints(hint)[part]
        elif get_origin(hint) is list:
            if not part.isdigit():
                raise UserInputError(f"--set {key}: {where} is a list; index it with a number ({where}.0)")
            hint = get_args(hint)[0]
        elif get_origin(hint) is dict:
            tasks = _adapter_tasks()
            if owner == (MemberConfig, "adapters") and part not in tasks:
                raise UserInputError(f"--set {key}: {where} has no task {part!r} (tasks: {', '.join(tasks)})")
            hint = get_args(hint)[1]
        else:
            raise UserInputError(f"--set {key}: {where} is a value, not a section with keys")


def _without_none(hint: Any) -> Any:
    """``X`` for ``Optional[X]``; any other type as it is."""
    args = get_args(hint)
    if get_origin(hint) in (Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0] if len(rest) == 1 else hint
    return hint


def _upgrade_linking(raw: dict[str, Any], path: Path) -> None:
    """Read the old ``linking.surface_index`` (``kb`` or ``null``) as ``linking.linkers``."""
    linking = raw.get("linking")
    if not isinstance(linking, dict) or "surface_index" not in linking:
        return
    if "linkers" in linking:
        raise UserInputError(f"bad pipeline config {path}: linking has both surface_index (old) and linkers")
    old = linking.pop("surface_index")
    if old not in ("kb", None):
        raise UserInputError(f"bad pipeline config {path}: linking.surface_index must be kb or null, got {old!r}")
    linking["linkers"] = ["kb"] if old == "kb" else []
    log.warning("%s: linking.surface_index is deprecated; read as linking.linkers: %s", path, linking["linkers"])


def build_linkers(linking: LinkingConfig, kb: Any) -> list[Any]:
    """The mention linkers a config switches on, in its order.

    Raises:
        UserInputError: A missing or malformed results file (naming the file and line).
    """
    from kbqa_lit.pipelines.selection.execution_guided import KBNameLookup
    from kbqa_lit.pipelines.tfs.linkers import IndexLinker, NameLinker, ResultsFileLinker

    out: list[Any] = []
    for name in dict.fromkeys(linking.linkers):
        if name == "file":
            if not linking.results_file:
                raise UserInputError("linking.linkers has 'file' but no linking.results_file")
            out.append(ResultsFileLinker(linking.results_file, fuzzy_threshold=linking.fuzzy_threshold))
        elif linking.kb_match == "fuzzy":
            from kbqa_lit.kb.index.entity_index import EntityIndex

            out.append(IndexLinker(EntityIndex.for_store(kb), fuzzy_threshold=linking.fuzzy_threshold))
        else:
            out.append(NameLinker(KBNameLookup(kb)))
    return out


def _examples(data: DataConfig, split: str | None, limit: int | None) -> list[KBQAExample]:
    file = data.file
    if file is None:
        if data.data_dir is None:
            raise UserInputError("pipeline config: data needs 'file' or 'data_dir'")
        name = split or data.split
        name = {"val": "dev", "validation": "dev"}.get(name, name)
        file = str(Path(data.data_dir) / f"{name}.jsonl")
        if not Path(file).is_file() and data.synthetic_seed is not None:
            from kbqa_lit.data.synthetic import build_world

            build_world(data.data_dir, seed=int(data.synthetic_seed), size=data.synthetic_size)
    if not Path(file).is_file():
        raise UserInputError(f"no such data file: {file}")
    examples = list(read_jsonl(file))
    return examples[:limit] if limit is not None else examples


def run_pipeline(
    config: TFSPipelineConfig,
    split: str | None = None,
    limit: int | None = None,
    out: str | None = None,
    disable: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Answer the config's questions with the S1 → S2 → S3 fallback and write one JSON line each.

    Args:
        config: The parsed config.
        split: Overrides ``data.split``.
        limit: Answer only the first N questions.
        out: Overrides ``out``.
        disable: Strategies to skip (the paper's ablations).

    Returns:
        ``{"metrics": {...}, "out": path, "questions": n}``.

    Raises:
        UserInputError: A missing data file or adapter folder.
    """
    from kbqa_lit.pipelines.selection.forms import resolve_form
    from kbqa_lit.pipelines.tfs.fallback import TFSFallbackPipeline, member_from_adapters

    for member in config.members:
        missing = [p for p in member.adapters.values() if not (Path(p) / "adapter_config.json").is_file()]
        if missing:
            raise UserInputError(f"member {member.name}: no adapter in {', '.join(missing)} (train it first)")
    form = resolve_form("tfs", config.form, config.extensions)
    paths, types = config.answer_chain.build(form)
    examples = _examples(config.data, split, limit)
    kb = config.kb.open()
    try:
        linkers = build_linkers(config.linking, kb)
        members = [
            member_from_adapters(
                m.name,
                m.adapters,
                m.base,
                formats={"s2_lf_input": m.s2_lf_input, "schema_form": m.schema_form},
                **({"torch_dtype": m.torch_dtype} if m.torch_dtype else {}),
                **m.overrides,
            )
            for m in config.members
        ]
        strategies = [s for s in config.strategies if s not in disable]
        link = config.linking
        pipeline = TFSFallbackPipeline(
            members,
            kb,
            use_s1="s1" in strategies,
            use_s2="s2" in strategies,
            use_s3="s3" in strategies,
            order=config.order,
            linking=link.mode,
            linkers=linkers,
            candidates_per_mention=link.candidates_per_mention,
            max_readings=link.max_readings,
            paths=paths,
            types=types,
            form=form,
            **asdict(config.decoding),
        )
        try:
            report = pipeline.run(examples)
        finally:
            pipeline.close()
    finally:
        if hasattr(kb, "close"):
            kb.close()
    target = out or config.out
    report.write_jsonl(target)
    metrics = report.metrics
    if config.linking.mode == "gold":
        metrics = {ORACLE_PREFIX + k: v for k, v in metrics.items()}
    return {
        "metrics": metrics,
        "linking": config.linking.mode,
        "linkers": list(dict.fromkeys(config.linking.linkers)),
        **form.record(),
        "out": str(target),
        "questions": len(report.rows),
    }


__all__ = [
    "DataConfig",
    "DecodingConfig",
    "KBConfig",
    "LinkingConfig",
    "MemberConfig",
    "TFSPipelineConfig",
    "build_linkers",
    "check_override_key",
    "load_pipeline_config",
    "parse_pipeline_config",
    "run_pipeline",
]
