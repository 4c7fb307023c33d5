from __future__ import annotations

from pathlib import Path

import pytest

from kbqa_lit.errors import UserInputError
from kbqa_lit.runner.timings import append_timing, parse_step_spec, read_timings, step_seconds


def test_step_specs_name_a_step_and_its_binding() -> None:
    assert parse_step_spec("answers") == ("answers", {})
    assert parse_step_spec("answers[form=paper]") == ("answers", {"form": "paper"})
    assert parse_step_spec(" fill[split=test, form=x] ") == ("fill", {"split": "test", "form": "x"})
    for bad in ("answers[form]", "a[b=c", "[x=y]"):
        with pytest.raises(UserInputError, match="bad step"):
            parse_step_spec(bad)


def test_the_latest_finished_run_of_each_step_counts(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    append_timing(path, "answers", {"form": "paper"}, 10.0, "kbqa test")
    append_timing(path, "answers", {"form": "extended"}, 20.0, "kbqa test")
    append_timing(path, "answers", {"form": "paper"}, 12.5, "kbqa test")  # a re-run (--force)
    append_timing(path, "detect", {"split": "test"}, 3.0, "kbqa fc detect")
    with path.open("a") as handle:
        handle.write('{"step": "torn", "seco')  # a line a killed run left half-written
    assert len(read_timings(path)) == 4
    assert step_seconds(path, ["answers[form=paper]"]) == 12.5
    assert step_seconds(path, ["detect[split=test]", "answers[form=extended]"]) == 23.0
    with pytest.raises(UserInputError, match="no finished run of step 'answers\\[form=other\\]'"):
        step_seconds(path, ["answers[form=other]"])
    with pytest.raises(UserInputError, match="no timings file"):
        step_seconds(tmp_path / "missing.jsonl", ["answers"])
