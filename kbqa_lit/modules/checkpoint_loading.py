"""Load a LightningModule checkpoint, or fail with one line naming the file and what was expected.

Shared by the tools and the callbacks, hence on the
``modules`` floor. ``kbqa retrieve relations`` needs a ``CrossEncoderRetriever`` checkpoint and
``kbqa lora export`` a ``LoraCausalLM`` one; ``ExecutionGuidedEval(answer_model=...)`` a second generator
of the class under test. Given any other file — not a checkpoint at all, or the checkpoint of another
module — Lightning's ``load_from_checkpoint`` raises whatever the unpickler or the module's
``__init__``/``load_state_dict`` raises; :func:`load_module_checkpoint` turns that into a
:class:`~kbqa_lit.errors.UserInputError` that says which file, what it is, and what was expected.

:func:`checkpoint_damage` tells a damaged checkpoint (truncated, bytes changed) from an intact one before
anything loads it: ``torch.save`` writes a zip whose members carry a CRC-32, which ``torch.load`` does not
check (a changed byte loads as a changed weight). ``kbqa fit|validate|test|predict --ckpt_path`` refuse
such a file through :func:`check_checkpoint`, as does :func:`load_module_checkpoint`.
"""

from __future__ import annotations

import inspect
import zipfile
from pathlib import Path
from typing import Any, TypeVar

import lightning as L
from lightning.fabric.utilities.cloud_io import _load as pl_load

from kbqa_lit.errors import UserInputError

ModuleT = TypeVar("ModuleT", bound=L.LightningModule)


def _first_line(exc: BaseException, limit: int = 160) -> str:
    """``Type: first line of the message`` of an exception, cut to ``limit`` characters (for one-line errors)."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def checkpoint_damage(path: str | Path) -> str | None:
    """Why the checkpoint file at ``path`` is damaged, or ``None``.

    Reads the whole file once. A file that is not a zip written by ``torch.save`` (missing, a folder,
    the legacy format, not a checkpoint at all) is not judged here: ``None``, and the loader reports it.

    Args:
        path: The ``.ckpt`` file.

    Returns:
        A one-line reason (empty, truncated or overwritten, a member whose bytes no longer match its
        CRC-32), else ``None``.
    """
    path = Path(path)
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        head = handle.read(4)
    if not head:
        return "the file is empty"
    if head != b"PK\x03\x04":
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        return f"truncated or overwritten ({_first_line(exc)})"
    return f"the bytes of {bad} no longer match its CRC-32" if bad else None


def check_checkpoint(path: str | Path | None) -> None:
    """Refuse a damaged checkpoint file before anything loads it (``None`` or a name like ``"last"``: nothing to check).

    Args:
        path: The ``ckpt_path`` given to a run.

    Raises:
        UserInputError: ``"checkpoint <path> is damaged (<why>); ..."`` in one line.
    """
    if path is None:
        return
    why = checkpoint_damage(path)
    if why:
        raise UserInputError(
            f"checkpoint {path} is damaged ({why}); not loaded: give another checkpoint or rerun the fit that wrote it"
        )


def _read(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The checkpoint at ``path``, or ``None`` and why it is not a Lightning checkpoint."""
    try:
        checkpoint: Any = pl_load(path, map_location="cpu")
    except Exception as exc:  # the unpickler's and the zip reader's errors alike
        reason = _first_line(exc) if zipfile.is_zipfile(path) else "not a file written by torch.save"
        return None, f"is not a Lightning checkpoint ({reason})"
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        return None, "is not a Lightning checkpoint (no state_dict)"
    return checkpoint, ""


def _mismatch(checkpoint: dict[str, Any], module_class: type[L.LightningModule]) -> str | None:
    """Why the checkpoint cannot be of ``module_class`` judging by its recorded class and hyper-parameters."""
    hparams = checkpoint.get("hyper_parameters") or {}
    if not isinstance(hparams, dict):
        return None
    recorded = hparams.get("_class_path")
    if isinstance(recorded, str) and recorded.rsplit(".", 1)[-1] != module_class.__name__:
        return f"is a checkpoint of {recorded}"
    params = inspect.signature(module_class.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    foreign = sorted(k for k in hparams if not k.startswith("_") and k not in params)
    if foreign:
        return f"is a Lightning checkpoint of another module (hyper-parameters {', '.join(foreign)})"
    return None


def load_module_checkpoint(path: str | Path, module_class: type[ModuleT], hint: str = "") -> ModuleT:
    """Load ``module_class`` from the checkpoint at ``path`` on the CPU.

    Args:
        path: The ``.ckpt`` file.
        module_class: The LightningModule class the tool needs.
        hint: Where such a checkpoint comes from (e.g. ``"kbqa fit --config configs/coq/relation_retriever.yaml"``),
            added to the message.

    Returns:
        The loaded module.

    Raises:
        UserInputError: When the file is missing, is damaged, is not a Lightning checkpoint, or is the checkpoint
            of another module class (or of another configuration of this one); the message names the
            file, what it is and what was expected.
    """
    path = Path(path)
    expected = f"expected a {module_class.__name__} checkpoint" + (f" ({hint})" if hint else "")
    if not path.is_file():
        raise UserInputError(f"no checkpoint file: {path}; {expected}")
    check_checkpoint(path)
    checkpoint, why = _read(path)
    if checkpoint is None:
        raise UserInputError(f"{path} {why}; {expected}")
    why = _mismatch(checkpoint, module_class) or ""
    del checkpoint
    if why:
        raise UserInputError(f"{path} {why}; {expected}")
    try:
        return module_class.load_from_checkpoint(str(path), map_location="cpu")
    except Exception as exc:  # right hyper-parameter names, wrong weights or values
        raise UserInputError(
            f"{path} is a Lightning checkpoint that does not load into {module_class.__name__} "
            f"({_first_line(exc)}); {expected}"
        ) from None


__all__ = ["check_checkpoint", "checkpoint_damage", "load_module_checkpoint"]
