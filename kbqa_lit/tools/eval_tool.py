"""``kbqa eval``: score predictions against a gold dataset.

``kbqa eval --gold FILE --pred FILE [--format webqsp|cwq|grailqa|jsonl] [--reverse-properties FILE]
[--per-question OUT.jsonl] [--ranked]`` prints one JSON object::

    {"n", "missing", "unknown", "f1", "precision", "recall", "hit1", "hit1_any", "accuracy",
     "executable"?, "em"?}

- Gold: read with the dataset's reader (``webqsp`` official JSON, ``cwq``, ``grailqa``) or as
  common-schema JSON lines (``jsonl``, the default). When an example has ``meta["parses"]``
  (WebQSP), answer metrics come from the parse with the best F1.
- Predictions: JSON lines ``{"qid", "answers": [...], "s_expression"?: str, "executable"?: bool}``;
  an answer is a string (id or literal value) or an object with ``"id"``. Answers are compared by
  id; literal values are compared lexically, without quotes, ``@lang`` and ``^^datatype``, and
  the ``http://rdf.freebase.com/ns/`` prefix is ignored. For gold known by answer *names* only
  (``meta["answers_by_name"]``), an answer object's ``"name"`` is used.
- Every gold question counts; a question without a prediction scores 0 everywhere (``missing``).
  Predictions for qids not in the gold file are counted as ``unknown`` and not scored.
- ``hit1`` is the random-pick expectation ``|P ∩ G| / |P|`` of the unordered answer set, or with
  ``--ranked`` whether the first listed answer is gold; ``hit1_any``: any predicted answer is gold.
- ``em`` (logical-form exact match, :func:`kbqa_lit.metrics.lf_match.logical_form_em`) is
  reported when some prediction has a non-null ``s_expression`` and gold has S-expressions: it is
  averaged over the gold questions that have one (matching any parse's S-expression counts); a
  prediction without one scores 0.
- ``executable`` (share of gold questions whose prediction says ``"executable": true``) is
  reported when any prediction carries the field.
- ``--group-by KEY`` (repeatable) adds ``"by": {KEY: {value: {"n", "f1", "hit1", ...}}}``: the same
  metrics per value of the gold examples' ``meta[KEY]`` (e.g. MetaQA's ``hops``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbqa_lit.atomic import write_jsonl_atomic
from kbqa_lit.data.schema import Answer, KBQAExample, read_jsonl
from kbqa_lit.errors import DataFormatError, SExprError, UserInputError
from kbqa_lit.metrics.functional import QuestionScore, mean_scores, score_question, sum_scores
from kbqa_lit.metrics.lf_match import load_reverse_properties, logical_form_em
from kbqa_lit.tools.common import iter_json_lines, print_json
from kbqa_lit.tools.eval_log import add_log_arguments, log_eval

GOLD_FORMATS = ("jsonl", "webqsp", "cwq", "grailqa")
FREEBASE_NS = "http://rdf.freebase.com/ns/"


def register(subparsers: Any) -> None:
    """Add the ``eval`` command to the ``kbqa`` parser."""
    p = subparsers.add_parser(
        "eval",
        help="score predictions (F1, Hit@1, accuracy, LF EM) against a gold dataset",
        description=(
            "Score JSON-lines predictions {qid, answers, s_expression?, executable?} against a gold "
            "dataset; prints one JSON object of question-averaged metrics and counts."
        ),
    )
    p.add_argument("--gold", required=True, type=Path, help="gold dataset file")
    p.add_argument("--pred", required=True, type=Path, help="predictions, JSON lines")
    p.add_argument(
        "--format",
        choices=GOLD_FORMATS,
        default="jsonl",
        help="format of --gold (default: jsonl, the common schema)",
    )
    p.add_argument(
        "--reverse-properties",
        type=Path,
        default=None,
        metavar="FILE",
        help="ontology reverse_properties file (rel<TAB>reverse), so EM identifies (R r) with r's reverse",
    )
    p.add_argument("--per-question", type=Path, default=None, metavar="OUT.jsonl", help="write per-question scores")
    p.add_argument(
        "--ranked",
        action="store_true",
        help="predicted answers are ranked: hit1 = first answer is gold (default: random-pick expectation)",
    )
    p.add_argument(
        "--group-by",
        action="append",
        default=[],
        metavar="KEY",
        help="also report the metrics per value of the gold examples' meta[KEY] (e.g. hops, kbcheck); repeatable",
    )
    p.add_argument(
        "--table",
        action="store_true",
        help="print a small text table (all questions, then each group) instead of the JSON object",
    )
    add_log_arguments(p)
    p.set_defaults(func=run_eval)


TABLE_COLUMNS = ("n", "f1", "hit1", "hit1_any", "executable")


def summary_table(summary: dict[str, Any]) -> str:
    """The summary as a fixed-width text table: one row for all questions, then one per group value."""
    rows = [("all", summary)]
    for key, groups in (summary.get("by") or {}).items():
        rows += [(f"{key}={value}", metrics) for value, metrics in groups.items()]
    columns = [c for c in TABLE_COLUMNS if any(c in m for _, m in rows)]
    width = max(len(name) for name, _ in rows)

    def cell(metrics: dict[str, Any], column: str) -> str:
        value = metrics.get(column)
        if value is None:
            return "-"
        return str(value) if column == "n" else f"{float(value):.3f}"

    lines = [f"{'':<{width}}  " + "  ".join(f"{c:>10}" for c in columns)]
    lines += [f"{name:<{width}}  " + "  ".join(f"{cell(m, c):>10}" for c in columns) for name, m in rows]
    return "\n".join(lines)


def answer_key(value: str) -> str:
    """Normalise an answer for comparison: drop quotes, ``@lang``, ``^^datatype`` and the Freebase prefix.

    Args:
        value: An entity id (``m.0abc``, ``ns:m.0abc``, ``<http://rdf.freebase.com/ns/m.0abc>``) or
            a literal (``1990``, ``"1990"^^xsd:gYear``, ``"Paris"@en``).

    Returns:
        The bare id or lexical value.

    """
    text = value.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1]
    if text.startswith(FREEBASE_NS):
        return text[len(FREEBASE_NS) :]
    if text.startswith("ns:"):
        return text[3:]
    if text.startswith('"'):
        end = text.rfind('"')
        if end > 0:
            suffix = text[end + 1 :]
            if not suffix or suffix.startswith(("@", "^^")):
                return text[1:end]
    if "^^" in text:
        return text.partition("^^")[0]
    return text


@dataclass
class GoldQuestion:
    """One gold question, reduced to what scoring needs."""

    qid: str
    parses: list[frozenset[str]]
    parse_ids: list[str | None]
    sexprs: list[str] = field(default_factory=list)
    by_name: bool = False
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Prediction:
    """One parsed prediction line."""

    answers: list[str]
    s_expression: str | None
    executable: bool | None


def _answer_ids(answers: list[Any], by_name: bool) -> frozenset[str]:
    out: set[str] = set()
    for a in answers:
        ans = a if isinstance(a, Answer) else Answer.from_obj(a)
        out.add(answer_key(ans.name if by_name and ans.name else ans.id))
    return frozenset(out)


def _gold_question(ex: KBQAExample) -> GoldQuestion:
    by_name = bool(ex.meta.get("answers_by_name"))
    parses = ex.meta.get("parses") or []
    if parses:
        return GoldQuestion(
            qid=ex.qid,
            parses=[_answer_ids(p.get("answers") or [], by_name) for p in parses],
            parse_ids=[p.get("parse_id") for p in parses],
            sexprs=[p["s_expression"] for p in parses if p.get("s_expression")],
            by_name=by_name,
            meta=ex.meta,
        )
    return GoldQuestion(
        qid=ex.qid,
        parses=[_answer_ids(list(ex.answers), by_name)],
        parse_ids=[None],
        sexprs=[ex.s_expression] if ex.s_expression else [],
        by_name=by_name,
        meta=ex.meta,
    )


def _read_gold(path: Path, fmt: str) -> dict[str, GoldQuestion]:
    if not path.is_file():
        raise UserInputError(f"no such gold file: {path}")
    if fmt == "jsonl":
        examples: Iterator[KBQAExample] = read_jsonl(path)
    else:
        from kbqa_lit.data.formats import read_dataset  # lazy: readers are only needed here

        examples = read_dataset(fmt, path)
    gold: dict[str, GoldQuestion] = {}
    for ex in examples:
        if ex.qid in gold:
            raise DataFormatError(path, None, f"duplicate question id {ex.qid!r}")
        gold[ex.qid] = _gold_question(ex)
    return gold


def _pred_answer(obj: Any, by_name: bool) -> str:
    if isinstance(obj, Mapping):
        value = obj.get("name") if by_name and obj.get("name") else obj.get("id")
        obj = value
    if isinstance(obj, bool) or not isinstance(obj, str | int | float):
        raise ValueError("an answer must be a string, a number or an object with 'id'")
    return answer_key(str(obj))


def _read_preds(path: Path, gold: Mapping[str, GoldQuestion]) -> tuple[dict[str, Prediction], int, bool, bool]:
    """Return (predictions by qid, unknown count, any s_expression given, any executable given)."""
    preds: dict[str, Prediction] = {}
    unknown, any_lf, any_exec = 0, False, False
    for lineno, obj in iter_json_lines(path):
        qid = obj.get("qid")
        if isinstance(qid, bool) or not isinstance(qid, str | int):
            raise DataFormatError(path, lineno, "missing or invalid 'qid' (a string or an integer)")
        qid = str(qid)
        answers = obj.get("answers")
        if not isinstance(answers, list):
            raise DataFormatError(path, lineno, "'answers' must be a list")
        sexpr = obj.get("s_expression")
        if sexpr is not None and not isinstance(sexpr, str):
            raise DataFormatError(path, lineno, "'s_expression' must be a string or null")
        executable = obj.get("executable")
        if executable is not None and not isinstance(executable, bool):
            raise DataFormatError(path, lineno, "'executable' must be true, false or null")
        if qid in preds:
            raise DataFormatError(path, lineno, f"duplicate prediction for qid {qid!r}")
        g = gold.get(qid)
        by_name = g.by_name if g is not None else False
        try:
            keys = [_pred_answer(a, by_name) for a in answers]
        except ValueError as exc:
            raise DataFormatError(path, lineno, str(exc)) from None
        any_lf = any_lf or sexpr is not None
        any_exec = any_exec or executable is not None
        if g is None:
            unknown += 1
            continue
        preds[qid] = Prediction(keys, sexpr, executable)
    return preds, unknown, any_lf, any_exec


def _em(pred: Prediction | None, g: GoldQuestion, reverse: Mapping[str, str] | None, gold_path: Path) -> float:
    if pred is None or pred.s_expression is None:
        return 0.0
    try:
        return 1.0 if any(logical_form_em(pred.s_expression, s, reverse) for s in g.sexprs) else 0.0
    except SExprError as exc:
        raise DataFormatError(gold_path, f"question {g.qid}", f"bad gold S-expression: {exc}") from None


def evaluate(
    gold: Mapping[str, GoldQuestion],
    preds: Mapping[str, Prediction],
    *,
    ranked: bool = False,
    with_em: bool = False,
    reverse: Mapping[str, str] | None = None,
    gold_path: Path = Path("<gold>"),
) -> list[tuple[GoldQuestion, QuestionScore]]:
    """Score every gold question (missing predictions score 0).

    Args:
        gold: Gold questions by qid.
        preds: Predictions by qid (only qids of ``gold``).
        ranked: Whether predicted answers are ranked (see :func:`~kbqa_lit.metrics.hit_at_1`).
        with_em: Whether to measure logical-form EM (for questions with gold S-expressions).
        reverse: Reverse properties for EM.
        gold_path: Named in errors about bad gold S-expressions.

    Returns:
        ``(gold question, score)`` pairs in gold order.

    """
    out: list[tuple[GoldQuestion, QuestionScore]] = []
    for qid, g in gold.items():
        pred = preds.get(qid)
        em = _em(pred, g, reverse, gold_path) if with_em and g.sexprs else None
        score = score_question(
            None if pred is None else pred.answers,
            g.parses,
            ordered=ranked,
            em=em,
            executable=None if pred is None else pred.executable,
        )
        out.append((g, score))
    return out


def _per_question_row(g: GoldQuestion, s: QuestionScore, with_exec: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"qid": g.qid}
    for key in ("f1", "precision", "recall", "hit1", "hit1_any", "accuracy"):
        row[key] = getattr(s, key)
    row["missing"] = s.missing
    row["parse_id"] = None if s.parse_index is None else g.parse_ids[s.parse_index]
    if s.em is not None:
        row["em"] = s.em
    if with_exec:
        row["executable"] = bool(s.executable)
    return row


def _summary(scored: list[tuple[GoldQuestion, QuestionScore]], any_exec: bool) -> dict[str, Any]:
    """Question-averaged metrics: the same sums and divisions as AnswerMetrics (without importing torch)."""
    values = mean_scores(sum_scores(s for _, s in scored))
    out: dict[str, Any] = {key: values[key] for key in ("f1", "precision", "recall", "hit1", "hit1_any", "accuracy")}
    if any_exec:
        out["executable"] = values["executable"]
    if "em" in values:
        out["em"] = values["em"]
    return out


def group_summaries(
    scored: list[tuple[GoldQuestion, QuestionScore]], key: str, any_exec: bool = False
) -> dict[str, dict[str, Any]]:
    """Metrics per value of the gold examples' ``meta[key]`` (``"null"`` when absent), values sorted.

    Returns:
        ``{value: {"n", "f1", "precision", "recall", "hit1", "hit1_any", "accuracy", ...}}``.
    """
    groups: dict[str, list[tuple[GoldQuestion, QuestionScore]]] = {}
    for g, s in scored:
        value = g.meta.get(key)
        groups.setdefault("null" if value is None else str(value), []).append((g, s))
    return {value: {"n": len(rows), **_summary(rows, any_exec)} for value, rows in sorted(groups.items())}


def run_eval(args: argparse.Namespace) -> int:
    """Run ``kbqa eval`` and print the summary JSON.

    Returns:
        0 on success (user errors raise :class:`~kbqa_lit.errors.KBQAError`).

    """
    reverse = None
    if args.reverse_properties is not None:
        if not args.reverse_properties.is_file():
            raise UserInputError(f"no such reverse-properties file: {args.reverse_properties}")
        reverse = load_reverse_properties(args.reverse_properties)
    gold = _read_gold(args.gold, args.format)
    if not args.pred.is_file():
        raise UserInputError(f"no such prediction file: {args.pred}")
    preds, unknown, any_lf, any_exec = _read_preds(args.pred, gold)
    scored = evaluate(gold, preds, ranked=args.ranked, with_em=any_lf, reverse=reverse, gold_path=args.gold)
    summary: dict[str, Any] = {"n": len(gold), "missing": len(gold) - len(preds), "unknown": unknown}
    summary.update(_summary(scored, any_exec))
    if args.group_by:
        summary["by"] = {key: group_summaries(scored, key, any_exec) for key in args.group_by}
    if args.per_question is not None:
        write_jsonl_atomic((_per_question_row(g, s, any_exec) for g, s in scored), args.per_question)
    if args.log is not None:
        summary["logged"] = log_eval(args, summary)
    if args.table:
        print(summary_table(summary))
    else:
        print_json(summary)
    return 0
