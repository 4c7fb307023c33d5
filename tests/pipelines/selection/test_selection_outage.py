"""Execution-guided selection stops when the endpoint stays down; it never scores the beams as not executable.

Issue 31, scenario 2 for ``kbqa test``-style evaluation: a real local SPARQL endpoint (the HTTP
server of ``tests/kb/test_store.py``, answering from Oxigraph) answers the first question, then is
shut down. Within ``retry_for`` the store waits; beyond it the beam's result is ``unreachable``
and :func:`select_answer` raises :class:`EndpointUnreachableError` instead of falling back to
"no beam executes" (an empty or text-only prediction, scored as a wrong answer). The answer-text
fallback's name lookup and the relation paths of the path fallback stop the same way.
"""

from __future__ import annotations

import pytest

from kbqa_lit.errors import EndpointUnreachableError
from kbqa_lit.kb.index.paths import relation_paths
from kbqa_lit.kb.store import EndpointStore
from kbqa_lit.pipelines.selection.execution_guided import KBNameLookup, select_answer
from tests.kb.test_store import _serve

BEAMS = ["(JOIN (R film.film.directed_by) m.a)"]


@pytest.mark.parametrize("workers", [1, 2])
def test_selection_raises_when_the_endpoint_stays_down(workers: int) -> None:
    server, url = _serve()
    kb = EndpointStore(url, timeout=2, retries=1, backoff=0.05, retry_for=0.5, cache_size=0)
    try:
        sel = select_answer(BEAMS, kb, semantics="plain", label_to_ids={}, answer_text="x", workers=workers)
        assert sel.executable and sorted(sel.answers) == ["m.d1", "m.d2"]
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(EndpointUnreachableError, match=f"selection stopped: SPARQL endpoint {url} is unreachable"):
        select_answer(["(JOIN (R film.film.directed_by) m.b)"], kb, semantics="plain", label_to_ids={}, workers=workers)


def test_the_fallbacks_raise_too_when_the_endpoint_stays_down() -> None:
    server, url = _serve()
    kb = EndpointStore(url, timeout=2, retries=1, backoff=0.05, retry_for=0.5, cache_size=0)
    try:
        assert KBNameLookup(kb)["Dee One"] == ["m.d1"]
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(EndpointUnreachableError, match="name lookup stopped"):
        select_answer(
            ["(bad"], kb, semantics="plain", label_to_ids={}, answer_text="Alpha", name_to_ids=KBNameLookup(kb)
        )
    with pytest.raises(EndpointUnreachableError, match="relation paths of m.a"):
        relation_paths(kb, "m.a")
