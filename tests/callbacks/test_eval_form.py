"""AnsweringForm: the callback's form settings resolved, the steps they build, what rows and loggers record."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import pytest
import yaml
from lightning.pytorch.loggers import CSVLogger

from kbqa_lit.callbacks.eval_form import AnsweringForm
from kbqa_lit.callbacks.execution_eval import ExecutionGuidedEval
from kbqa_lit.errors import UserInputError

SETTINGS = {"encoder": "all-MiniLM-L6-v2", "max_hops": 2, "override_margin": None, "type_threshold": 0.8}


def test_paper_builds_no_step_and_decodes_freely() -> None:
    form = AnsweringForm.build("coq", None, None, **SETTINGS)
    assert form.paths is None and form.types is None
    assert form.default_constraint() == "none"
    assert form.recorded("none").record() == {"form": "paper", "extensions": []}


def test_extended_coq_builds_both_steps_and_constrains_by_the_schema() -> None:
    form = AnsweringForm.build("coq", "extended", None, **SETTINGS)
    assert form.paths is not None and form.types is not None
    assert form.default_constraint() == "schema"
    assert form.recorded("schema").tag() == "extended"


def test_a_grammar_constraint_on_coq_beams_is_recorded_as_the_extension() -> None:
    form = AnsweringForm.build("coq", None, ["path_fallback"], **SETTINGS)
    assert form.recorded("none").extensions == ("path_fallback",)
    assert form.recorded("connected").extensions == ("constrained_decoding", "path_fallback")
    fc = AnsweringForm.build("fc", None, None, **SETTINGS)  # FC-KBQA's pair constraint is its paper's
    assert fc.recorded("datamodule").name == "paper"


def test_path_constraints_is_offered_to_coq_but_not_in_its_extended_preset() -> None:
    assert AnsweringForm.build("coq", "extended", None, **SETTINGS).paths.constraints is False
    form = AnsweringForm.build("coq", None, ["path_fallback", "path_constraints"], **SETTINGS)
    assert form.paths is not None and form.paths.constraints
    assert form.recorded("none").tag() == "paper+path_fallback+path_constraints"


def test_the_callback_rejects_an_extension_its_system_does_not_offer() -> None:
    with pytest.raises(UserInputError, match="coq does not offer the extensions \\['fill_composition'\\]"):
        ExecutionGuidedEval(store="unused", extensions=["fill_composition"])
    cb = ExecutionGuidedEval(store="unused", form="extended")
    assert cb.constrained == "schema"
    assert ExecutionGuidedEval(store="unused", form="extended", constrained="none").constrained == "none"


def test_the_form_is_logged_as_hyper_parameters(tmp_path: Path) -> None:
    logger = CSVLogger(tmp_path, name="logs", version="v")
    trainer = L.Trainer(logger=logger, accelerator="cpu", devices=1, enable_progress_bar=False)
    AnsweringForm.build("coq", None, ["answer_type"], **SETTINGS).log(trainer, "schema")
    logger.save()
    hparams = yaml.safe_load((tmp_path / "logs" / "v" / "hparams.yaml").read_text())
    assert hparams["answering/form"] == "extended"
    assert hparams["answering/extensions"] == "paper+constrained_decoding+answer_type"
    assert hparams["answering/system"] == "coq"


def test_fc_composer_evaluation_applies_only_the_extensions_of_the_answer_chain() -> None:
    form = AnsweringForm.build("fc", "extended", None, **SETTINGS)  # not fill_composition: kbqa fc compose's
    assert form.asked.extensions == ("path_fallback", "answer_type") and form.recorded("datamodule").name == "extended"
    with pytest.raises(UserInputError, match="fill_composition belong to fc's own commands"):
        AnsweringForm.build("fc", None, ["fill_composition"], **SETTINGS)
