"""Triple files → N-Triples → on-disk Oxigraph stores, on synthetic edge cases and the real KBs."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbqa_lit.errors import DataFormatError, StoreError, UserInputError
from kbqa_lit.kb.lf.iri import entity_id_for_name, relation_id_for
from kbqa_lit.kb.lf.terms import escape_literal, fb_iri, literal_nt
from kbqa_lit.kb.store import OxigraphStore
from kbqa_lit.kb.store.loaders import build_store, iter_ntriples, write_ntriples
from tests.helpers.shared_data import shared_path as data_file

NS = "http://rdf.freebase.com/ns/"
XSD = "http://www.w3.org/2001/XMLSchema#"
AWKWARD = ['say "hi"', "back\\slash", "two\nlines", "cr\rhere", "nul\x00bell\x07", "ünï €", "<a>{b}|^c`"]


def names_in(store_dir: Path) -> list[str]:
    store = pyoxigraph.Store.read_only(str(store_dir))
    return sorted(s[0].value for s in store.query(f"SELECT ?n WHERE {{ ?e <{NS}type.object.name> ?n }}"))


# -- escaping -------------------------------------------------------------------------------
def test_escape_literal() -> None:
    assert escape_literal('a "b" \\ c') == 'a \\"b\\" \\\\ c'
    assert escape_literal("x\ny\rz\tw") == "x\\ny\\rz\\tw"
    assert escape_literal("\x00\x1f\x7f") == "\\u0000\\u001F\\u007F"
    assert escape_literal("ünï €") == "ünï €"
    assert literal_nt("x", lang="en") == '"x"@en'
    assert literal_nt("9", datatype=XSD + "integer") == f'"9"^^<{XSD}integer>'


@pytest.mark.parametrize("bad", ["", "has space", "a<b", 'q"', "x{y}", "p|q", "c^d", "b`t", "back\\s", "tab\t"])
def test_fb_iri_rejects_unsafe_text(bad: str) -> None:
    with pytest.raises(ValueError):
        fb_iri(bad)


def test_awkward_literals_round_trip_through_a_store(tmp_path: Path) -> None:
    tsv = tmp_path / "kb.tsv"
    tsv.write_text("".join(f"m.e{i}\ttype.object.name\t{n}\n" for i, n in enumerate(AWKWARD) if "\n" not in n
                           and "\r" not in n), encoding="utf-8")  # fmt: skip
    build_store(tmp_path / "tsv", [tsv], "tsv")
    assert names_in(tmp_path / "tsv") == sorted(n for n in AWKWARD if "\n" not in n and "\r" not in n)
    pq = tmp_path / "kb.txt"
    pq.write_text('a_"quoted"_name\tspouse\tback\\slash_<x>\n', encoding="utf-8")
    build_store(tmp_path / "pq", [pq], "pathquestion")
    assert names_in(tmp_path / "pq") == ['a "quoted" name', "back\\slash <x>"]
    # newlines cannot occur in a line-based file, but the N-Triples writer escapes them anyway
    store = pyoxigraph.Store()
    nt = "".join(f"<{NS}m.e{i}> <{NS}type.object.name> {literal_nt(n, lang='en')} .\n" for i, n in enumerate(AWKWARD))
    store.load(nt.encode(), pyoxigraph.RdfFormat.N_TRIPLES)
    assert sorted(q.object.value for q in store) == sorted(AWKWARD)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=40), lang=st.sampled_from([None, "en", "fr-be"]))
def test_any_text_survives_n_triples(text: str, lang: str | None) -> None:
    line = f"<{NS}m.x> <{NS}type.object.name> {literal_nt(text, lang=lang)} .\n"
    assert "\n" not in line[:-1] and "\r" not in line
    store = pyoxigraph.Store()
    store.load(line.encode("utf-8"), pyoxigraph.RdfFormat.N_TRIPLES)
    (quad,) = list(store)
    assert quad.object.value == text and quad.object.language == lang


# -- the TSV format -------------------------------------------------------------------------
def test_tsv_object_kinds(tmp_path: Path) -> None:
    tsv = tmp_path / "kb.tsv"
    tsv.write_text(
        "m.s\tfilm.film.directed_by\tm.d\n"
        "m.s\ttype.object.type\tfilm.film\n"
        "m.s\ttype.object.name\tm. night\n"
        "g.s\tfilm.film.runtime\t9^^http://www.w3.org/2001/XMLSchema#integer\n"
        "g.s\tfilm.film.release\t2015-06-30^^<http://www.w3.org/2001/XMLSchema#date>\n"
        'g.s\tcommon.topic.alias\t"Alias"@fr\n'
        "\n"
        "g.s\tcommon.topic.description\tplain text, 3^^not-an-iri\n",
        encoding="utf-8",
    )
    lines = list(iter_ntriples([tsv], "tsv"))
    assert lines == [
        f"<{NS}m.s> <{NS}film.film.directed_by> <{NS}m.d> .\n",
        f"<{NS}m.s> <{NS}type.object.type> <{NS}film.film> .\n",
        f'<{NS}m.s> <{NS}type.object.name> "m. night"@en .\n',
        f'<{NS}g.s> <{NS}film.film.runtime> "9"^^<{XSD}integer> .\n',
        f'<{NS}g.s> <{NS}film.film.release> "2015-06-30"^^<{XSD}date> .\n',
        f'<{NS}g.s> <{NS}common.topic.alias> "Alias"@fr .\n',
        f'<{NS}g.s> <{NS}common.topic.description> "plain text, 3^^not-an-iri" .\n',
    ]
    stats = build_store(tmp_path / "store", [tsv], "tsv")
    assert stats["triples"] == 7 and stats["statements"] == 7


@pytest.mark.parametrize(
    ("content", "fmt", "line", "reason"),
    [
        ("m.a\tr.r\tm.b\nm.a\tr.r\n", "tsv", 2, "3 fields"),
        ("m.a\tr.r\tm.b\n\nhello\tr.r\tm.b\n", "tsv", 3, "not an m.*/g.* entity"),
        ("m.a\tbad relation\tm.b\n", "tsv", 1, "IRI"),
        ("m.a\ttype.object.type\tbad class\n", "tsv", 1, "IRI"),
        ("a|b|c\nd|e\n", "metaqa", 2, "3 fields"),
        ("a||c\n", "metaqa", 1, "empty field"),
        ("a\tb\tc\td\n", "pathquestion", 1, "3 fields"),
        (f"<{NS}a> <{NS}b> <{NS}c> .\n<{NS}a b> <{NS}b> <{NS}c> .\n", "nt", 2, "N-Triples"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path: Path, content: str, fmt: str, line: int, reason: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=reason) as info:
        build_store(tmp_path / "store", [path], fmt)
    assert info.value.path == str(path) and info.value.where == line
    assert not (tmp_path / "store").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.txt"]  # no half-built temp dir left


def test_not_utf8_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("a|b|c\nCaf\xe9|r|x\n".encode("latin-1"))
    with pytest.raises(DataFormatError, match="UTF-8"):
        list(iter_ntriples([path], "metaqa"))


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="triple format must be one of"):
        list(iter_ntriples([], "csv"))
    with pytest.raises(UserInputError, match="no such file"):
        build_store(tmp_path / "s", [tmp_path / "missing.txt"], "metaqa")
    with pytest.raises(UserInputError, match="no input files"):
        build_store(tmp_path / "s", [], "metaqa")


def test_overwrite_rules(tmp_path: Path) -> None:
    src = tmp_path / "kb.txt"
    src.write_text("Up|directed_by|Pete Docter\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    build_store(tmp_path / "empty", [src], "metaqa")  # an existing empty directory is fine
    with pytest.raises(StoreError, match="not empty"):
        build_store(tmp_path / "empty", [src], "metaqa")
    src.write_text("Up|directed_by|Pete Docter\nUp|written_by|Bob Peterson\n", encoding="utf-8")
    stats = build_store(tmp_path / "empty", [src], "metaqa", overwrite=True)
    assert stats["triples"] == 2 + 3  # two facts, three names
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    with pytest.raises(StoreError, match="does not hold an Oxigraph store"):
        build_store(tmp_path / "mine", [src], "metaqa", overwrite=True)
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "precious"
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="not a directory"):
        build_store(tmp_path / "file", [src], "metaqa")


def test_bare_name_kbs_mint_shared_ids(tmp_path: Path) -> None:
    src = tmp_path / "kb.txt"
    src.write_text("Up|directed_by|Pete Docter\nUP|directed_by|Pete Docter\n", encoding="utf-8")
    lines = list(iter_ntriples([src], "metaqa"))
    up, up2, pete = (entity_id_for_name(n, "metaqa") for n in ("Up", "UP", "Pete Docter"))
    rel = relation_id_for("directed_by", "metaqa")
    assert f"<{NS}{up}> <{NS}{rel}> <{NS}{pete}> .\n" in lines
    assert len(lines) == 5 and up != up2  # each name once; "Up" and "UP" are different entities


# -- the real KBs ---------------------------------------------------------------------------
@pytest.mark.slow
def test_real_metaqa_kb(tmp_path: Path) -> None:
    kb = data_file("metaqa", "kb.txt")
    stats = build_store(tmp_path / "mq", [kb], "metaqa")
    # 129,660 unique facts + one name per entity (42,873 distinct heads/tails)
    assert stats["statements"] == stats["triples"] == 129_660 + 42_873
    with OxigraphStore(tmp_path / "mq", cache_size=0) as store:
        room = entity_id_for_name("The Killing Room", "metaqa")
        q = (
            f"SELECT ?n WHERE {{ <{NS}{room}> <{NS}{relation_id_for('directed_by', 'metaqa')}> ?d . "
            f"?d <{NS}type.object.name> ?n }}"
        )
        assert store.execute(q).answers == ["Jonathan Liebesman"]


@pytest.mark.slow
def test_real_grailqa_minikb(tmp_path: Path) -> None:
    tsv = data_file("grailqa", "grailqa_dev_star_minikb_triples.tsv")
    stats = build_store(tmp_path / "gq", [tsv], "tsv")
    assert stats["statements"] == stats["triples"] == 74_313
    with OxigraphStore(tmp_path / "gq", cache_size=0) as store:

        def count(where: str) -> int:
            return int(store.execute(f"SELECT (COUNT(*) AS ?n) WHERE {{ {where} }}").answers[0])

        assert count(f"?s <{NS}type.object.type> ?c") == 25_037
        assert count(f"?s <{NS}type.object.name> ?n FILTER(LANG(?n) = 'en')") == 24_855
        assert count(f"?s ?p ?o FILTER(DATATYPE(?o) = <{XSD}float>)") == 731
        assert count(f"?s ?p ?o FILTER(DATATYPE(?o) = <{XSD}gYearMonth>)") == 30
        name = store.execute(f"SELECT ?n WHERE {{ <{NS}m.011mk26q> <{NS}type.object.name> ?n }}").answers[0]
        assert '"Insomma, mio signore"' in name


def test_real_pathquestion_kbs_and_nt_round_trip(tmp_path: Path) -> None:
    files = [data_file("pathquestion", "2H-kb.txt"), data_file("pathquestion", "3H-kb.txt")]
    stats = build_store(tmp_path / "pq", files, "pathquestion")
    assert stats["statements"] == 6_306 and stats["triples"] == 5_633  # the two KBs overlap
    nt = tmp_path / "pq.nt"
    assert write_ntriples(files, "pathquestion", nt) == 6_306
    again = build_store(tmp_path / "pq_nt", [nt], "nt")
    assert again["triples"] == 5_633 and again["statements"] == 6_306
    assert "ludwig ii of bavaria" in names_in(tmp_path / "pq_nt")
