"""One skip mark for every "this test needs X" (Lightning's ``RunIf`` idea).

``@run_if(cuda=True)``, ``@run_if(deepspeed=True)``, ``@run_if(virtuoso=True)``, ``@run_if(wandb=True)``:
the test is skipped, with the reason and how to get X, when X is missing here; the conditions combine.
"""

from __future__ import annotations

import importlib.util
import shutil

import pytest
import torch


def _missing(cuda: bool, deepspeed: bool, virtuoso: bool, wandb: bool) -> list[str]:
    reasons: list[str] = []
    if cuda and not torch.cuda.is_available():
        reasons.append("needs a CUDA GPU")
    if deepspeed and importlib.util.find_spec("deepspeed") is None:
        reasons.append("needs deepspeed (pip install -c constraints.txt -e '.[deepspeed]')")
    if virtuoso and not (shutil.which("virtuoso-t") and shutil.which("isql-vt")):
        reasons.append("needs virtuoso-t and isql-vt (run .ci/install-virtuoso.sh)")
    if wandb and importlib.util.find_spec("wandb") is None:
        reasons.append("needs the wandb extra (pip install -e '.[wandb]')")
    return reasons


def run_if(
    *, cuda: bool = False, deepspeed: bool = False, virtuoso: bool = False, wandb: bool = False
) -> pytest.MarkDecorator:
    """A ``skipif`` mark for the requirements asked for.

    Args:
        cuda: The test needs a CUDA device.
        deepspeed: The test needs the deepspeed package.
        virtuoso: The test needs the Virtuoso binaries (``virtuoso-t``, ``isql-vt``).
        wandb: The test needs the wandb package.

    Returns:
        A mark that skips the test, naming every missing requirement, when one is missing.
    """
    reasons = _missing(cuda, deepspeed, virtuoso, wandb)
    return pytest.mark.skipif(bool(reasons), reason="; ".join(reasons) or "all requirements present")
