# The whole set-up on a fresh machine is `make demo` or `make test`; each creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO_DIR ?= outputs/demo
export HF_HUB_OFFLINE := 1
export WANDB_MODE ?= offline

.PHONY: demo demo-kb test test-fast lint format bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev,deepspeed,encoders,plots,wandb]'
	touch $(STAMP)

# Validation during fit answers as the test does (the same form and constrained search), so the checkpoint
# tested is the one with the best validation F1 under the decoder that is tested
DEMO_ANSWERING := --trainer.callbacks.init_args.form extended --trainer.callbacks.init_args.path_override_margin 0.3

## demo: the main job — train CoQ's generator (logical-form task) on the synthetic world (tiny T5, CPU), then
## evaluate it execution-guided in CoQ's extended form (the paper's beams-in-order plus our named extensions:
## schema-constrained decoding, the KB-path fallback ranked by the pretrained MiniLM, the answer-type check)
## against the embedded Oxigraph store and print test F1/Hit@1, then a table per generalisation kind and the
## per-question predictions file (its rows name the form and the extensions)
demo: $(STAMP)
	rm -rf outputs/quickstart
	$(BIN)/kbqa fit --config configs/quickstart.yaml --config configs/coq/quickstart_lf_only.yaml $(DEMO_ANSWERING)
	$(BIN)/kbqa test --config configs/quickstart.yaml --config configs/coq/quickstart_lf_only.yaml --ckpt_path outputs/quickstart/checkpoints/best.ckpt \
		--trainer.logger.init_args.version test $(DEMO_ANSWERING) --trainer.callbacks.init_args.predictions_dir outputs/quickstart/test
	$(BIN)/kbqa eval --gold outputs/quickstart/world/test.jsonl --pred outputs/quickstart/test/test_predictions_epoch0.jsonl \
		--group-by generalization --table
	@echo "per-question predictions: outputs/quickstart/test/test_predictions_epoch0.jsonl"

## demo-kb: no training — answer the synthetic test questions by executing their gold S-expressions
demo-kb: $(STAMP)
	$(BIN)/python -m kbqa_lit.demo --out $(DEMO_DIR)

## test: the whole test suite (real data from ../shared/data where present)
test: $(STAMP)
	./.ci/install-virtuoso.sh
	$(BIN)/python -m pytest -q --durations=15

## test-fast: skip tests marked slow
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check kbqa_lit tests benchmarks
	$(BIN)/ruff format --check kbqa_lit tests benchmarks

format: $(STAMP)
	$(BIN)/ruff check --fix kbqa_lit tests benchmarks
	$(BIN)/ruff format kbqa_lit tests benchmarks

## bench: the benchmark scripts (print figures; see benchmarks/README.md)
bench: $(STAMP)
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) outputs .pytest_cache .ruff_cache .hypothesis
