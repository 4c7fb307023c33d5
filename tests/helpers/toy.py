"""Hand-made born-in questions: the smallest examples a datamodule or module test can train on."""

from __future__ import annotations

from kbqa_lit.data.schema import Answer, KBQAExample

NAMES = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth"]
CITIES = [("m.c0", "London"), ("m.c1", "Paris"), ("m.c2", "Rome")]


def born_in(
    n: int, offset: int = 0, prefix: str = "q", padded: bool = False, decomposition: bool = False
) -> list[KBQAExample]:
    """``n`` examples "Where was <person> born?" with their gold S-expression, answer and topic entity.

    Args:
        n: How many examples.
        offset: Shifts the person and city cycles (another split gets other pairs).
        prefix: The qids are ``f"{prefix}{i}"``.
        padded: Lengthen every second and third question (varied sequence lengths).
        decomposition: Add the CoQ decomposition ``[SUBQ] ... [ANS] <city>``.

    Returns:
        The examples, in order.
    """
    out = []
    for i in range(n):
        name = NAMES[(i + offset) % len(NAMES)]
        cid, city = CITIES[(i + offset) % len(CITIES)]
        out.append(
            KBQAExample(
                qid=f"{prefix}{i}",
                question=f"Where was {name} born?" + (" Tell me please." * (i % 3) if padded else ""),
                answers=[Answer(cid, city)],
                topic_entities={f"m.p{i}": name},
                s_expression=f"(JOIN (R people.person.place_of_birth) m.p{i})",
                decomposition=f"[SUBQ] where was {name} born? [ANS] {city}" if decomposition else None,
            )
        )
    return out


def born_in_kb(examples: list[KBQAExample]) -> str:
    """N-Triples of a KB that answers ``examples`` (born-in questions with one topic entity): names and births."""
    ns = "http://rdf.freebase.com/ns/"
    triples = []
    for ex in examples:
        (pid, name), answer = next(iter(ex.topic_entities.items())), ex.answers[0]
        triples += [(pid, "type.object.name", f'"{name}"@en'), (answer.id, "type.object.name", f'"{answer.name}"@en')]
        triples.append((pid, "people.person.place_of_birth", f"<{ns}{answer.id}>"))
    return "".join(f"<{ns}{s}> <{ns}{p}> {o} .\n" for s, p, o in dict.fromkeys(triples))
