"""The word grammar of normalised S-expressions: real gold accepted word by word, malformed prefixes rejected."""

from __future__ import annotations

import random

import pytest

from kbqa_lit.decoding.grammar import (
    BaseRules,
    EntityRules,
    PhraseVocab,
    RoleVocab,
    SchemaRules,
    SExprGrammar,
    WordOptions,
    entity_bracket,
)
from kbqa_lit.kb.lf.denormalize import denormalize_sexpr, invert_labels
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.lf.sexpr import parse_sexpr, schema_items

SLOTS = [f"[E{k}]" for k in range(8)]
BASE = SExprGrammar([BaseRules(SLOTS)])


def _allowed(grammar: SExprGrammar, state, word: str) -> bool:
    opts: WordOptions = grammar.options(state)
    return word in opts.words or any(c.word.fullmatch(word) for c in opts.open)


def _walk(grammar: SExprGrammar, text: str) -> bool:
    """Every word is among the options and accepted by step; the end is complete."""
    state = grammar.start()
    for word in text.split():
        if grammar.complete(state) or not _allowed(grammar, state, word):
            return False
        state = grammar.step(state, word)
        if state is None:
            return False
    return grammar.complete(state)


def test_every_real_gold_expression_is_accepted_word_by_word(gold_sexprs) -> None:
    rng = random.Random(0)
    sample = rng.sample(gold_sexprs, min(1500, len(gold_sexprs)))
    relations: set[str] = set()
    classes: set[str] = set()
    for _, sexpr, _ in gold_sexprs:
        items = schema_items(sexpr)
        relations |= set(items.relations)
        classes |= set(items.classes)
    schema = SchemaRules(relations, classes)
    rejected = []
    for _, sexpr, labels in sample:
        text = normalize_sexpr(sexpr, labels)
        entities = EntityRules([entity_bracket(e, labels.get(e)) for e in schema_items(sexpr).entities], SLOTS[:1])
        for grammar in (BASE, SExprGrammar([BaseRules(SLOTS), schema, entities])):
            if not _walk(grammar, text):
                rejected.append(text)
    assert not rejected, rejected[:5]
    assert {s for s, _, _ in sample} >= {"grailqa", "webqsp", "cwq"}


@pytest.mark.parametrize(
    "text",
    [
        ") ( join",  # ")" first
        "( join [ a , b ] [ X ] [ Y ] )",  # join with 3 arguments
        "( join [ a , b ] )",  # join with 1 argument
        "( join [ a , b ] [ X ] ) )",  # text after the end
        "( join [ a , b ] [ X ] ) [ c , d ]",
        "( count [ a , b ] ) (",
        "( reverse [ a , b ] )",  # R where a set is expected
        "( and [ a , b ] )",  # and takes two or more
        "( join [ X ] [ a , b ] )",  # an entity where a relation is expected
        "( join [ a , b ] [ ] )",  # empty brackets
        "( frobnicate [ a , b ] )",  # unknown operator
        "( less than [ a , b ] [ X ] )",  # comparison with an entity
        "( join [ a , b , ] [ X ] )",  # dangling comma
        "( join [ m , x ] [ X ] )",  # an entity id where a relation is expected
        "( argmax [ a , b ] ( reverse [ c , d ] ) extra )",
        "( join [ a , b ] 2008-07-08 )",  # a date needs its datatype words
    ],
)
def test_malformed_texts_are_rejected(text: str) -> None:
    assert not _walk(BASE, text)


def test_eos_only_when_complete_and_nothing_after_the_end() -> None:
    state = BASE.start()
    words = "( join ( reverse [ people , person , nationality ] ) [E0] )".split()
    for i, word in enumerate(words):
        assert not BASE.complete(state), words[:i]
        state = BASE.step(state, word)
    assert BASE.complete(state)
    assert BASE.options(state).words == frozenset() and not BASE.options(state).open
    assert BASE.step(state, ")") is None and BASE.step(state, "[") is None


def test_literals_as_the_normaliser_writes_them() -> None:
    for lit in ["13", "1998 year", "2008-07-08 date", "1870-11-22 date time", "2000-05 year month", "1.0 float",
                "-6.0 float", "8e+12 float", '"Young Forrest"', '"Animation"@en', "NOW", "true boolean"]:  # fmt: skip
        assert _walk(BASE, f"( join [ a , b ] {lit} )"), lit
        assert _walk(BASE, f"( time constraint [ c , d ] [ a , b ] {lit} )"), lit
    assert not _walk(BASE, "( join [ a , b ] 1998 lightyear )")
    assert not _walk(BASE, '( join [ a , b ] "open )')


def test_schema_and_entity_rules_restrict_brackets() -> None:
    rules = [BaseRules(SLOTS), SchemaRules(["people.person.nationality"], ["people.person"]),
             EntityRules(["Justin Bieber"], ["[E0]"])]  # fmt: skip
    g = SExprGrammar(rules)
    assert _walk(g, "( join ( reverse [ people , person , nationality ] ) [ Justin Bieber ] )")
    assert _walk(g, "( and [ people , person ] ( join [ people , person , nationality ] [E0] ) )")
    assert not _walk(g, "( join [ people , person , place of birth ] [ Justin Bieber ] )")
    assert not _walk(g, "( join [ people , person , nationality ] [ Justin ] )")
    assert not _walk(g, "( join [ people , person , nationality ] [E1] )")
    assert not _walk(g, "( and [ film , film ] ( join [ people , person , nationality ] [E0] ) )")
    inside = g.step(g.step(g.step(g.step(g.start(), "("), "join"), "["), "people")
    assert g.options(inside).words == {","} and not g.options(inside).open
    assert SExprGrammar(rules[:2]).accepts("( join [ people , person , nationality ] [ Anyone At All ] )".split())


def test_a_stricter_rule_is_one_more_object() -> None:
    """FC-KBQA-style pairs: the entity of ( join r [ e ] ) must be connected to r."""

    class ConnectedPairs:
        context_free = False

        def __init__(self, pairs: dict[str, list[str]]) -> None:
            self.vocab_of = {rel: RoleVocab((PhraseVocab(ents),)) for rel, ents in pairs.items()}

        def vocab(self, role: str, context):
            op, items = context[-1] if context else ("", ())
            if role != "entity" or op != "JOIN":
                return None
            rel = next((text for _, r, text in items if r == "relation"), None)
            return self.vocab_of.get(rel, RoleVocab())

    g = SExprGrammar([BaseRules(), ConnectedPairs({"film , film , directed by": ["Alpha"], "a , b": ["Beta"]})])
    assert g.accepts("( join [ film , film , directed by ] [ Alpha ] )".split())
    assert g.accepts("( join [ a , b ] [ Beta ] )".split())
    assert not g.accepts("( join [ a , b ] [ Alpha ] )".split())


def test_context_keeps_the_atoms_of_closed_sub_calls() -> None:
    """A closed ( reverse [ r ] ) leaves r (and its direction) in its parent's items, under the sub-call's index."""
    seen: list = []

    class Recorder:
        context_free = False

        def vocab(self, role: str, context):
            if role == "entity":
                seen.append(context)
            return None

    g = SExprGrammar([BaseRules(), Recorder()])
    assert g.accepts("( and [ a , b ] ( join ( reverse [ c , d ] ) [ Alpha ] ) )".split())
    join = ("JOIN", ((0, "relation", "c , d"), (0, "reverse", "c , d")))
    assert (("AND", ((0, "class", "a , b"),)), join) in seen
    assert g.accepts("( join [ c , d ] [ Alpha ] )".split())
    assert ("JOIN", ((0, "relation", "c , d"),)) in seen[-1]  # a forward join: no "reverse" item


def test_no_relation_call_is_opened_where_no_relation_may_be_written() -> None:
    """( join / ( less than / ( reverse lead to a dead end when the rules allow no relation there."""
    g = SExprGrammar([BaseRules(), SchemaRules([], ["film.film"])])
    opened = g.step(g.start(), "(")
    assert g.options(opened).words == {"and", "count", "argmax", "argmin", "time"}
    assert g.step(opened, "join") is None and g.accepts("( count [ film , film ] )".split())
    assert g.closing(g.step(opened, "count")) == ("[", "film", ",", "film", "]", ")")
    free = SExprGrammar([BaseRules()])
    assert "join" in free.options(free.step(free.start(), "(")).words


def test_random_walks_denormalise_and_parse() -> None:
    """Whatever the grammar completes is a valid S-expression (sampled words, closing when long)."""
    rng = random.Random(1)
    samples = {"schema-head": ["people", "film"], "schema-word": ["person", "x"], "schema-tail": ["of", "nationality"],
               "label": ["Alpha", "Beta"], "value": ["13", "2008-07-08", "1.5"], "quoted": ['"a', '"b"'],
               "any": ['c"', "d"]}  # fmt: skip
    g = SExprGrammar([BaseRules(SLOTS[:1])])
    for _ in range(300):
        state, words = g.start(), []
        while not g.complete(state):
            if len(words) > 30:
                words += list(g.closing(state))
                break
            opts = g.options(state)
            choices = sorted(opts.words) + [w for c in opts.open for w in samples[c.name] if c.word.fullmatch(w)]
            nxt = None
            while nxt is None:
                word = rng.choice(choices)
                nxt = g.step(state, word)
            state, words = nxt, words + [word]
        text = " ".join(words).replace("[E0]", "[ Alpha ]")
        assert g.accepts(words), text
        parse_sexpr(denormalize_sexpr(text, invert_labels({"m.a": "Alpha", "m.b": "Beta"}), fuzzy_threshold=0.0))


def test_closing_completes_any_prefix() -> None:
    g = SExprGrammar([BaseRules(SLOTS), SchemaRules(["people.person.nationality"], []), EntityRules([], ["[E0]"])])
    state = g.start()
    for word in "( and ( join ( reverse [ people , person".split():
        state = g.step(state, word)
    closing = g.closing(state)
    assert closing is not None
    assert g.accepts("( and ( join ( reverse [ people , person".split() + list(closing))
