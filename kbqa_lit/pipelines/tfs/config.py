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
    linking: {surface_index: kb}
    out: outputs/tfs/pipeline_predictions.jsonl

Every field is typed: an unknown key, a wrong type or a missing required value is a
:class:`~kbqa_lit.errors.UserInputError` naming the file and the field. :func:`run_pipeline` runs
a parsed config.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from jsonargparse import ArgumentParser

from kbqa_lit.data.linking import ORACLE_PREFIX
from kbqa_lit.data.schema import KBQAExample, read_jsonl
from kbqa_lit.errors import UserInputError

Strategy = Literal["s1", "s2", "s3"]


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
class KBConfig:
    """The knowledge base.

    Attributes:
        store: An Oxigraph store folder or an http(s) SPARQL endpoint.
        build_from: N-Triples file to build the store from when it is missing.
        timeout: Seconds a query may run.
    """

    store: str
    build_from: Optional[str] = None  # noqa: UP045
    timeout: float = 10.0


@dataclass
class MemberConfig:
    """One model of the chain.

    Attributes:
        name: Its name in the prediction rows.
        adapters: Task (``s1``, ``s2_items``, ``s2_lf``, ``s3``) → adapter folder; one folder may serve several.
        base: Base model name or folder (default: the one each adapter records).
        torch_dtype: Dtype to load the base in (``bfloat16`` on GPUs).
        overrides: Further :class:`~kbqa_lit.modules.tfs.lora_causal_lm.LoraCausalLM` arguments.
    """

    name: str
    adapters: dict[str, str]
    base: Optional[str] = None  # noqa: UP045
    torch_dtype: Optional[str] = None  # noqa: UP045
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
        surface_index: ``kb``: exact-name lookup in the store; ``None``: none.
        candidates_per_mention: Ids taken per mention from the surface index.
        max_readings: Readings (choices of ids) executed per logical form.
    """

    mode: Literal["predicted", "dataset-given", "gold"] = "predicted"
    surface_index: Optional[Literal["kb"]] = "kb"  # noqa: UP045
    candidates_per_mention: int = 5
    max_readings: int = 8


@dataclass
class TFSPipelineConfig:
    """A whole ``kbqa lora pipeline`` config."""

    kb: KBConfig
    members: list[MemberConfig]
    data: DataConfig = field(default_factory=DataConfig)
    strategies: list[Strategy] = field(default_factory=lambda: ["s1", "s2", "s3"])
    order: Literal["strategy", "member"] = "strategy"
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    linking: LinkingConfig = field(default_factory=LinkingConfig)
    out: str = "outputs/tfs/pipeline_predictions.jsonl"


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="kbqa lora pipeline", exit_on_error=False, default_env=False)
    parser.add_class_arguments(TFSPipelineConfig, "pipeline")
    return parser


def load_pipeline_config(path: str | Path) -> TFSPipelineConfig:
    """Parse and type-check a pipeline YAML.

    Raises:
        UserInputError: A missing file, or a config that does not parse, naming the file and why.
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"no such config: {path}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise UserInputError(f"bad pipeline config {path}: {exc}") from None
    if not isinstance(raw, dict):
        raise UserInputError(f"bad pipeline config {path}: expected a mapping at the top")
    parser = _parser()
    try:
        cfg = parser.parse_object({"pipeline": raw})
        built = parser.instantiate(cfg).pipeline
    except (Exception, SystemExit) as exc:  # jsonargparse raises ArgumentError (or exits) on a bad value
        raise UserInputError(f"bad pipeline config {path}: {exc}") from None
    if not built.members:
        raise UserInputError(f"bad pipeline config {path}: 'members' lists at least one model")
    return built


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


def _open_kb(kb: KBConfig) -> Any:
    from kbqa_lit.kb.loaders import ensure_store
    from kbqa_lit.kb.store import open_store

    if kb.build_from is not None:
        ensure_store(kb.store, [kb.build_from], "nt")
    return open_store(kb.store, timeout=float(kb.timeout))


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
    from kbqa_lit.pipelines.execution_guided import KBNameLookup
    from kbqa_lit.pipelines.tfs.fallback import TFSFallbackPipeline, member_from_adapters

    for member in config.members:
        missing = [p for p in member.adapters.values() if not (Path(p) / "adapter_config.json").is_file()]
        if missing:
            raise UserInputError(f"member {member.name}: no adapter in {', '.join(missing)} (train it first)")
    examples = _examples(config.data, split, limit)
    kb = _open_kb(config.kb)
    try:
        members = [
            member_from_adapters(
                m.name,
                m.adapters,
                m.base,
                **({"torch_dtype": m.torch_dtype} if m.torch_dtype else {}),
                **m.overrides,
            )
            for m in config.members
        ]
        strategies = [s for s in config.strategies if s not in disable]
        linking = asdict(config.linking)
        surface = linking.pop("surface_index")
        linking["linking"] = linking.pop("mode")
        pipeline = TFSFallbackPipeline(
            members,
            kb,
            use_s1="s1" in strategies,
            use_s2="s2" in strategies,
            use_s3="s3" in strategies,
            order=config.order,
            surface_index=KBNameLookup(kb) if surface == "kb" else None,
            **asdict(config.decoding),
            **linking,
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
    return {"metrics": metrics, "linking": config.linking.mode, "out": str(target), "questions": len(report.rows)}


__all__ = [
    "DataConfig",
    "DecodingConfig",
    "KBConfig",
    "LinkingConfig",
    "MemberConfig",
    "TFSPipelineConfig",
    "load_pipeline_config",
    "run_pipeline",
]
