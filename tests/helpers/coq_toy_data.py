"""Small hand-made CoQ examples (1-hop, 2-hop, COUNT; varied lengths) written as split files."""

from __future__ import annotations

import random
from pathlib import Path

from kbqa_lit.data.schema import Answer, KBQAExample, write_jsonl

FIRST = ["Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "John"]
LAST = ["Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Backus"]
CITIES = [
    ("m.c0", "London", "m.k0", "England"),
    ("m.c1", "Paris", "m.k1", "France"),
    ("m.c2", "Rome", "m.k2", "Italy"),
]
FILLER = "according to the records kept in the old city archive".split()


def make_examples(n: int, seed: int = 0, prefix: str = "q") -> list[KBQAExample]:
    rng = random.Random(seed)
    out: list[KBQAExample] = []
    for i in range(n):
        pid, name = f"m.p{seed}_{i}", f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        cid, city, kid, country = rng.choice(CITIES)
        tail = " ".join(FILLER[: rng.randint(0, len(FILLER))])
        kind = i % 3
        if kind == 0:
            question = f"Where was {name} born {tail}?"
            sexpr = f"(JOIN (R people.person.place_of_birth) {pid})"
            answers = [Answer(cid, city)]
            decomposition = f"[SUBQ] where was {name} born? [ANS] {city}"
        elif kind == 1:
            question = f"Which country was {name} born in {tail}?"
            sexpr = f"(JOIN (R location.location.containedby) (JOIN (R people.person.place_of_birth) {pid}))"
            answers = [Answer(kid, country)]
            decomposition = (
                f"[SUBQ] where was {name} born? [ANS] {city} [SUBQ] which country is {city} in? [ANS] {country}"
            )
        else:
            question = f"How many films did {name} direct {tail}?"
            sexpr = f"(COUNT (JOIN film.film.directed_by {pid}))"
            answers = [Answer(str(i % 4), str(i % 4), "literal")]
            decomposition = None
        out.append(
            KBQAExample(
                qid=f"{prefix}{i}",
                question=" ".join(question.replace(" ?", "?").split()),
                answers=answers,
                topic_entities={pid: name},
                s_expression=sexpr,
                decomposition=decomposition,
                meta={"semantics": "exclude-topic"},
            )
        )
    return out


def write_splits(data_dir: Path, n_train: int = 24, n_val: int = 7, n_test: int = 5) -> Path:
    """Write train/dev/test.jsonl of toy examples into ``data_dir`` and return it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(make_examples(n_train, seed=1, prefix="tr"), data_dir / "train.jsonl")
    write_jsonl(make_examples(n_val, seed=2, prefix="va"), data_dir / "dev.jsonl")
    write_jsonl(make_examples(n_test, seed=3, prefix="te"), data_dir / "test.jsonl")
    return data_dir
