"""Execute gold S-expressions on an Oxigraph store built from the world's ``kb.nt``.

The store is built by :func:`~kbqa_lit.kb.store.loaders.build_store` in a temporary directory outside
the output folder (so the output holds only deterministic files) and removed afterwards. Each
S-expression goes through :func:`~kbqa_lit.kb.lf.sparql.sexpr_to_sparql` with ``exclude-topic``
semantics and is run by :func:`~kbqa_lit.kb.store.oxigraph_runner.run_query` — the function behind
:class:`~kbqa_lit.kb.store.OxigraphStore`, so answers are extracted exactly as users and checks get
them — on a read-only handle in this thread. Gold queries over a small KB need no timeout, and
skipping the store's per-query thread or process hop makes the build several times faster.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from kbqa_lit.errors import KBQAError
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.kb.store.oxigraph_runner import run_query

SEMANTICS = "exclude-topic"


class GoldExecutionError(KBQAError):
    """A gold S-expression of the synthetic world failed to execute (a bug in a template or the converter)."""


class StoreExecutor:
    """A callable ``execute(sexpr) -> answers`` over a temporary store; use it as a context manager.

    Args:
        kb_file: The N-Triples file to load.
    """

    def __init__(self, kb_file: Path) -> None:
        self.kb_file = Path(kb_file)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._store: Any = None
        self.queries = 0

    def __enter__(self) -> StoreExecutor:
        self._tmp = tempfile.TemporaryDirectory(prefix="kbqa-synth-")
        path = Path(self._tmp.name) / "store"
        build_store(path, [self.kb_file], "nt")
        import pyoxigraph

        self._store = pyoxigraph.Store.read_only(str(path))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._store = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __call__(self, sexpr: str) -> list[str]:
        """Execute one S-expression and return its answers.

        Raises:
            GoldExecutionError: When the query does not execute (gold S-expressions always must).
        """
        if self._store is None:
            raise RuntimeError("StoreExecutor is not open; use it in a with-block")
        self.queries += 1
        result = run_query(self._store, sexpr_to_sparql(sexpr, semantics=SEMANTICS))
        if not result["ok"]:
            raise GoldExecutionError(f"gold S-expression failed on the store: {sexpr}: {result['error']}")
        return list(result["answers"])
