"""``kbqa fc compose`` and the neighbour skeletons: synthetic world, a real Oxigraph store, the real MiniLM."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kbqa_lit.cli import run_tools
from kbqa_lit.data.fc.composer_examples import FC_META, Components, components_meta
from kbqa_lit.data.fc.gold_pairs import gold_pairs
from kbqa_lit.data.fc.skeletons import lf_skeleton, mask_mentions, parser_example
from kbqa_lit.data.schema import Answer, read_jsonl, write_jsonl
from kbqa_lit.data.synthetic import build_world
from kbqa_lit.errors import UserInputError
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.lf.sexpr import schema_items
from kbqa_lit.kb.store import open_store
from kbqa_lit.kb.store.loaders import build_store
from kbqa_lit.pipelines.fc.kb_check import gold_kbcheck
from kbqa_lit.pipelines.fc.skeleton_neighbours import NeighbourSkeletons
from tests.helpers.no_gold import strip_gold

CONFIG = Path(__file__).resolve().parents[3] / "configs" / "fc" / "compose.yaml"
DISTRACTORS = ["people.person.date_of_birth", "location.location.containedby", "film.film.genre"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("fc_fill")
    build_world(root / "world", seed=0, size="small")
    build_store(root / "kb", [root / "world" / "kb.nt"], "nt")
    return root


def _detected(ex, skeletons):
    """meta.fc as detection would write it when it found the gold parts (best) beside distractors."""
    rels = [r for r in schema_items(ex.s_expression).relations if r not in DISTRACTORS] + DISTRACTORS
    comp = Components(
        gold_pairs(ex.s_expression),
        dict(ex.topic_entities),
        skeletons,
        rels,
        [],
        [10.0 - i for i in range(len(rels))],
        [],
    )
    return dataclasses.replace(ex, meta={**ex.meta, FC_META: components_meta(comp)})


def _compose(root, file, out, *sets):
    argv = ["fc", "compose", "--config", str(CONFIG), "--set", f"file={file}", "--set", f"out={out}"]
    argv += ["--set", f"kb.store={root / 'kb'}"]
    for s in sets:
        argv += ["--set", s]
    return run_tools(argv)


def test_compose_answers_from_meta_fc_only_and_names_its_sources(world, tmp_path, capsys):
    rows = [
        ex for ex in read_jsonl(world / "world" / "test.jsonl") if lf_skeleton(ex.s_expression).count("<literal>") == 0
    ][:8]
    detected = [_detected(ex, [lf_skeleton(ex.s_expression), "(COUNT (JOIN (R <rel>) <entity>))"]) for ex in rows]
    write_jsonl(detected, tmp_path / "full.jsonl")
    write_jsonl([strip_gold(ex) for ex in detected], tmp_path / "stripped.jsonl")
    fill = "extensions=[fill_composition]"
    for name in ("full", "stripped"):
        assert _compose(world, tmp_path / f"{name}.jsonl", tmp_path / f"{name}.out.jsonl", fill) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["questions"] == 8 and report["source"] == {"fill": 8} and report["executable"] == 1.0
    full = [json.loads(line) for line in (tmp_path / "full.out.jsonl").read_text().splitlines()]
    stripped = [json.loads(line) for line in (tmp_path / "stripped.out.jsonl").read_text().splitlines()]
    assert full == stripped  # nothing but meta.fc and the question is read
    for ex, pred in zip(rows, full, strict=True):
        assert pred["s_expression"] == ex.s_expression and pred["skeleton"] == 0
        assert pred["form"] == "extended" and pred["extensions"] == ["fill_composition"]
        assert sorted(pred["answers"]) == sorted(a.id for a in ex.answers)

    # generate+fill: an executable composer choice is kept, a failed one falls back to filling
    generated = tmp_path / "generated.jsonl"
    gen = [{"qid": rows[0].qid, "executable": True, "chosen_sexpr": "(JOIN (R a.b.c) m.x)", "answers": ["m.y"]}]
    gen += [{"qid": ex.qid, "executable": False, "chosen_sexpr": None, "answers": []} for ex in rows[1:]]
    generated.write_text("".join(json.dumps(g) + "\n" for g in gen))
    out = tmp_path / "mixed.jsonl"
    mixed = ("composition=generate+fill", f"generated={generated}")
    assert _compose(world, tmp_path / "stripped.jsonl", out, fill, *mixed) == 0
    assert json.loads(capsys.readouterr().out)["source"] == {"generate": 1, "fill": 7}
    first = json.loads(out.read_text().splitlines()[0])
    assert first["answers"] == ["m.y"] and first["composition"] == "generate"

    # clear errors: the composer's predictions are needed and must hold every question; meta.fc must be there
    assert _compose(world, tmp_path / "stripped.jsonl", out, fill, "composition=generate+fill") == 2
    assert "needs the composer's predictions" in capsys.readouterr().err
    assert _compose(world, tmp_path / "stripped.jsonl", out) == 2  # the paper form: the composer's choice
    assert "needs the composer's predictions" in capsys.readouterr().err
    generated.write_text(json.dumps(gen[0]) + "\n")
    assert (
        _compose(world, tmp_path / "stripped.jsonl", out, fill, "composition=fill+generate", f"generated={generated}")
        == 2
    )
    assert "not in the composer's predictions" in capsys.readouterr().err
    write_jsonl([strip_gold(ex) for ex in rows[:1]], tmp_path / "undetected.jsonl")
    assert _compose(world, tmp_path / "undetected.jsonl", out, fill) == 2
    assert "kbqa fc detect" in capsys.readouterr().err
    assert _compose(world, tmp_path / "stripped.jsonl", out, fill, "fill.order=best") == 2
    assert _compose(world, tmp_path / "stripped.jsonl", out, "paths.fallback=true") == 2
    assert "paths.fallback is now the 'path_fallback' extension" in capsys.readouterr().err
    assert _compose(world, tmp_path / "stripped.jsonl", out, "extensions=[constrained_decoding]") == 2
    assert "fc does not offer the extensions ['constrained_decoding']" in capsys.readouterr().err


def test_neighbour_skeletons_vote_with_the_nearest_training_questions(world):
    train = world / "world" / "train.jsonl"
    source = NeighbourSkeletons([train], k=5)
    examples = list(read_jsonl(train))[:5]
    masked = [parser_example(ex)[0] for ex in examples]
    beams = source.beams(masked)
    assert [b[0] for b in beams] == [lf_skeleton(ex.s_expression) for ex in examples]
    assert all(len(set(b)) == len(b) for b in beams)
    # a wording no training question has, with a relation none names: still the one-hop structure
    unseen = source.beams([mask_mentions("What is the official language of Dorelgaria?", ["Dorelgaria"])])
    assert unseen[0][0] == "(JOIN (R <rel>) <entity>)"
    summed = NeighbourSkeletons([train], k=5, vote="sum").beams(masked)
    assert all(set(s) == set(m) for s, m in zip(summed, beams, strict=True))  # the same skeletons, ranked otherwise
    with pytest.raises(UserInputError):
        NeighbourSkeletons([train], k=0)
    with pytest.raises(UserInputError, match="vote"):
        NeighbourSkeletons([train], vote="mode")
    empty = world / "empty.jsonl"
    write_jsonl([dataclasses.replace(examples[0], s_expression=None)], empty)
    with pytest.raises(UserInputError, match="S-expressions"):
        NeighbourSkeletons([empty])


def test_levels_label_questions_against_the_training_split(world, tmp_path, capsys):
    w = world / "world"
    out = tmp_path / "levels.jsonl"
    argv = ["fc", "levels", "--train", str(w / "train.jsonl"), "--input", str(w / "test.jsonl"), "--out", str(out)]
    assert run_tools(argv) == 0
    report = json.loads(capsys.readouterr().out)
    rows = list(read_jsonl(out))
    assert report["questions"] == len(rows) == 150
    # the world's own labels are computed by the same rule against the same training split
    spelled = {"iid": "i.i.d.", "compositional": "compositional", "zero-shot": "zero-shot"}
    assert all(ex.meta["level"] == spelled[ex.meta["generalization"]] for ex in rows)
    assert run_tools([*argv[:2], "--train", str(tmp_path / "none.jsonl"), *argv[4:]]) == 2
    assert "no such question file" in capsys.readouterr().err
    # --store: what each gold S-expression gives on the KB (the world's answers are the KB's)
    assert run_tools([*argv, "--store", str(world / "kb")]) == 0
    assert json.loads(capsys.readouterr().out)["kbcheck"] == {"exact": 150}
    store = open_store(world / "kb")
    try:
        ex = rows[0]
        assert gold_kbcheck(dataclasses.replace(ex, answers=ex.answers[:-1]), store) == "extra"
        assert gold_kbcheck(dataclasses.replace(ex, answers=[*ex.answers, Answer("m.nowhere")]), store) == "missing"
        assert gold_kbcheck(dataclasses.replace(ex, s_expression="(JOIN (R"), store) == "none"
        assert gold_kbcheck(dataclasses.replace(ex, s_expression=None), store) == "none"
    finally:
        store.close()


def test_the_path_fallback_answers_what_no_filling_executes(world, tmp_path, capsys):
    """Components naming a relation the KB lacks give no executable filling: the KB path ranked by MiniLM answers."""
    rows = [ex for ex in read_jsonl(world / "world" / "test.jsonl") if ex.s_expression.startswith("(JOIN (R ")]
    rows = [ex for ex in rows if ex.s_expression.count("(JOIN") == 1][:6]
    assert len(rows) == 6
    detected = []
    for ex in rows:
        comp = Components(
            [], dict(ex.topic_entities), ["(JOIN (R <rel>) <entity>)"], ["test.no.relation"], [], [1.0], []
        )
        detected.append(dataclasses.replace(strip_gold(ex), meta={**ex.meta, FC_META: components_meta(comp)}))
    write_jsonl(detected, tmp_path / "detected.jsonl")
    off, on = tmp_path / "off.jsonl", tmp_path / "on.jsonl"
    assert _compose(world, tmp_path / "detected.jsonl", off, "extensions=[fill_composition]") == 0
    assert json.loads(capsys.readouterr().out)["source"] == {"none": 6}
    assert _compose(world, tmp_path / "detected.jsonl", on, "form=extended") == 0  # every extension
    assert json.loads(capsys.readouterr().out)["source"] == {"path": 6}
    preds = [json.loads(line) for line in on.read_text().splitlines()]
    right = 0
    for ex, pred in zip(rows, preds, strict=True):
        assert pred["executable"] and pred["composition"] == "path" and pred["answers"]
        assert next(iter(ex.topic_entities)) in pred["s_expression"]
        right += sorted(pred["answers"]) == sorted(a.id for a in ex.answers)
    assert right >= 4, [(ex.question, p["s_expression"]) for ex, p in zip(rows, preds, strict=True)]


def test_the_answer_type_check_takes_the_filling_of_the_asked_kind(world, tmp_path, capsys):
    """ "Which country is X located in?": the one-hop filling executes to X's city; the check takes the country."""
    rows = [ex for ex in read_jsonl(world / "world" / "test.jsonl") if ex.meta.get("template") == "university_country"]
    assert len(rows) >= 3
    one_hop = "(JOIN (R <rel>) <entity>)"
    write_jsonl(
        [strip_gold(_detected(ex, [one_hop, lf_skeleton(ex.s_expression)])) for ex in rows], tmp_path / "d.jsonl"
    )
    off, on = tmp_path / "off.jsonl", tmp_path / "on.jsonl"
    assert _compose(world, tmp_path / "d.jsonl", off, "extensions=[fill_composition]") == 0
    assert "answer_type_changes" in json.loads(capsys.readouterr().out)
    assert _compose(world, tmp_path / "d.jsonl", on, "extensions=[fill_composition,answer_type]") == 0
    assert json.loads(capsys.readouterr().out)["answer_type_changes"] == len(rows)
    for ex, before, after in zip(
        rows,
        [json.loads(line) for line in off.read_text().splitlines()],
        [json.loads(line) for line in on.read_text().splitlines()],
        strict=True,
    ):
        assert before["skeleton"] == 0 and "answer_type" not in before and before["answers"] != [ex.answers[0].id]
        assert after["answer_type"] and after["skeleton"] == 1 and after["composition"] == "fill"
        assert after["s_expression"] == ex.s_expression and after["answers"] == [a.id for a in ex.answers]


def test_the_paper_form_answers_with_the_composers_choice_through_the_answer_chain(world, tmp_path, capsys):
    """Paper: the composer's executed choice (then its other beams) only; path_fallback answers the rest."""
    rows = [ex for ex in read_jsonl(world / "world" / "test.jsonl") if ex.s_expression.startswith("(JOIN (R ")]
    rows = [ex for ex in rows if ex.s_expression.count("(JOIN") == 1][:4]
    write_jsonl([strip_gold(_detected(ex, ["(JOIN (R <rel>) <entity>)"])) for ex in rows], tmp_path / "d.jsonl")
    label = next(iter(rows[1].topic_entities.values()))
    gen = [  # 0: the composer executed the gold form; 1: only a later stored beam executes; 2, 3: nothing does
        {"qid": rows[0].qid, "executable": True, "chosen_sexpr": rows[0].s_expression, "beams": ["(JOIN x y)"]},
        {"qid": rows[1].qid, "executable": False, "beams": ["(JOIN (R no.such) y)", _labelled(rows[1], label)]},
        *({"qid": ex.qid, "executable": False, "beams": ["(JOIN (R no.such) y)"]} for ex in rows[2:]),
    ]
    generated = tmp_path / "generated.jsonl"
    generated.write_text("".join(json.dumps(g) + "\n" for g in gen))
    paper, paths = tmp_path / "paper.jsonl", tmp_path / "paths.jsonl"
    assert _compose(world, tmp_path / "d.jsonl", paper, f"generated={generated}") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["form"] == "paper" and report["composition"] == "generate"
    assert report["source"] == {"generate": 2, "none": 2}
    preds = [json.loads(line) for line in paper.read_text().splitlines()]
    assert all(p["form"] == "paper" and p["extensions"] == [] and p["fillings"] == 0 for p in preds)
    for ex, pred in zip(rows[:2], preds[:2], strict=True):
        assert sorted(pred["answers"]) == sorted(a.id for a in ex.answers)
    assert _compose(world, tmp_path / "d.jsonl", paths, f"generated={generated}", "extensions=[path_fallback]") == 0
    assert json.loads(capsys.readouterr().out)["source"] == {"generate": 2, "path": 2}
    assert {json.loads(line)["form"] for line in paths.read_text().splitlines()} == {"extended"}


def _labelled(ex, label: str) -> str:
    """The gold one-hop form normalised with its entity's label (as the composer's beams are written)."""
    return normalize_sexpr(ex.s_expression, {next(iter(ex.topic_entities)): label})


def test_rows_record_neighbour_skeletons_as_the_detect_step_wrote_them(world, tmp_path, capsys):
    rows = [ex for ex in read_jsonl(world / "world" / "test.jsonl") if ex.s_expression.startswith("(JOIN (R ")][:2]
    detected = []
    for ex, source in zip(rows, ("neighbours", "parser"), strict=True):
        d = strip_gold(_detected(ex, [lf_skeleton(ex.s_expression)]))
        detected.append(
            dataclasses.replace(d, meta={**d.meta, FC_META: {**d.meta[FC_META], "skeleton_source": source}})
        )
    write_jsonl(detected, tmp_path / "d.jsonl")
    out = tmp_path / "out.jsonl"
    assert _compose(world, tmp_path / "d.jsonl", out, "form=extended") == 0
    capsys.readouterr()
    neighbours, parser = (json.loads(line) for line in out.read_text().splitlines())
    assert neighbours["extensions"] == ["neighbour_skeletons", "fill_composition", "path_fallback", "answer_type"]
    assert parser["extensions"] == ["fill_composition", "path_fallback", "answer_type"]  # not what was asked
    assert _compose(world, tmp_path / "d.jsonl", out, "extensions=[fill_composition]") == 0
    capsys.readouterr()
    neighbours, parser = (json.loads(line) for line in out.read_text().splitlines())
    assert neighbours["extensions"] == ["neighbour_skeletons", "fill_composition"] and neighbours["form"] == "extended"
    assert parser["extensions"] == ["fill_composition"]
