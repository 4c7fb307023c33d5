"""A real OpenLink Virtuoso endpoint against Oxigraph: same SPARQL, same answers.

One Virtuoso server (module-scoped, free ports, in tmp_path) holds the synthetic world (seed 0,
small) in one graph and a probe KB of awkward literals in another. Every gold
S-expression runs through ``sexpr_to_sparql`` on both stores; execution-guided selection runs
against the endpoint. Dialect differences that remain are the ``xfail`` cases of
``PROBE_CASES`` (see docs/kb.md "Virtuoso"); the others are handled by the converter's typed
equality and type guards and by canonical literal forms in ``EndpointStore``.

Integration tests are marked ``virtuoso`` and skipped when ``virtuoso-t``/``isql-vt`` are missing
(``.ci/install-virtuoso.sh`` installs them); the first tests need no server.
"""

from __future__ import annotations

import json
import os
import random
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbqa_lit.data.formats.synthetic import read_synthetic
from kbqa_lit.data.schema import KBQAExample
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.errors import StoreError, UserInputError
from kbqa_lit.kb.lf.denormalize import invert_labels
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.lf.ontology import Ontology
from kbqa_lit.kb.lf.sexpr import Atom, map_atoms, parse_sexpr, schema_items
from kbqa_lit.kb.lf.sparql import sexpr_to_sparql
from kbqa_lit.kb.store import EndpointStore, OxigraphStore
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.kb.virtuoso.server import (
    INSTALL_HINT,
    VirtuosoServer,
    buffers_for,
    find_binaries,
    free_port,
    render_ini,
)
from kbqa_lit.pipelines.selection.execution_guided import select_answer

NS = "http://rdf.freebase.com/ns/"
XSD = "http://www.w3.org/2001/XMLSchema#"
PROBE_GRAPH = "http://kbqa-lit.test/probe"
P = "people.person"

try:
    find_binaries()
    MISSING = ""
except StoreError as exc:
    MISSING = str(exc)


def _nt(s: str, p: str, o: str) -> str:
    return f"<{NS}{s}> <{NS}{p}> {o} ."


PROBE_NT = "\n".join(
    [
        *(_nt(e, "type.object.type", f"<{NS}{P}>") for e in ("m.a", "m.b", "m.c", "m.d")),
        _nt("m.a", "type.object.name", '"Alice"@en'),
        _nt("m.a", "type.object.name", '"Alicia"@es'),
        _nt("m.b", "type.object.name", '"Bob"@en-US'),
        _nt("m.c", "type.object.name", '"Carl"'),
        _nt("m.d", "type.object.name", '"D\\u00f6rte \\"Q\\""@en'),
        _nt("m.a", f"{P}.height_meters", f'"1.90"^^<{XSD}float>'),
        _nt("m.b", f"{P}.height_meters", f'"1.9"^^<{XSD}float>'),
        _nt("m.c", f"{P}.height_meters", f'"1.75"^^<{XSD}float>'),
        _nt("m.d", f"{P}.height_meters", f'"2"^^<{XSD}float>'),
        _nt("m.a", f"{P}.weight_kg", f'"70.50"^^<{XSD}double>'),
        _nt("m.b", f"{P}.weight_kg", f'"1e2"^^<{XSD}double>'),
        _nt("m.a", f"{P}.net_worth", f'"100.50"^^<{XSD}decimal>'),
        _nt("m.a", f"{P}.children", f'"09"^^<{XSD}integer>'),
        _nt("m.b", f"{P}.children", f'"+5"^^<{XSD}integer>'),
        _nt("m.c", f"{P}.children", f'"12345678901234567890"^^<{XSD}integer>'),
        _nt("m.a", f"{P}.date_of_birth", f'"1970-12-17"^^<{XSD}date>'),
        _nt("m.b", f"{P}.date_of_birth", f'"1970"^^<{XSD}gYear>'),
        _nt("m.c", f"{P}.date_of_birth", f'"1970-05"^^<{XSD}gYearMonth>'),
        _nt("m.d", f"{P}.date_of_birth", f'"1969-12-31T23:00:00"^^<{XSD}dateTime>'),
        _nt("m.a", f"{P}.alive", f'"true"^^<{XSD}boolean>'),
        _nt("m.c", f"{P}.founded", f'"-0500"^^<{XSD}gYear>'),
        _nt("m.d", f"{P}.founded", f'"0800"^^<{XSD}gYear>'),
        _nt("m.a", f"{P}.spouse", f"<{NS}m.b>"),
        _nt("m.a", f"{P}.code", f'"007"^^<{XSD}string>'),
        _nt("m.c", f"{P}.note", '"plain"'),
        _nt("m.c", f"{P}.note", '"texte"@fr'),
        _nt("m.a", f"{P}.stint.from", f'"1990"^^<{XSD}gYear>'),
        _nt("m.b", f"{P}.stint.from", f'"2001"^^<{XSD}gYear>'),
        _nt("m.b", f"{P}.stint.to", f'"2012-06-30"^^<{XSD}date>'),
        _nt("m.a", f"{P}.rank", '"10"'),
        _nt("m.b", f"{P}.rank", f'"9"^^<{XSD}integer>'),
        _nt("m.c", f"{P}.rank", f'"8"^^<{XSD}integer>'),
        _nt("m.a", "kg.object_profile.prominent_type", f"<{NS}{P}>"),
    ]
)


def _xfail(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(reason=reason, strict=True)


FLOAT_VS_DECIMAL = _xfail(
    "a bare number is an xsd:decimal: Oxigraph promotes it to float (1.9f = 1.9), Virtuoso compares "
    "the float widened to double (1.899999976 < 1.9); typed literals (1.9^^xsd:float) agree"
)
BCE_YEAR = _xfail(
    "Virtuoso stores gYear '-0500' as '-500' and orders BCE years after CE years (answers are canonicalised back)"
)
BIG_INT = _xfail(
    "an integer beyond 64 bits: Virtuoso keeps it as a decimal, Oxigraph treats it as ill-formed "
    "(not numeric), so comparisons and ARGMAX differ"
)


#: (S-expression on the probe KB, answers) — the answers are Oxigraph's.
PROBE_CASES = [
    (f"(JOIN {P}.height_meters 1.9^^{XSD}float)", {"m.a", "m.b"}),
    pytest.param(f"(JOIN {P}.height_meters 1.9)", {"m.a", "m.b"}, marks=FLOAT_VS_DECIMAL),
    (f"(JOIN {P}.height_meters 2^^{XSD}float)", {"m.d"}),
    (f"(JOIN {P}.height_meters 1.75)", {"m.c"}),
    pytest.param(f"(ge {P}.height_meters 1.9)", {"m.a", "m.b", "m.d"}, marks=FLOAT_VS_DECIMAL),
    pytest.param(f"(lt {P}.height_meters 1.9)", {"m.c"}, marks=FLOAT_VS_DECIMAL),
    (f"(ge {P}.height_meters 1.9^^{XSD}float)", {"m.a", "m.b", "m.d"}),
    (f"(lt {P}.height_meters 1.9^^{XSD}float)", {"m.c"}),
    (f"(le {P}.height_meters 1.75)", {"m.c"}),
    (f"(JOIN {P}.weight_kg 70.5)", {"m.a"}),
    (f"(le {P}.weight_kg 70.5^^{XSD}double)", {"m.a"}),
    (f"(JOIN {P}.net_worth 100.5)", {"m.a"}),
    (f"(JOIN {P}.children 9)", {"m.a"}),
    (f"(JOIN {P}.children 5)", {"m.b"}),
    pytest.param(f"(gt {P}.children 8)", {"m.a"}, marks=BIG_INT),
    pytest.param(f"(ARGMAX {P} {P}.children)", {"m.a"}, marks=BIG_INT),
    (f"(lt {P}.date_of_birth 1970-06-01^^{XSD}date)", {"m.b", "m.c", "m.d"}),
    (f"(ge {P}.date_of_birth 1970^^{XSD}gYear)", {"m.a", "m.b", "m.c"}),
    (f"(le {P}.date_of_birth 1970-05^^{XSD}gYearMonth)", {"m.b", "m.c", "m.d"}),
    (f"(JOIN {P}.date_of_birth 1970^^{XSD}gYear)", {"m.b"}),
    (f"(JOIN {P}.date_of_birth 1970-12-17^^{XSD}date)", {"m.a"}),
    (f"(ARGMAX {P} {P}.date_of_birth)", {"m.a"}),
    (f"(ARGMIN {P} {P}.date_of_birth)", {"m.d"}),
    (f"(ARGMAX {P} {P}.height_meters)", {"m.d"}),
    (f"(ARGMIN {P} {P}.weight_kg)", {"m.a"}),
    (f"(lt {P}.founded 0900^^{XSD}gYear)", {"m.c", "m.d"}),
    pytest.param(f"(JOIN {P}.founded -0500^^{XSD}gYear)", {"m.c"}, marks=BCE_YEAR),
    pytest.param(f"(ARGMIN {P} {P}.founded)", {"m.c"}, marks=BCE_YEAR),
    (f"(JOIN {P}.alive true^^{XSD}boolean)", {"m.a"}),
    ('(JOIN type.object.name "Alice"@en)', {"m.a"}),
    ('(JOIN type.object.name "Bob"@en-US)', {"m.b"}),
    ('(JOIN type.object.name "Bob")', {"m.b"}),
    ('(JOIN type.object.name "Carl")', {"m.c"}),
    ('(JOIN type.object.name "Dörte \\"Q\\""@en)', {"m.d"}),
    (f'(JOIN {P}.code "007")', {"m.a"}),
    ("(JOIN (R type.object.name) m.a)", {"Alice"}),
    ("(JOIN (R type.object.name) m.b)", {"Bob"}),
    ("(JOIN (R type.object.name) m.d)", {'Dörte "Q"'}),
    (f"(JOIN (R {P}.note) m.c)", {"plain"}),
    (f"(JOIN (R {P}.date_of_birth) m.d)", {"1969-12-31T23:00:00"}),
    (f"(JOIN (R {P}.height_meters) m.a)", {"1.9"}),
    (f"(JOIN (R {P}.net_worth) m.a)", {"100.5"}),
    (f"(JOIN (R {P}.children) m.a)", {"9"}),
    (f"(JOIN (R {P}.height_meters) m.d)", {"2"}),
    (f"(JOIN (R {P}.weight_kg) m.b)", {"100"}),
    (f"(JOIN (R {P}.alive) m.a)", {"true"}),
    (f"(JOIN (R {P}.founded) m.c)", {"-0500"}),
    (f"(ge {P}.spouse 1.5^^{XSD}float)", set()),
    ("(ge type.object.name 1.5)", set()),
    (f"(ge {P}.date_of_birth 1.5)", set()),
    (f"(lt {P}.spouse 1.5)", set()),
    (f"(COUNT {P})", {"4"}),
    (f"(COUNT (JOIN {P}.spouse m.zzz))", {"0"}),
    (f"(TC {P} {P}.stint.from 1995)", {"m.a", "m.c", "m.d"}),
    (f"(TC {P} {P}.stint.from 2005)", {"m.a", "m.b", "m.c", "m.d"}),
    (f"(TC {P} {P}.stint.from 2013)", {"m.a", "m.c", "m.d"}),
    (f"(TC {P} {P}.stint.from NOW)", {"m.a", "m.c", "m.d"}),
    # issue 13: casts by datatype (a numeric string, mixed date types), dates by day, class nodes
    (f"(ARGMAX {P} {P}.rank)", {"m.a"}),
    (f"(ARGMIN {P} {P}.rank)", {"m.c"}),
    (f"(gt {P}.rank 9)", {"m.a"}),
    (f"(gt {P}.date_of_birth 1970^^{XSD}dateTime)", {"m.a", "m.c"}),
    (f"(le {P}.date_of_birth 1970-05-01^^{XSD}date)", {"m.b", "m.c", "m.d"}),
    (f"(JOIN kg.object_profile.prominent_type {P})", {"m.a"}),
    (f"(ARGMAX (JOIN (R {P}.spouse) m.a) {P}.height_meters)", {"m.b"}),
]


# ---------------------------------------------------------------------- no server needed


def test_missing_binaries_raise_the_install_hint(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="apt-get install virtuoso-opensource-7-bin"):
        find_binaries(virtuoso=str(tmp_path / "virtuoso-t"), isql=str(tmp_path / "isql-vt"))
    assert "apt-get install" in INSTALL_HINT


def test_ini_binds_localhost_and_sizes_buffers(tmp_path: Path) -> None:
    text = render_ini(tmp_path, 18890, 11111, [tmp_path / "data"], memory="2G", max_query_seconds=7, max_rows=99)
    assert "[Parameters]\nServerPort = 127.0.0.1:11111" in text
    assert "[HTTPServer]\nServerPort = 127.0.0.1:18890" in text
    assert f"DirsAllowed = ., {tmp_path}, {tmp_path / 'data'}" in text
    assert "NumberOfBuffers = 170000\nMaxDirtyBuffers = 127500" in text
    assert "MaxQueryExecutionTime = 7" in text and "ResultSetMaxRows = 99" in text
    assert buffers_for("64G") == (5_440_000, 4_080_000)
    with pytest.raises(ValueError, match="memory"):
        buffers_for("lots")


# ---------------------------------------------------------------------- a real server


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("world")
    build_world(out, seed=0, size="small")
    (out / "probe.nt").write_text(PROBE_NT + "\n", encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def examples(world: Path) -> list[KBQAExample]:
    return [ex for split in ("train", "dev", "test") for ex in read_synthetic(world, split)]


@pytest.fixture(scope="module")
def server(world: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtuosoServer]:
    if MISSING:
        pytest.skip(f"{MISSING} (or run .ci/install-virtuoso.sh)")
    server = VirtuosoServer(tmp_path_factory.mktemp("vdb"), memory="256M", max_query_seconds=2, clean_on_exit=True)
    try:
        server.prepare(data_dirs=[world])
        server.start(timeout=60)
        server.load([world / "kb.nt"])
        server.load([world / "probe.nt"], graph=PROBE_GRAPH)
        yield server
    finally:
        server.cleanup()
    assert not server.is_running()


@pytest.fixture(scope="module")
def virtuoso(server: VirtuosoServer) -> EndpointStore:
    return server.store(timeout=30, retries=0, cache_size=0)


@pytest.fixture(scope="module")
def oxigraph(world: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphStore]:
    path = tmp_path_factory.mktemp("ox") / "store"
    build_store(path, [world / "kb.nt"], "nt")
    store = OxigraphStore(path, cache_size=0)
    yield store
    store.close()


@pytest.fixture(scope="module")
def probe_stores(server: VirtuosoServer, world: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    path = tmp_path_factory.mktemp("probe") / "store"
    build_store(path, [world / "probe.nt"], "nt")
    ox = OxigraphStore(path, cache_size=0)
    vi = EndpointStore(server.endpoint, params={"default-graph-uri": PROBE_GRAPH}, cache_size=0, retries=0)
    yield ox, vi
    ox.close()


@pytest.mark.virtuoso
def test_server_is_up_on_localhost_with_the_data_in_the_default_graph(
    server: VirtuosoServer, virtuoso: EndpointStore, world: Path
) -> None:
    assert server.is_running() and server.endpoint.startswith("http://127.0.0.1:")
    state = json.loads(server.state_path.read_text())
    assert state["pid"] == server.pid and state["http_port"] == server.http_port
    assert stat.S_IMODE(os.stat(server.state_path).st_mode) == 0o600
    triples = sum(1 for line in (world / "kb.nt").open() if line.strip())
    assert server.count_triples() == triples
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    assert virtuoso.execute(count).answers == [str(triples)]  # default-graph-uri = the loaded graph
    union = EndpointStore(server.endpoint, cache_size=0).execute(count)  # no default-graph-uri:
    assert int(union.answers[0]) > triples + 1000  # every graph, Virtuoso's system graphs included
    assert virtuoso.ping() < 5


@pytest.mark.virtuoso
def test_every_gold_sexpr_gives_the_same_answers_on_virtuoso_and_oxigraph(
    examples: list[KBQAExample], virtuoso: EndpointStore, oxigraph: OxigraphStore
) -> None:
    assert len(examples) == 700
    mismatches = []
    for ex in examples:
        assert ex.s_expression
        sparql = sexpr_to_sparql(ex.s_expression, semantics=ex.semantics)
        on_vi, on_ox = virtuoso.execute(sparql), oxigraph.execute(sparql)
        gold = {a.id for a in ex.answers}
        if not (on_vi.ok and on_ox.ok and set(on_vi.answers) == set(on_ox.answers) == gold):
            mismatches.append((ex.qid, ex.s_expression, sorted(gold), on_ox.answers, on_vi.answers, on_vi.error))
    assert not mismatches, mismatches[:5]


@pytest.mark.virtuoso
def test_other_semantics_and_argmax_without_ties_agree(
    examples: list[KBQAExample], virtuoso: EndpointStore, oxigraph: OxigraphStore
) -> None:
    mismatches = []
    for ex in examples[::3]:
        assert ex.s_expression
        others = ("simple-path", "plain", "exclude-source", "distinct-nodes")
        variants = [sexpr_to_sparql(ex.s_expression, semantics=s) for s in others]
        if ex.s_expression.startswith(("(ARGMAX", "(ARGMIN")) and len(ex.answers) == 1:
            variants.append(sexpr_to_sparql(ex.s_expression, semantics=ex.semantics, ties="first"))
            variants.append(sexpr_to_sparql(ex.s_expression, semantics=ex.semantics, ties="all"))
        for sparql in variants:
            on_vi, on_ox = virtuoso.execute(sparql), oxigraph.execute(sparql)
            if not (on_vi.ok and on_ox.ok and set(on_vi.answers) == set(on_ox.answers)):
                mismatches.append((ex.qid, sparql, on_ox.answers, on_vi.answers, on_vi.error))
    assert not mismatches, mismatches[:3]


@pytest.mark.virtuoso
@pytest.mark.parametrize(("sexpr", "expected"), PROBE_CASES)
def test_probe_literals_dialect(sexpr: str, expected: set[str], probe_stores: tuple) -> None:
    ox, vi = probe_stores
    sparql = sexpr_to_sparql(sexpr)
    on_ox, on_vi = ox.execute(sparql), vi.execute(sparql)
    assert on_ox.ok and set(on_ox.answers) == expected, on_ox
    assert on_vi.ok, on_vi.error
    assert set(on_vi.answers) == expected, f"Virtuoso {on_vi.answers} vs Oxigraph {on_ox.answers}\n{sparql}"


#: Ranges for the probe KB's relations (spouse deliberately typed as a number: IRIs must not break casts).
PROBE_RANGES = Ontology(
    ranges={
        f"{P}.rank": "type.int",
        f"{P}.height_meters": "type.float",
        f"{P}.date_of_birth": "type.datetime",
        f"{P}.spouse": "type.int",
    }
)
RANGE_CASES = [
    (f"(ARGMAX {P} {P}.rank)", {"m.a"}),
    (f"(ARGMIN {P} {P}.rank)", {"m.c"}),
    (f"(gt {P}.rank 9)", {"m.a"}),
    (f"(lt {P}.rank 9)", {"m.c"}),
    (f"(ARGMAX {P} {P}.height_meters)", {"m.d"}),
    (f"(gt {P}.height_meters 1.8)", {"m.a", "m.b", "m.d"}),
    (f"(ARGMAX {P} {P}.date_of_birth)", {"m.a"}),
    (f"(ARGMIN {P} {P}.date_of_birth)", {"m.d"}),
    (f"(gt {P}.spouse 1)", set()),
    (f"(ARGMAX {P} {P}.spouse)", {"m.a"}),
]


@pytest.mark.virtuoso
@pytest.mark.parametrize(("sexpr", "expected"), RANGE_CASES)
def test_casts_by_the_ontology_range_agree(sexpr: str, expected: set[str], probe_stores: tuple) -> None:
    ox, vi = probe_stores
    for ties in ("first", "all"):
        sparql = sexpr_to_sparql(sexpr, ontology=PROBE_RANGES, ties=ties)
        on_ox, on_vi = ox.execute(sparql), vi.execute(sparql)
        assert on_ox.ok and set(on_ox.answers) == expected, on_ox
        assert on_vi.ok and set(on_vi.answers) == expected, f"Virtuoso {on_vi}\n{sparql}"


@pytest.mark.virtuoso
@pytest.mark.parametrize("exists", [True, False])
def test_ask_results(probe_stores: tuple, exists: bool) -> None:
    _, vi = probe_stores
    rel = f"{P}.spouse" if exists else f"{P}.nothing"
    assert vi.execute(f"ASK {{ ?s <{NS}{rel}> ?o }}").answers == [str(exists).lower()]


def _beams(ex: KBQAExample, rng: random.Random) -> tuple[list[str], dict[str, str]]:
    """Hand-made beams: broken, unmappable and non-executable variants, then the gold one."""
    assert ex.s_expression
    gold = parse_sexpr(ex.s_expression)
    labels = dict(ex.topic_entities)
    gold_text = normalize_sexpr(gold, labels)
    victim = rng.choice(schema_items(gold).relations)
    missing_rel = map_atoms(gold, lambda a, r: Atom(victim + "_gone") if a.text == victim else a)
    beams = [
        gold_text[: len(gold_text) // 2],  # truncated
        gold_text.replace("[", "[ No Such Entity Xq7 ,", 1) if "[" in gold_text else "( join",
        normalize_sexpr(missing_rel, labels),  # executes, no answer (COUNT 0)
        gold_text.replace(")", "", 1),  # a parenthesis missing
        gold_text,
    ]
    return beams, labels


@pytest.mark.virtuoso
def test_execution_guided_selection_on_the_endpoint_picks_the_gold_answers(
    examples: list[KBQAExample], virtuoso: EndpointStore
) -> None:
    rng = random.Random(0)
    wrong = []
    for ex in examples[1::4]:
        beams, labels = _beams(ex, rng)
        sel = select_answer(beams, virtuoso, semantics=ex.semantics, label_to_ids=invert_labels(labels))
        if not (
            sel.executable and sel.chosen_beam == len(beams) - 1 and set(sel.answers) == {a.id for a in ex.answers}
        ):
            wrong.append((ex.qid, beams, sel.to_dict()))
    assert not wrong, wrong[:2]


@pytest.mark.virtuoso
def test_execution_guided_selection_is_the_same_on_both_stores(
    examples: list[KBQAExample], virtuoso: EndpointStore, oxigraph: OxigraphStore
) -> None:
    """Realistic beams (wrong relations / entities that often execute): same choice on both stores.

    Comparatives are included: a wrong relation there compares entities or strings with a number,
    which the converter's isNumeric/isLiteral guards make false on both engines.
    """
    rng = random.Random(1)
    relations = sorted({r for ex in examples for r in schema_items(ex.s_expression or "").relations})
    entities = sorted({(e, n) for ex in examples for e, n in ex.topic_entities.items()})
    differ = []
    for ex in examples[2::5]:
        assert ex.s_expression
        gold = parse_sexpr(ex.s_expression)
        labels = {**dict(rng.sample(entities, 3)), **ex.topic_entities}
        beams = []
        for _ in range(6):
            rel, ent = rng.choice(schema_items(gold).relations), rng.choice(sorted(labels))
            new_rel = rng.choice(relations)
            beams.append(
                normalize_sexpr(
                    map_atoms(
                        gold,
                        lambda a, r, rel=rel, ent=ent, new_rel=new_rel: (
                            Atom(new_rel) if a.text == rel else Atom(ent) if r == "entity" else a
                        ),
                    ),
                    labels,
                )
            )
        beams.insert(rng.randrange(len(beams) + 1), normalize_sexpr(gold, labels))
        picks = [
            select_answer(beams, kb, semantics=ex.semantics, label_to_ids=invert_labels(labels))
            for kb in (oxigraph, virtuoso)
        ]
        if (picks[0].chosen_beam, set(picks[0].answers)) != (picks[1].chosen_beam, set(picks[1].answers)):
            differ.append((ex.qid, beams, picks[0].to_dict(), picks[1].to_dict()))
    assert not differ, differ[:2]


@pytest.mark.virtuoso
@pytest.mark.skipif(bool(MISSING), reason=f"{MISSING} (or run .ci/install-virtuoso.sh)")
def test_a_server_that_cannot_start_raises_with_the_log_tail(tmp_path: Path) -> None:
    server = VirtuosoServer(tmp_path / "vdb", memory="256M")
    server.prepare()
    ini = server.ini_path.read_text().replace(
        f"DatabaseFile = {server.directory}/virtuoso.db", "DatabaseFile = /no/such/x.db"
    )
    server.ini_path.write_text(ini)
    try:
        with pytest.raises(StoreError, match=r"(?s)exited during start-up.*Cannot open"):
            server.start(timeout=30)
        assert not server.is_running()
    finally:
        server.cleanup()


@pytest.mark.virtuoso
def test_a_runaway_query_is_a_timeout_error_not_partial_results(virtuoso: EndpointStore) -> None:
    result = virtuoso.execute("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }")
    assert not result.ok and result.error and "timeout" in result.error


@pytest.mark.virtuoso
@pytest.mark.slow  # four `kbqa` subprocesses and a second server start
@pytest.mark.skipif(bool(MISSING), reason=f"{MISSING} (or run .ci/install-virtuoso.sh)")
def test_cli_serve_query_stop(world: Path, tmp_path: Path) -> None:
    kbqa = [sys.executable, "-m", "kbqa_lit"]
    vdir = tmp_path / "vdb"
    port, isql_port = free_port(), free_port()
    try:
        serve = subprocess.run(
            [*kbqa, "kb", "serve-virtuoso", "--data", str(world / "kb.nt"), "--dir", str(vdir)]
            + ["--port", str(port), "--isql-port", str(isql_port), "--memory", "256M"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert serve.returncode == 0, serve.stderr
        info = json.loads(serve.stdout)
        assert info["endpoint"] == f"http://127.0.0.1:{port}/sparql" and info["triples_loaded"] > 7000
        again = subprocess.run(
            [*kbqa, "kb", "serve-virtuoso", "--dir", str(vdir)], capture_output=True, text=True, timeout=60
        )
        assert again.returncode != 0 and "already runs" in again.stderr
        query = subprocess.run(
            [*kbqa, "kb", "query", "--store", info["endpoint"], "SELECT ?x WHERE { ?x ?p ?o } LIMIT 1"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert json.loads(query.stdout)["ok"] is True
    finally:
        stop = subprocess.run(
            [*kbqa, "kb", "stop-virtuoso", "--dir", str(vdir), "--clean"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert stop.returncode == 0, stop.stderr
    assert json.loads(stop.stdout)["stopped"] is True
    assert not vdir.exists()


@pytest.mark.virtuoso
def test_relation_paths_are_the_same_on_virtuoso_and_oxigraph(
    examples: list[KBQAExample], virtuoso: EndpointStore, oxigraph: OxigraphStore
) -> None:
    """The path fallback's one query per entity (UNION, OPTIONAL, COALESCE, CONCAT) reads the same paths."""
    from kbqa_lit.kb.index.paths import relation_paths

    entities = list(dict.fromkeys(e for ex in examples[:40] for e in ex.topic_entities))[:12]
    assert len(entities) == 12
    for entity in entities:
        on_ox = [p.sexpr for p in relation_paths(oxigraph, entity)]
        on_vi = [p.sexpr for p in relation_paths(virtuoso, entity)]
        assert on_ox and on_vi == on_ox, entity
        assert any("(JOIN (R " in s and s.count("(JOIN") == 2 for s in on_ox)  # two-hop paths are read too


@pytest.mark.virtuoso
def test_mediator_paths_and_answer_classes_are_the_same_on_virtuoso_and_oxigraph(
    examples: list[KBQAExample], virtuoso: EndpointStore, oxigraph: OxigraphStore
) -> None:
    """The answer-type check's queries (NOT EXISTS in a FILTER's ||, NOT IN, VALUES) read the same on both stores."""
    from kbqa_lit.kb.index.paths import mediator_paths
    from kbqa_lit.pipelines.selection.answer_type import AnswerTypes

    entities = list(dict.fromkeys(e for ex in examples[:40] for e in ex.topic_entities))[:12]
    found = 0
    for entity in entities:
        on_ox = [p.sexpr for p in mediator_paths(oxigraph, entity)]
        assert [p.sexpr for p in mediator_paths(virtuoso, entity)] == on_ox, entity
        found += len(on_ox)
    assert found  # the synthetic world's CVTs (education, performance, roster) are nameless
    types = AnswerTypes()
    assert types.kb_classes(virtuoso) == types.kb_classes(oxigraph) and "location.city" in types.kb_classes(oxigraph)
    assert types.answer_classes(virtuoso, entities) == types.answer_classes(oxigraph, entities)


@pytest.mark.virtuoso
def test_disk_entity_index_from_virtuoso_answers_as_the_oxigraph_one(
    examples: list[KBQAExample], virtuoso: EndpointStore, oxigraph: OxigraphStore, tmp_path: Path
) -> None:
    """An endpoint's on-disk entity index (its three queries streamed into SQLite) = one streamed from Oxigraph."""
    from kbqa_lit.kb.index.entity_db import DiskEntityIndex
    from kbqa_lit.kb.index.entity_index import EntityIndex

    from_virtuoso = EntityIndex.for_store(virtuoso, path=tmp_path / "vi.sqlite")
    from_oxigraph = DiskEntityIndex.build(oxigraph, tmp_path / "ox.sqlite")
    assert isinstance(from_virtuoso, DiskEntityIndex) and from_virtuoso.source == virtuoso.identity
    assert len(from_virtuoso) == len(from_oxigraph) > 100
    for ex in examples[:40]:
        assert from_virtuoso.search(ex.question) == from_oxigraph.search(ex.question), ex.question
    with pytest.raises(UserInputError, match="needs a file"):
        EntityIndex.for_store(virtuoso, backend="disk")


@pytest.mark.virtuoso
def test_sampled_chain_and_typed_asks_are_the_same_on_virtuoso_and_oxigraph(
    examples: list[KBQAExample], virtuoso: EndpointStore, oxigraph: OxigraphStore
) -> None:
    """FC-KBQA's pair checks in their bounded forms (LIMIT subqueries, FILTER EXISTS) read the same on both stores."""
    from kbqa_lit.kb.index.connectivity import Connectivity, RelationChains, TypedRelations
    from kbqa_lit.kb.index.relation_inventory import RelationInventory
    from kbqa_lit.pipelines.selection.answer_type import AnswerTypes

    relations = sorted(RelationInventory.from_store(oxigraph))[:8]
    pairs = [(a, b) for a in relations for b in [*relations, *(f"(R {r})" for r in relations)] if a != b]
    on_ox = RelationChains(oxigraph, sample=50).chained(pairs)
    assert RelationChains(virtuoso, sample=50).chained(pairs) == on_ox and any(on_ox) and not all(on_ox)
    classes = sorted(AnswerTypes().kb_classes(oxigraph))[:6]
    triples = [(c, r, side) for c in classes for r in relations for side in ("domain", "range")]
    typed_ox = TypedRelations(oxigraph).holds(triples)
    assert TypedRelations(virtuoso).holds(triples) == typed_ox and any(typed_ox)
    entities = list(dict.fromkeys(e for ex in examples[:30] for e in ex.topic_entities))
    pairs_e = [(r, e) for r in relations for e in entities]
    linked = Connectivity(oxigraph, batch_size=40).connected(pairs_e)
    assert Connectivity(virtuoso, batch_size=40).connected(pairs_e) == linked and any(linked) and not all(linked)
