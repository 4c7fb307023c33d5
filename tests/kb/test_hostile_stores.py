"""Hostile names on both stores: the answers are the entities with that exact name (issue 31, scenario 8).

A KB whose entity names are 300 seeded hostile strings (quotes, ``}``, ``#``, newlines, control
characters, backslash-u sequences, unicode, SPARQL keywords) is loaded into the embedded Oxigraph
store and into a real Virtuoso. For every name, ``(JOIN type.object.name "<name>")``, its ``@en``
form and the execution-guided name lookup (:class:`KBNameLookup`) must return exactly the entities
carrying that name — an injected ``} UNION {``, ``#`` or ``|| true`` would return others, a broken
escape none — and every failure must be an ``ok=False`` result, never an exception. A date
comparison whose literal tries ``"||true) #`` must keep its filter.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit.kb.lf.iri import NS
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.lf.terms import literal_nt
from kbqa_lit.kb.store import EndpointStore, OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.kb.virtuoso.server import VirtuosoServer
from kbqa_lit.pipelines.selection.execution_guided import KBNameLookup
from tests.helpers.hostile import PIECES, XSD, hostile_value, sexpr_quote
from tests.helpers.run_if import run_if

N_NAMES = 300
NAME, DOB, PERSON = "type.object.name", "people.person.date_of_birth", "people.person"


def _names() -> list[str]:
    rng = random.Random(8)
    names = [*PIECES, *(hostile_value(rng) for _ in range(N_NAMES))]
    return list(dict.fromkeys(n for n in names if n.strip()))[:N_NAMES]


NAMES = _names()


def _kb_lines() -> list[str]:
    """Entity ``m.h<i>`` named ``NAMES[i]`` (plain for even i, ``@en`` for odd), each a person born 1990."""
    lines = []
    for i, name in enumerate(NAMES):
        s = f"<{NS}m.h{i}>"
        lines.append(f"{s} <{NS}{NAME}> {literal_nt(name, lang='en' if i % 2 else None)} .")
        lines.append(f"{s} <{NS}type.object.type> <{NS}{PERSON}> .")
        lines.append(f'{s} <{NS}{DOB}> "1990-05-01"^^<{XSD}date> .')
    return lines


def _expected(name: str, english_only: bool = False) -> set[str]:
    return {f"m.h{i}" for i, n in enumerate(NAMES) if n == name and (i % 2 or not english_only)}


@pytest.fixture(scope="module")
def kb_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "kb.nt"
    path.write_text("\n".join(_kb_lines()) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def oxigraph(kb_file: Path) -> Iterator[OxigraphStore]:
    build_store(kb_file.parent / "store", [kb_file], "nt")
    store = OxigraphStore(kb_file.parent / "store", cache_size=0)
    yield store
    store.close()


@pytest.fixture(scope="module")
def virtuoso(kb_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EndpointStore]:
    server = VirtuosoServer(tmp_path_factory.mktemp("vdb"), memory="256M", max_query_seconds=10)
    try:
        server.prepare(data_dirs=[kb_file.parent])
        server.start(timeout=60)
        server.load([kb_file])
        yield server.store(timeout=30, retries=0, cache_size=0)
    finally:
        server.cleanup()


def _check_store(store: OxigraphStore | EndpointStore, drops_final_nul: bool = False) -> list[tuple]:
    """Every disagreement with the expected answers: ``(name, what, got, error)``.

    Args:
        store: The store holding the KB.
        drops_final_nul: The store loads ``"x\\u0000"`` as ``"x"`` (Virtuoso's bulk loader): a name
            ending in NUL may find nobody, but never anybody else.
    """
    wrong: list[tuple] = []
    lookup = KBNameLookup(store, limit=N_NAMES)
    for name in NAMES:
        lossy = drops_final_nul and name.endswith("\x00")
        for suffix, english in (("", False), ("@en", True)):
            sparql = sexpr_to_sparql(f"(JOIN {NAME} {sexpr_quote(name)}{suffix})", semantics="plain")
            result = store.execute(sparql)
            found = set(result.answers)
            if not result.ok or not (found == _expected(name, english) or (lossy and not found)):
                wrong.append((name, f"JOIN{suffix}", result.answers, result.error))
        try:
            found = set(lookup[name])
        except KeyError:
            found = set()
        if not (found == _expected(name) or (lossy and not found)):
            wrong.append((name, "KBNameLookup", sorted(found), None))
    for attack in ('"||true) #', '"||true)#', '") #', '"'):
        sexpr = f"(lt {DOB} {sexpr_quote(attack)}^^{XSD}date)"
        result = store.execute(sexpr_to_sparql(sexpr, semantics="plain"))
        if not result.ok or result.answers:  # "1990-05-01" < '"...' is false: nobody
            wrong.append((attack, "date comparison", result.answers[:3], result.error))
    return wrong


def test_hostile_names_on_oxigraph(oxigraph: OxigraphStore) -> None:
    wrong = _check_store(oxigraph)
    assert not wrong, f"{len(wrong)} wrong of {len(NAMES)} names; first: {wrong[:3]}"


@pytest.mark.virtuoso
@pytest.mark.slow  # a Virtuoso start and load, 900 queries
@run_if(virtuoso=True)
def test_hostile_names_on_virtuoso(virtuoso: EndpointStore) -> None:
    wrong = _check_store(virtuoso, drops_final_nul=True)
    assert not wrong, f"{len(wrong)} wrong of {len(NAMES)} names; first: {wrong[:3]}"


@pytest.mark.virtuoso
@pytest.mark.slow  # the module's Virtuoso
@run_if(virtuoso=True)
def test_a_query_virtuoso_cannot_lex_is_a_rejected_query_not_an_outage(virtuoso: EndpointStore) -> None:
    """A raw NUL in a string: Virtuoso answers HTTP 500 ``37000 ... SQ074``; that is the query's fault."""
    store = EndpointStore(virtuoso.url, retries=3, backoff=2.0, cache_size=0, params=virtuoso.params)
    query = 'SELECT ?x WHERE { ?x ?p "a\x00b" }'
    result = store.execute(query)
    assert not result.ok and result.error and "rejected the query" in result.error and "SQ074" in result.error
    outcome, _, attempts = store._request(query)
    assert (outcome, attempts) == ("bad", 1)  # one attempt: not retried with back-off


def test_a_query_that_is_not_unicode_is_refused_by_both_stores(oxigraph: OxigraphStore) -> None:
    """A lone surrogate (JSON ``"\\ud800"``) reaches no engine: a refused, ok=False result."""
    lookup = KBNameLookup(oxigraph)
    with pytest.raises(KeyError):
        lookup["x\ud800"]
    for store in (oxigraph, EndpointStore("http://127.0.0.1:9/sparql", retries=0, cache_size=0)):
        result = store.execute('SELECT ?x WHERE { ?x ?p "\ud800" }')
        assert not result.ok and result.error and result.error.startswith("refused: the query is not valid Unicode")
