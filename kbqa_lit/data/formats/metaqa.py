r"""Reader of MetaQA vanilla (Zhang et al. 2018) with gold S-expressions derived from question types.

Layout (the official release): ``<root>/{1,2,3}-hop/qa_{split}.txt`` with lines
``question with [topic entity]\tans1|ans2``, and beside each ``qa_{split}_qtype.txt`` (one
question type per line, e.g. ``actor_to_movie_to_director``) and optionally
``qa_{split}_kbcheck.txt`` (whether the KB reproduces the line's answers).

Ids follow :mod:`kbqa_lit.kb.lf.iri`, exactly as ``kbqa kb build --format metaqa`` mints them: the
topic entity and the answers get ``entity_id_for_name(name, "metaqa")``, relations
``relation_id_for(rel, "metaqa")`` (``metaqa.movie.directed_by``). In the KB every triple is
``movie --relation--> value``; a question type walks movie → attribute with ``(JOIN (R r) X)``
and attribute → movie with ``(JOIN r X)``, so ``director_to_movie_to_language`` becomes
``(JOIN (R metaqa.movie.in_language) (JOIN metaqa.movie.directed_by m.<director>))``.

Gold answers follow simple paths (no node repeats along the chain, the topic included), hence
``meta["semantics"] = "simple-path"``. Other ``meta`` keys: ``dataset``, ``split``, ``hops``,
``qtype`` (``None`` when no qtype file exists; then ``s_expression`` is ``None`` too) and
``kbcheck`` when the kbcheck file exists, normalised to ``exact`` / ``extra`` (the KB gives more
answers; ``kb_superset`` in the file) / ``missing`` (fewer; ``kb_missing``) / ``other``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path

from kbqa_lit.data.formats._common import dedupe_answers
from kbqa_lit.data.schema import Answer, KBQAExample
from kbqa_lit.errors import DataFormatError, UserInputError
from kbqa_lit.kb.lf.iri import entity_id_for_name, relation_id_for

DATASET = "metaqa"
SEMANTICS = "simple-path"

#: MetaQA KB relation of each non-movie question-type token (every triple is movie → value).
QTYPE_RELATIONS: dict[str, str] = {
    "actor": "starred_actors",
    "director": "directed_by",
    "writer": "written_by",
    "year": "release_year",
    "language": "in_language",
    "genre": "has_genre",
    "tag": "has_tags",
    "tags": "has_tags",
    "imdbvotes": "has_imdb_votes",
    "imdbrating": "has_imdb_rating",
}
#: How the kbcheck file's labels are reported in ``meta["kbcheck"]``.
KBCHECK_LABELS: dict[str, str] = {
    "exact": "exact",
    "kb_superset": "extra",
    "extra": "extra",
    "kb_missing": "missing",
    "missing": "missing",
    "other": "other",
}
_TOPIC_RE = re.compile(r"\[([^\[\]]+)\]")
_QA_FILE_RE = re.compile(r"^qa_(.+)\.txt$")
_HOP_DIR_RE = re.compile(r"^(\d+)-hop$")


@lru_cache(maxsize=1 << 17)
def _entity_id(name: str) -> str:
    return entity_id_for_name(name, DATASET)


def qtype_relation_path(qtype: str) -> list[tuple[str, bool]]:
    """Return the relation path of a MetaQA question type as ``(relation id, forward)`` steps.

    ``forward`` is ``True`` for a movie → value step (``(JOIN (R r) X)``) and ``False`` for a
    value → movie step (``(JOIN r X)``).

    Args:
        qtype: A question type such as ``movie_to_director_to_movie_to_genre``.

    Raises:
        ValueError: When a token is unknown or two consecutive tokens are not movie / value.

    """
    tokens = qtype.strip().split("_to_")
    if len(tokens) < 2:
        raise ValueError(f"question type {qtype!r} has no '_to_' step")
    steps: list[tuple[str, bool]] = []
    for src, dst in zip(tokens, tokens[1:], strict=False):
        if src == "movie" and dst in QTYPE_RELATIONS:
            steps.append((relation_id_for(QTYPE_RELATIONS[dst], DATASET), True))
        elif dst == "movie" and src in QTYPE_RELATIONS:
            steps.append((relation_id_for(QTYPE_RELATIONS[src], DATASET), False))
        else:
            raise ValueError(f"question type {qtype!r}: cannot step from {src!r} to {dst!r}")
    return steps


def qtype_to_sexpr(qtype: str, topic_id: str) -> str:
    """Return the gold S-expression of a question type applied to a topic entity id.

    Example:
        ``qtype_to_sexpr("actor_to_movie", "m.x")`` → ``(JOIN metaqa.movie.starred_actors m.x)``.

    Raises:
        ValueError: When the question type is malformed (see :func:`qtype_relation_path`).

    """
    expr = topic_id
    for rel, forward in qtype_relation_path(qtype):
        expr = f"(JOIN (R {rel}) {expr})" if forward else f"(JOIN {rel} {expr})"
    return expr


def read_metaqa(path: str | Path, split: str = "dev", hops: Sequence[int] = (1, 2, 3)) -> Iterator[KBQAExample]:
    """Stream MetaQA vanilla questions with derived gold S-expressions.

    Args:
        path: The MetaQA root (holding ``N-hop/qa_{split}.txt``) or one ``qa_*.txt`` file (its
            ``_qtype``/``_kbcheck`` files are looked up beside it; split and hops then come from
            the file and folder names, ``split``/the qtype otherwise).
        split: Which split to read from a root folder (``train``, ``dev``, ``test``).
        hops: Which hop counts to read from a root folder, in this order.

    Returns:
        An iterator of examples; qids are ``metaqa-{h}hop-{split}-{index}`` (``index`` is the
        0-based line index in ``qa_{split}.txt``; ``metaqa-{split}-{index}`` when the hop count
        is unknown: a lone file outside ``N-hop/`` without a qtype file).

    Raises:
        UserInputError: When the path or a requested ``N-hop/qa_{split}.txt`` is missing (at once).
        DataFormatError: While iterating, naming the file and line of the first bad line.

    """
    root = Path(path)
    if not root.exists():
        raise UserInputError(f"no such MetaQA file or folder: {root}")
    jobs: list[tuple[Path, int | None, str]] = []
    if root.is_dir():
        for h in hops:
            qa = root / f"{int(h)}-hop" / f"qa_{split}.txt"
            if not qa.is_file():
                raise UserInputError(f"MetaQA {h}-hop {split} questions not found: {qa}")
            jobs.append((qa, int(h), split))
    else:
        m = _QA_FILE_RE.match(root.name)
        file_split = m.group(1) if m else split
        hm = _HOP_DIR_RE.match(root.parent.name)
        jobs.append((root, int(hm.group(1)) if hm else None, file_split))
    return _iter_jobs(jobs)


def _iter_jobs(jobs: list[tuple[Path, int | None, str]]) -> Iterator[KBQAExample]:
    for qa, hop, split in jobs:
        yield from _iter_file(qa, hop, split)


def _side_file(qa: Path, suffix: str) -> Path | None:
    side = qa.with_name(f"{qa.stem}_{suffix}{qa.suffix}")
    return side if side.is_file() else None


def _side_lines(side: Path | None) -> Iterator[tuple[int, str | None]]:
    """Yield ``(lineno, stripped line)`` of a side file, then ``(lineno, None)`` forever."""
    lineno = 0
    if side is not None:
        with side.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                yield lineno, line.strip()
    while True:
        lineno += 1
        yield lineno, None


def _iter_file(qa: Path, hop: int | None, split: str) -> Iterator[KBQAExample]:
    qtype_path, kbcheck_path = _side_file(qa, "qtype"), _side_file(qa, "kbcheck")
    qtypes, kbchecks = _side_lines(qtype_path), _side_lines(kbcheck_path)
    with qa.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            q_lineno, qtype = next(qtypes)
            _, kbcheck = next(kbchecks)
            if not line.strip():
                continue
            if qtype_path is not None and qtype is None:
                raise DataFormatError(qtype_path, q_lineno, f"ends before {qa.name} (line {lineno})")
            if kbcheck_path is not None and kbcheck is None:
                raise DataFormatError(kbcheck_path, lineno, f"ends before {qa.name} (line {lineno})")
            yield _example(line, qa, lineno, hop, split, qtype, qtype_path, q_lineno, kbcheck)


def _example(
    line: str,
    qa: Path,
    lineno: int,
    hop: int | None,
    split: str,
    qtype: str | None,
    qtype_path: Path | None,
    q_lineno: int,
    kbcheck: str | None,
) -> KBQAExample:
    fields = line.rstrip("\r\n").split("\t")
    if len(fields) != 2:
        raise DataFormatError(qa, lineno, f"expected 'question<TAB>answers', got {len(fields)} field(s)")
    question, answer_text = fields[0].strip(), fields[1].strip()
    topics = _TOPIC_RE.findall(question)
    if len(topics) != 1:
        raise DataFormatError(qa, lineno, f"expected exactly one [topic entity] in the question, found {len(topics)}")
    topic = topics[0]
    names = [a for a in answer_text.split("|") if a]
    if not names:
        raise DataFormatError(qa, lineno, "no answers after the tab")
    topic_id = _entity_id(topic)
    sexpr = None
    if qtype is not None:
        try:
            steps = len(qtype_relation_path(qtype))
            sexpr = qtype_to_sexpr(qtype, topic_id)
        except ValueError as exc:
            raise DataFormatError(qtype_path, q_lineno, str(exc)) from None
        if hop is not None and steps != hop:
            raise DataFormatError(qtype_path, q_lineno, f"question type {qtype!r} has {steps} hops, not {hop}")
        hop = steps
    prefix = f"metaqa-{hop}hop-{split}" if hop is not None else f"metaqa-{split}"
    meta: dict[str, object] = {
        "dataset": DATASET,
        "semantics": SEMANTICS,
        "split": split,
        "hops": hop,
        "qtype": qtype,
    }
    if kbcheck is not None:
        meta["kbcheck"] = KBCHECK_LABELS.get(kbcheck, kbcheck)
    return KBQAExample(
        qid=f"{prefix}-{lineno - 1}",
        question=question,
        answers=dedupe_answers([Answer(id=_entity_id(n), name=n, kind="entity") for n in names]),
        topic_entities={topic_id: topic},
        s_expression=sexpr,
        meta=meta,
    )
