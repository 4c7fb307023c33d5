"""``kbqa fit|validate|test|predict``: LightningCLI on YAML configs, in subclass mode.

The YAML picks the LightningModule (``model.class_path``) and the LightningDataModule
(``data.class_path``); facts that only the data knows — the tokenizer, built or trained when the
datamodule is instantiated — are passed to the model with ``link_arguments``. The resolved config
is saved next to each run (``config.yaml`` in the log directory) and, when the logger is W&B (or
any logger), logged as the run's hyper-parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI, SaveConfigCallback
from lightning.pytorch.loggers import Logger

import kbqa_lit.strategies  # noqa: F401  (registers the deepspeed_cpu_* strategy names)
from kbqa_lit.data.linking import oracle_inputs
from kbqa_lit.modules.checkpoint_loading import check_checkpoint
from kbqa_lit.strategies.checkpoint_io import use_atomic_checkpoints


class LoggerSaveConfigCallback(SaveConfigCallback):
    """Save the resolved config in the log directory and log it to the run's logger (e.g. W&B)."""

    def save_config(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        """Log the resolved config as hyper-parameters of every logger (rank zero only)."""
        config = self.parser.dump(self.config, skip_none=False, format="yaml")
        for logger in trainer.loggers:
            if isinstance(logger, Logger):
                logger.log_hyperparams({"config_yaml": config, "stage": stage})


class KBQALightningCLI(LightningCLI):
    """LightningCLI with the links between kbqa_lit's datamodules and modules."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        """Link the datamodule's tokenizer to the model (models built from a tokenizer take it)."""
        parser.link_arguments("data.tokenizer", "model.init_args.tokenizer", apply_on="instantiate")

    def _parse_ckpt_path(self) -> None:
        """Refuse a damaged ``--ckpt_path`` file (truncated, bytes changed) before Lightning reads it.

        Lightning loads the checkpoint here, while parsing, for its hyper-parameters; ``torch.load``
        raises a traceback on a truncated file and does not check the CRC-32 of the bytes it reads.
        """
        subcommand = self.config.get("subcommand")
        ckpt_path = self.config[subcommand].get("ckpt_path") if subcommand else None
        check_checkpoint(ckpt_path if isinstance(ckpt_path, str) else None)
        super()._parse_ckpt_path()

    def instantiate_trainer(self, **kwargs: Any) -> Trainer:
        """The trainer; its local checkpoints are written atomically beside their target.

        See :mod:`kbqa_lit.strategies.checkpoint_io` (a full disk leaves no truncated checkpoint).
        """
        trainer = super().instantiate_trainer(**kwargs)
        use_atomic_checkpoints(trainer)
        return trainer

    def before_instantiate_classes(self) -> None:
        """An oracle run (``linking: gold``, ``patterns: gold``) says so in its loggers' run names."""
        mark_oracle_run(self.config[self.subcommand] if self.subcommand else self.config)


#: Appended to the run name of every logger of a run with gold linking (other gold inputs add theirs).
ORACLE_RUN_SUFFIX = "-oracle-linking"


def mark_oracle_run(config: Any) -> bool:
    """Append ``-oracle-<inputs>`` to the loggers' ``name`` when evaluation sees gold inputs.

    ``-oracle-linking`` (:data:`ORACLE_RUN_SUFFIX`) for gold linking, ``-oracle-patterns`` for the
    generator's oracle patterns, ``-oracle-linking-patterns`` for both; FC-KBQA's ``oracle: components``
    gives ``-oracle-components``.

    Args:
        config: The subcommand's parsed config (a jsonargparse namespace).

    Returns:
        Whether the run is an oracle run.
    """
    init = _get(_get(config, "data"), "init_args")
    inputs = oracle_inputs(_get(init, "linking"), _get(init, "patterns"), _get(init, "oracle"))
    if not inputs:
        return False
    suffix = "-oracle-" + "-".join(inputs)
    loggers = _get(_get(config, "trainer"), "logger")
    for logger in loggers if isinstance(loggers, list) else [loggers]:
        args = _get(logger, "init_args")
        if args is None:
            continue
        name = _get(args, "name")
        if not str(name or "").endswith(suffix):
            args["name"] = f"{name or 'run'}{suffix}"
    return True


def _get(obj: Any, key: str) -> Any:
    if obj is None or isinstance(obj, (bool, str)):
        return None
    try:
        return obj[key] if key in obj else None
    except TypeError:
        return getattr(obj, key, None)


def build_cli(args: Sequence[str] | None = None, run: bool = True, **kwargs: Any) -> KBQALightningCLI:
    """Build (and by default run) the kbqa LightningCLI.

    Args:
        args: Command-line arguments, starting with the subcommand (``["fit", "--config", ...]``);
            ``None`` reads ``sys.argv``.
        run: Whether to run the subcommand (``False`` only instantiates, for tests).
        **kwargs: Passed to :class:`KBQALightningCLI` (e.g. ``trainer_defaults``).

    Returns:
        The CLI object (``cli.trainer``, ``cli.model``, ``cli.datamodule``).
    """
    if not run and args is not None and args and args[0] in ("fit", "validate", "test", "predict"):
        args = list(args[1:])
    return KBQALightningCLI(
        model_class=LightningModule,
        datamodule_class=None,
        subclass_mode_model=True,
        subclass_mode_data=True,
        save_config_callback=LoggerSaveConfigCallback,
        save_config_kwargs={"overwrite": True},
        parser_kwargs={"prog": "kbqa", "default_env": False},
        args=list(args) if args is not None else None,
        run=run,
        **kwargs,
    )


def run_lightning_cli(args: Sequence[str] | None) -> None:
    """Run ``kbqa fit|validate|test|predict ...`` (the ``kbqa`` entry calls this; ``None``: ``sys.argv``)."""
    build_cli(args, run=True)
