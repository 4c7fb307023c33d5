from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch import Trainer, seed_everything

from kbqa_lit.data.schema import write_jsonl
from kbqa_lit.datamodules.coq.generation import GenerationDataModule
from kbqa_lit.modules.multitask_generator import MultitaskGenerator
from tests.helpers.tiny import TINY_T5
from tests.helpers.toy import born_in

SMALL_T5 = {k: TINY_T5[k] for k in ("d_model", "d_ff", "num_heads", "d_kv")}


@pytest.fixture(scope="module")
def dm(tmp_path_factory: pytest.TempPathFactory) -> GenerationDataModule:
    d = tmp_path_factory.mktemp("gen")
    write_jsonl(born_in(8, prefix="t0-", decomposition=True), d / "train.jsonl")
    write_jsonl(born_in(5, offset=1, prefix="t1-", decomposition=True), d / "dev.jsonl")
    write_jsonl(born_in(3, offset=2, prefix="t2-", decomposition=True), d / "test.jsonl")
    data = GenerationDataModule(data_dir=str(d), vocab_size=150, batch_size=4, eval_batch_size=4, patterns="none")
    data.setup("fit")
    return data


@pytest.fixture()
def batch(dm: GenerationDataModule) -> dict[str, torch.Tensor]:
    return next(iter(dm.val_dataloader()))


def make_module(dm: GenerationDataModule, **kw) -> MultitaskGenerator:
    seed_everything(0)
    return MultitaskGenerator(model_config=SMALL_T5, tokenizer=dm.tokenizer, **kw)


def ce(module: MultitaskGenerator, batch: dict[str, torch.Tensor], prefix: str) -> torch.Tensor:
    labels = batch[f"{prefix}labels"]
    logits = module.model(
        input_ids=batch[f"{prefix}input_ids"], attention_mask=batch[f"{prefix}attention_mask"], labels=labels
    ).logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)


def test_loss_is_lf_plus_alpha_answer(dm, batch) -> None:
    m = make_module(dm, alpha=0.6).eval()
    with torch.no_grad():
        losses = m.compute_losses(batch)
        l_lf, l_ans = ce(m, batch, ""), ce(m, batch, "ans_")
    torch.testing.assert_close(losses["loss_lf"], l_lf)
    torch.testing.assert_close(losses["loss_ans"], l_ans)
    torch.testing.assert_close(losses["loss"], l_lf + 0.6 * l_ans)


def test_alpha_zero_and_no_answer_task(dm, batch) -> None:
    m = make_module(dm, alpha=0.0).eval()
    with torch.no_grad():
        losses = m.compute_losses(batch)
        assert "loss_ans" not in losses and torch.equal(losses["loss"], losses["loss_lf"])
        m.hparams.alpha = 0.6
        lf_only = {k: v for k, v in batch.items() if not k.startswith("ans_")}
        losses = m.compute_losses(lf_only)
        assert "loss_ans" not in losses and torch.equal(losses["loss"], ce(m, batch, ""))
    with pytest.raises(ValueError):
        MultitaskGenerator(model_config=SMALL_T5, tokenizer=dm.tokenizer, alpha=-1)


def test_generate_lf_and_answer(dm, batch) -> None:
    m = make_module(dm).train()
    beams = m.generate_lf(batch, num_beams=3, num_return_sequences=2, max_new_tokens=6)
    assert len(beams) == batch["input_ids"].shape[0]
    assert all(len(b) == 2 and all(isinstance(s, str) and s == " ".join(s.split()) for s in b) for b in beams)
    answers = m.generate_answer(batch, max_new_tokens=4)
    assert len(answers) == len(beams) and all(isinstance(a, str) for a in answers)
    assert m.training  # mode restored
    assert m.generate_answer({k: v for k, v in batch.items() if not k.startswith("ans_")}) == []
    with pytest.raises(ValueError):
        m.generate_lf(batch, num_beams=2, num_return_sequences=3)


def test_beam_search_does_not_stop_at_the_first_finished_beams(dm, batch, monkeypatch) -> None:
    """Free or constrained, the beam search stops by ``generate``'s heuristic, not at ``num_beams`` finished
    beams: short beams finish first, and stopping there dropped the longer, better 2- and 3-hop beams on
    MetaQA (``schema`` mode) and cost free decoding F1 0.889 -> 0.600 on the quickstart's validation split.
    A caller's ``early_stopping`` is passed on as it is."""
    from transformers import LogitsProcessorList

    m = make_module(dm).eval()
    seen: list[dict] = []
    generate = m.model.generate

    def spy(**kwargs):
        seen.append(kwargs)
        return generate(**kwargs)

    monkeypatch.setattr(m.model, "generate", spy)
    m.generate_lf(batch, num_beams=3, num_return_sequences=2, max_new_tokens=6)
    m.generate_lf(batch, num_beams=3, num_return_sequences=2, max_new_tokens=6, logits_processor=LogitsProcessorList())
    m.generate_lf(batch, num_beams=1, num_return_sequences=1, max_new_tokens=6, logits_processor=LogitsProcessorList())
    m.generate_lf(batch, num_beams=3, num_return_sequences=2, max_new_tokens=6, early_stopping=True)
    assert [k.get("early_stopping") for k in seen] == [False, False, None, True]


def test_optimizer_groups_skip_bias_and_layernorm(dm) -> None:
    m = make_module(dm, weight_decay=0.1, warmup_steps=2, learning_rate=1e-3)
    decay, no_decay = m.param_groups()
    norms = {id(p) for mod in m.model.modules() if "LayerNorm" in type(mod).__name__ for p in mod.parameters()}
    biases = {id(p) for n, p in m.model.named_parameters() if n.endswith(".bias")}
    assert {id(p) for p in no_decay["params"]} == norms | biases and norms
    assert not ({id(p) for p in decay["params"]} & (norms | biases))
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(m.model.parameters()))
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    m._trainer = SimpleNamespace(estimated_stepping_batches=10)  # what configure_optimizers reads
    conf = m.configure_optimizers()
    opt, sched = conf["optimizer"], conf["lr_scheduler"]["scheduler"]
    assert isinstance(opt, torch.optim.AdamW) and conf["lr_scheduler"]["interval"] == "step"
    lrs = []
    for _ in range(10):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == 0.0 and lrs[2] == pytest.approx(1e-3)  # linear warm-up over 2 steps
    assert lrs[2] > lrs[5] > lrs[9] > 0.0  # then linear decay


def test_fast_dev_run_fit_logs_and_checkpoint_round_trip(dm, tmp_path: Path) -> None:
    m = make_module(dm)
    trainer = Trainer(
        fast_dev_run=2,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(tmp_path),
    )
    trainer.fit(m, datamodule=dm)
    keys = set(trainer.callback_metrics)
    assert {"train/loss", "train/loss_lf", "train/loss_ans", "val/loss"} <= keys
    assert not [k for k in keys if k.startswith("val/") and k != "val/loss"]
    ckpt = tmp_path / "m.ckpt"
    trainer.save_checkpoint(str(ckpt))
    restored = MultitaskGenerator.load_from_checkpoint(str(ckpt))  # no tokenizer given
    assert "tokenizer" not in restored.hparams and restored.hparams.model_config == SMALL_T5
    assert restored.tokenizer is not None and restored.tokenizer.get_vocab() == dm.tokenizer.get_vocab()
    assert restored.model.config.vocab_size == len(dm.tokenizer)
    batch = next(iter(dm.test_dataloader()))
    m.eval()
    restored.eval()
    with torch.no_grad():
        torch.testing.assert_close(restored.compute_losses(batch)["loss"], m.compute_losses(batch)["loss"])
    out = trainer.test(restored, datamodule=dm, verbose=False)[0]
    assert set(out) == {"test/loss"}
    (pred,) = trainer.predict(restored, datamodule=dm)
    assert pred["index"] == [0, 1, 2] and len(pred["lf"]) == len(pred["answer"]) == 3


def test_lf_weight_zero_trains_the_answer_task_only(dm, batch) -> None:
    """``loss = lf_weight·L_LF + α·L_ANS``; lf_weight 0 is the "w/o LF generation" ablation."""
    m = make_module(dm, alpha=0.5, lf_weight=0.0).eval()
    with torch.no_grad():
        losses = m.compute_losses(batch)
        l_ans = ce(m, batch, "ans_")
    torch.testing.assert_close(losses["loss"], 0.5 * l_ans)
    with pytest.raises(ValueError, match="lf_weight"):
        make_module(dm, alpha=0.0, lf_weight=0.0)


def test_alpha_zero_trains_the_lf_task_only(dm, batch, monkeypatch: pytest.MonkeyPatch) -> None:
    """``alpha: 0`` is the LF generator of the "separately trained" pair: the answer inputs are not run
    and the gradient is the logical-form loss's alone."""
    m = make_module(dm, alpha=0.0).eval()  # eval: no dropout, so the two backward passes are comparable
    seen: list[torch.Tensor] = []
    forward = m.forward

    def spy(input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor):
        seen.append(input_ids)
        return forward(input_ids, attention_mask, labels)

    monkeypatch.setattr(m, "forward", spy)
    losses = m.compute_losses(batch)
    assert set(losses) == {"loss", "loss_lf"} and "ans_input_ids" in batch
    assert len(seen) == 1 and seen[0] is batch["input_ids"]
    losses["loss"].backward()
    got = {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}
    m.zero_grad()
    ce(m, batch, "").backward()
    want = {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}
    assert got.keys() == want.keys() and got
    for name in want:
        torch.testing.assert_close(got[name], want[name], msg=name)


def test_target_logprobs_score_given_outputs_by_teacher_forcing(dm) -> None:
    module = make_module(dm, alpha=0.0)
    module.train()  # scoring switches dropout off and back on
    source, targets = "where was ada born", ["(JOIN (R people.person.place_of_birth) m.01)", "(JOIN r m.01)", ""]
    scores = module.target_logprobs(source, targets)
    assert len(scores) == 3 and all(s <= 0 for s in scores) and module.target_logprobs(source, []) == []
    assert module.model.training
    module.eval()
    # each equals the summed log-softmax of its own tokens, alone in a batch (padding changes nothing)
    tok = dm.tokenizer
    for target, score in zip(targets, scores, strict=True):
        enc = tok([source], return_tensors="pt")
        labels = tok([target], return_tensors="pt")["input_ids"]
        logits = module.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels).logits
        expected = logits.log_softmax(-1).gather(-1, labels.unsqueeze(-1)).sum().item()
        assert score == pytest.approx(expected, abs=1e-4)
    # a longer target that repeats a shorter one's tokens has a lower summed probability (more factors <= 1)
    assert scores[0] < scores[2]
