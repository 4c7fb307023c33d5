"""``kbqa eval --log``: the scores of a prediction file become one run that ``kbqa compare`` reads back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa_lit.cli import main
from kbqa_lit.runner.timings import append_timing
from kbqa_lit.tracking.discover import find_runs
from kbqa_lit.tracking.run_log import run_metrics


def _files(tmp_path: Path) -> tuple[Path, Path]:
    gold = tmp_path / "gold.jsonl"
    rows = [
        {"qid": "q1", "question": "a?", "answers": [{"id": "m.1"}], "meta": {"generalization": "iid"}},
        {"qid": "q2", "question": "b?", "answers": [{"id": "m.2"}], "meta": {"generalization": "iid"}},
        {"qid": "q3", "question": "c?", "answers": [{"id": "m.3"}], "meta": {"generalization": "zero-shot"}},
    ]
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pred = tmp_path / "pred.jsonl"
    preds = [
        {"qid": "q1", "answers": ["m.1"], "executable": True},
        {"qid": "q2", "answers": ["m.9"], "executable": True},
        {"qid": "q3", "answers": [], "executable": False},
    ]
    pred.write_text("".join(json.dumps(r) + "\n" for r in preds))
    return gold, pred


def _log(tmp_path: Path, *extra: str) -> list[str]:
    gold, pred = _files(tmp_path)
    return ["eval", "--gold", str(gold), "--pred", str(pred), "--group-by", "generalization", *extra]


@pytest.mark.parametrize("logger", ["csv", "wandb"])
def test_scores_become_a_run_with_the_rows_identity_and_speed(tmp_path: Path, logger: str, capsys) -> None:
    timings = tmp_path / "timings.jsonl"
    append_timing(timings, "answers", {"form": "paper"}, 1.5, "kbqa test")
    append_timing(timings, "answers", {"form": "extended"}, 9.0, "kbqa test")
    args = _log(tmp_path, "--log", str(tmp_path / "runs"), "--logger", logger, "--run-name", "coq-paper")
    args += ["--run-group", "cmp", "--param", "system=coq", "--param", "form=paper", "--param", "split=test"]
    args += ["--timing", str(timings), "--timing-step", "answers[form=paper]"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    record = json.loads(Path(summary["logged"]).read_text())
    assert record["params"]["extensions"] == "none"  # the paper form of CoQ switches nothing on
    assert record["metrics"]["test/questions_per_s"] == 2.0  # 3 questions answered in 1.5 s
    (run,) = find_runs([tmp_path / "runs"])
    assert run.params["system"] == "coq" and run.params["form"] == "paper" and run.params["group"] == "cmp"
    assert run.summary["test/f1"] == pytest.approx(1 / 3)
    assert run.summary["test/iid/f1"] == pytest.approx(0.5) and run.summary["test/zero-shot/f1"] == 0.0
    assert run.summary["test/executable"] == pytest.approx(2 / 3)


def test_speed_counts_the_questions_answered(tmp_path: Path, capsys) -> None:
    timings = tmp_path / "timings.jsonl"
    append_timing(timings, "answers", {}, 2.0, "kbqa test")
    gold, pred = _files(tmp_path)
    pred.write_text("".join(pred.read_text().splitlines(keepends=True)[:2]))  # a --limit 2 run
    args = ["eval", "--gold", str(gold), "--pred", str(pred), "--log", str(tmp_path / "runs"), "--logger", "csv"]
    assert main([*args, "--run-name", "x", "--timing", str(timings), "--timing-step", "answers"]) == 0
    record = json.loads(Path(json.loads(capsys.readouterr().out)["logged"]).read_text())
    assert record["metrics"]["test/questions_per_s"] == 1.0 and record["metrics"]["test/n"] == 3.0


def test_the_extended_form_records_its_extensions(tmp_path: Path, capsys) -> None:
    args = _log(tmp_path, "--log", str(tmp_path / "runs"), "--logger", "csv", "--run-name", "fc-extended")
    assert main([*args, "--param", "system=fc", "--param", "form=extended"]) == 0
    record = json.loads(Path(json.loads(capsys.readouterr().out)["logged"]).read_text())
    assert record["params"]["extensions"] == "neighbour_skeletons,fill_composition,path_fallback,answer_type"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ((), "--log needs --run-name"),
        (("--run-name", "a/b"), "plain name"),
        (("--run-name", "x", "--timing", "t.jsonl"), "go together"),
        (("--run-name", "x", "--param", "nokey"), "KEY=VALUE"),
        (("--run-name", "x", "--timing", "missing.jsonl", "--timing-step", "a"), "no timings file"),
    ],
)
def test_bad_log_arguments_are_named(tmp_path: Path, extra: tuple[str, ...], message: str, capsys) -> None:
    assert main(_log(tmp_path, "--log", str(tmp_path / "runs"), "--logger", "csv", *extra)) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*.json"))


def test_run_metrics_flatten_the_groups() -> None:
    summary = {"n": 2, "f1": 0.5, "em": None, "by": {"hops": {"1": {"n": 1, "f1": 1.0}, "2": {"n": 1, "f1": 0.0}}}}
    assert run_metrics(summary, "hops") == {
        "test/n": 2.0,
        "test/f1": 0.5,
        "test/1/n": 1.0,
        "test/1/f1": 1.0,
        "test/2/n": 1.0,
        "test/2/f1": 0.0,
    }
    summary["by"]["kbcheck"] = {"exact": {"n": 1, "f1": 1.0}}  # a later key keeps its name: no clash with levels
    both = run_metrics(summary, ["hops", "kbcheck"])
    assert both["test/kbcheck/exact/f1"] == 1.0 and both["test/1/f1"] == 1.0 and "test/exact/f1" not in both
