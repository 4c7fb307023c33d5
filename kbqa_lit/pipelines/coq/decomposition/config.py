"""The YAML config of ``kbqa decompose``, parsed with jsonargparse (as LightningCLI parses its own).

A config names the backend by ``class_path``/``init_args``, like a model in a LightningCLI
config, plus the prompt and the run settings::

    backend:
      class_path: kbqa_lit.llm.openai_backend.OpenAICompatibleBackend
      init_args: {base_url: http://127.0.0.1:8000/v1, model: meta-llama/Llama-2-7b-chat-hf}
    prompt:
      dataset: webqsp          # shipped cases; or cases_file: my_cases.txt
      instruction_preset: paper  # paper (Fig. 3) | placeholders (ours: #k for unknown answers)
    batch_size: 32
    cache: outputs/decompose/cache.sqlite
    variant: full              # full | placeholders | no_answers | none
    source: backend            # backend | gold

Every field has a default, so a config may hold only what differs. API keys never go into a
config: the HTTP backend reads the environment variable named by ``api_key_env``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from jsonargparse import ActionConfigFile, ArgumentParser, Namespace

from kbqa_lit.errors import KBQAError, UserInputError
from kbqa_lit.llm.backends import DecompositionBackend
from kbqa_lit.pipelines.coq.decomposition.few_shot import DecompositionPrompt


@dataclass
class DecomposeJob:
    """A parsed and instantiated decomposition config.

    Attributes:
        backend: The LLM backend (``None`` when the config has none, e.g. for the gold source).
        prompt: The few-shot prompt.
        batch_size: Examples per backend call and per flush of the partial output.
        cache: The sqlite cache file (``None``: no caching).
        variant: ``full``, ``placeholders``, ``no_answers`` or ``none``.
        source: ``backend`` or ``gold``.
        gold_relations: With the gold source, list the gold relations in the schema (an oracle).
        mask_entities: Write the linked entities' mentions as slots ``[E0]``... (a fine-tuned stand-in).
    """

    backend: DecompositionBackend | None
    prompt: DecompositionPrompt
    batch_size: int = 16
    cache: str | None = None
    variant: str = "full"
    source: str = "backend"
    gold_relations: bool = False
    mask_entities: bool = False


def build_config_parser() -> ArgumentParser:
    """The jsonargparse parser of decomposition configs."""
    parser = ArgumentParser(
        prog="kbqa decompose",
        description="Configuration of CoQ's question decomposition",
        exit_on_error=False,
        default_env=False,
    )
    parser.add_argument("--config", action=ActionConfigFile, help="a YAML config file")
    parser.add_argument(
        "--backend",
        type=Optional[DecompositionBackend],  # noqa: UP045  (jsonargparse resolves typing forms)
        default=None,
        help="the LLM backend as class_path/init_args (OpenAICompatibleBackend, HFCausalLMBackend)",
    )
    parser.add_class_arguments(DecompositionPrompt, "prompt", instantiate=True)
    parser.add_argument("--batch_size", type=int, default=16, help="examples per backend call and per flush")
    parser.add_argument("--cache", type=Optional[str], default=None, help="sqlite cache file of model outputs")  # noqa: UP045
    parser.add_argument(
        "--variant",
        type=Literal["full", "placeholders", "no_answers", "none"],
        default="full",
        help="decomposition variant",
    )
    parser.add_argument(
        "--source", type=Literal["backend", "gold"], default="backend", help="an LLM or the gold decompositions"
    )
    parser.add_argument(
        "--gold_relations", type=bool, default=False, help="gold source: list gold relations in the schema (oracle)"
    )
    parser.add_argument(
        "--mask_entities",
        type=bool,
        default=False,
        help="write the linked entities' mentions as slots [E0]... in the prompt, the names back in the answer",
    )
    return parser


def parse_config(path: str | Path, overrides: dict[str, Any] | None = None) -> Namespace:
    """Parse a config file (without instantiating classes).

    Args:
        path: The YAML file.
        overrides: Values that win over the file (``{"variant": "none"}``).

    Raises:
        UserInputError: When the file is missing or does not parse, naming it and the problem.
    """
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"no such decomposition config: {path}")
    parser = build_config_parser()
    args = ["--config", str(path)]
    for key, value in (overrides or {}).items():
        if value is not None:
            args.append(f"--{key}={value}")
    try:
        return parser.parse_args(args)
    except (Exception, SystemExit) as exc:  # jsonargparse raises ArgumentError (or exits) on a bad config
        raise UserInputError(f"bad decomposition config {path}: {exc}") from None


def load_job(path: str | Path, overrides: dict[str, Any] | None = None, *, with_backend: bool = True) -> DecomposeJob:
    """Parse a config file and build its backend and prompt.

    Args:
        path: The YAML file.
        overrides: Values that win over the file (``variant``, ``source``, ``batch_size``...).
        with_backend: Whether to build the backend (skipped for runs that need none).

    Raises:
        UserInputError: A missing or malformed config, or a backend that cannot be built.
    """
    cfg = parse_config(path, overrides)
    if not with_backend:
        cfg.backend = None
    parser = build_config_parser()
    try:
        # ``instantiate`` since jsonargparse 4.49; ``instantiate_classes`` before (deprecated after)
        instantiate = getattr(parser, "instantiate", None) or parser.instantiate_classes
        init = instantiate(cfg)
    except KBQAError:
        raise
    except Exception as exc:
        raise UserInputError(f"cannot build the decomposition config {path}: {exc}") from None
    return DecomposeJob(
        backend=init.backend,
        prompt=init.prompt,
        batch_size=int(init.batch_size),
        cache=init.cache,
        variant=str(init.variant),
        source=str(init.source),
        gold_relations=bool(init.gold_relations),
        mask_entities=bool(init.mask_entities),
    )


__all__ = ["DecomposeJob", "build_config_parser", "load_job", "parse_config"]
