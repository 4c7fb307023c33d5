"""matplotlib for the comparison's charts: the import check, a headless ``pyplot``, colours and labels.

Every chart of ``kbqa compare`` (the HTML report's inline SVG, the ``--png`` files) is drawn by
matplotlib, which comes with the ``plots`` extra (``pip install -e '.[plots]'``; ``make`` installs
it). Without it :func:`require_matplotlib` raises :class:`~kbqa_lit.errors.UserInputError` naming
that extra, before anything is written.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from kbqa_lit.errors import UserInputError

#: Matplotlib's tab10.
COLORS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
#: Matplotlib's tab20: a dark and a light shade per hue.
PAIRS = (
    ("#1f77b4", "#aec7e8"),
    ("#ff7f0e", "#ffbb78"),
    ("#2ca02c", "#98df8a"),
    ("#d62728", "#ff9896"),
    ("#9467bd", "#c5b0d5"),
    ("#8c564b", "#c49c94"),
    ("#e377c2", "#f7b6d2"),
    ("#7f7f7f", "#c7c7c7"),
    ("#bcbd22", "#dbdb8d"),
    ("#17becf", "#9edae5"),
)
LABELS = {"f1": "F1", "hit1": "Hits@1", "hit1_any": "Hits@1 (any)", "em": "LF EM", "executable": "executable"}


def install_hint(what: str, library: str) -> str:
    """The error text for a missing ``library`` of the ``plots`` extra, ``what`` saying who needs it."""
    return (
        f"{what} with {library}, which comes with the plots extra: "
        "pip install -e '.[plots]' (or pip install 'kbqa_lit[plots]'; make installs it)"
    )


INSTALL_HINT = install_hint("kbqa compare draws its charts", "matplotlib")


def require_module(module: str, hint: str) -> None:
    """Check that ``module`` imports.

    Raises:
        UserInputError: With ``hint`` (:func:`install_hint`), when it does not.
    """
    try:
        importlib.import_module(module)
    except ImportError:
        raise UserInputError(hint) from None


def require_matplotlib() -> None:
    """Check that matplotlib imports.

    Raises:
        UserInputError: Naming the ``plots`` extra, when it does not.
    """
    require_module("matplotlib", INSTALL_HINT)


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the headless Agg backend.

    Raises:
        UserInputError: Without matplotlib (see :func:`require_matplotlib`).
    """
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def paired_colors(keys: Sequence[Sequence[Any]]) -> list[str] | None:
    """Colours for rows keyed by two or more values: one hue per first value, dark then light within it.

    Args:
        keys: The rows' key values in drawing order (``("coq", "extended")``, ``("coq", "paper")``...).

    Returns:
        One colour per row, or ``None`` (use the plain palette) for one-value keys, more than
        ten first values, or more than two rows with one first value.
    """
    if not keys or any(len(k) < 2 for k in keys):
        return None
    firsts = list(dict.fromkeys(str(k[0]) for k in keys))
    if len(firsts) > len(PAIRS):
        return None
    seen: dict[str, int] = {}
    colors = []
    for key in keys:
        first = str(key[0])
        shade = seen.get(first, 0)
        if shade > 1:
            return None
        seen[first] = shade + 1
        colors.append(PAIRS[firsts.index(first)][shade])
    return colors


def metric_label(metric: str) -> str:
    """``val/hit1`` → ``val Hits@1`` (a readable axis or legend label)."""
    stage, _, leaf = metric.rpartition("/")
    return f"{stage} {LABELS.get(leaf, leaf)}".strip()


def plain_text(text: str) -> str:
    """``text`` as matplotlib shows it verbatim (a ``$`` would start mathtext)."""
    return text.replace("$", r"\$")
