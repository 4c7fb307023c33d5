"""Grammar-constrained decoding: the processor's cost per step, and what it does to `kbqa test`.

Part 1 (always): milliseconds per decoding step of
:class:`~kbqa_lit.decoding.processor.GrammarLogitsProcessor` on a simulated beam search —
``--beams`` beams x ``--batch`` questions x ``--steps`` steps over a tokenizer of ``--vocab``
tokens trained on normalised gold S-expressions (the real data in ``../shared/data`` when
present, else a few synthetic ones). Each step every row takes a random allowed token (a walk
through what the grammar allows, reordered like beam search), for the ``grammar`` and
``schema`` rule sets, without the token-budget guard, with its full check (every allowed token:
``budget_top_k=None``, what sampling needs) and with its top-k check (``budget_top_k = 2 * beams``,
what ``kbqa test`` uses).

Part 2 (with ``--ckpt``): runs ``kbqa validate`` (``--split test`` for ``kbqa test``) once per
search — free, ``grammar``, ``schema`` (all stopping by ``generate``'s heuristic, the default), then
free and ``schema`` with ``early_stopping=true`` — on the same checkpoint and questions, and prints
each one's generation seconds (the callback's ``time_generate_s``), its ratio to free decoding with
the default stop, generation's share of the answering time, questions/s, F1 and executable rate.
``--modes`` / ``--early-stopping-modes`` choose the searches (FC-KBQA's composer: ``none,datamodule``) and
``--cli-arg`` adds arguments to the ``kbqa`` command (a config's data files); ``--repeats N`` runs
the searches N rounds in turn and reports medians and each round's ratio (two shared cores move a
single run's seconds by 20 %)::

    python benchmarks/bench_constrained.py                        # part 1 only
    python benchmarks/bench_constrained.py --ckpt outputs/quickstart/checkpoints/last.ckpt \\
        --extra-config configs/coq/quickstart_lf_only.yaml
    python benchmarks/bench_constrained.py --skip-part1 --config configs/fc/composer.yaml \\
        --ckpt outputs/fc_forms/composer/logs/run/checkpoints/last.ckpt --modes none,datamodule \\
        --early-stopping-modes "" --cli-arg=--data.init_args.data_dir=outputs/fc_forms/world ...   # FC's composer

Part 2 shells out to ``kbqa validate --config configs/quickstart.yaml --ckpt_path CKPT
--trainer.callbacks.init_args.constrained=MODE`` (the quickstart config lists
``ExecutionGuidedEval`` last, so ``--trainer.callbacks.init_args.*`` addresses it).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from kbqa_lit.backbones.seq2seq import build_tokenizer
from kbqa_lit.data.entity_slots import SLOT_TOKENS
from kbqa_lit.decoding.grammar import BaseRules, EntityRules, SchemaRules, SExprGrammar
from kbqa_lit.decoding.processor import GrammarLogitsProcessor
from kbqa_lit.decoding.tokens import TokenIndex
from kbqa_lit.kb.lf.normalize import normalize_sexpr
from kbqa_lit.kb.lf.sexpr import schema_items

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
FALLBACK = [
    ("(JOIN (R people.person.nationality) m.a)", {"m.a": "Justin Bieber"}),
    ("(COUNT (JOIN film.film.directed_by m.b))", {"m.b": "Some Director"}),
    ("(AND film.film (JOIN film.film.country m.c))", {"m.c": "Canada"}),
]


def gold() -> list[tuple[str, dict[str, str]]]:
    """Gold S-expressions with entity labels (GrailQA dev when present)."""
    path = SHARED / "grailqa" / "grailqa_dev.jsonl"
    if not path.is_file():
        return FALLBACK
    out = []
    for line in path.open(encoding="utf-8"):
        r = json.loads(line)
        nodes = r.get("graph_query", {}).get("nodes", [])
        labels = {n["id"]: n.get("friendly_name", "") for n in nodes if n.get("node_type") == "entity"}
        out.append((r["s_expression"], labels))
    return out


def simulate(processor: GrammarLogitsProcessor, rows: int, steps: int, seed: int = 0) -> float:
    """Milliseconds per step of ``processor`` on random allowed walks, rows shuffled every step."""
    rng = torch.Generator().manual_seed(seed)
    ids = torch.zeros(rows, 1, dtype=torch.long)
    width = processor.index.vocab_size
    spent = 0.0
    for _ in range(steps):
        scores = torch.rand(rows, width, generator=rng)
        t0 = time.perf_counter()
        out = processor(ids, scores)
        spent += time.perf_counter() - t0
        nxt = out.argmax(dim=-1, keepdim=True)
        nxt[nxt == processor.index.eos_id] = processor.index.tokenizer.pad_token_id  # keep going: dead rows
        beams = processor.num_beams  # beam search reorders rows within each question's block
        order = torch.cat([k * beams + torch.randperm(beams, generator=rng) for k in range(rows // beams)])
        ids = torch.cat([ids, nxt], dim=1)[order]
    return 1000.0 * spent / steps


def part1(args: argparse.Namespace) -> None:
    data = gold()
    random.Random(0).shuffle(data)
    texts = [normalize_sexpr(s, labels) for s, labels in data[:3000]]
    tok = build_tokenizer(train_texts=texts, vocab_size=args.vocab, extra_tokens=SLOT_TOKENS)
    index = TokenIndex(tok)
    relations = sorted({r for s, _ in data for r in schema_items(s).relations})
    classes = sorted({c for s, _ in data for c in schema_items(s).classes})
    schema = SchemaRules(relations, classes)
    print(f"tokenizer: {len(tok)} tokens; inventory: {len(relations)} relations, {len(classes)} classes")
    print(f"simulated beam search: {args.beams} beams x {args.batch} questions x {args.steps} steps")
    for mode in ("grammar", "schema"):
        for budget, top_k in ((None, None), (args.steps, None), (args.steps, 2 * args.beams)):
            if mode == "grammar":
                grammars = [SExprGrammar([BaseRules(SLOT_TOKENS)])]
            else:
                grammars = [
                    SExprGrammar([BaseRules(SLOT_TOKENS), schema, EntityRules(list(labels.values()), SLOT_TOKENS[:1])])
                    for _, labels in data[: args.batch]
                ]
            processor = GrammarLogitsProcessor(
                index, grammars, num_beams=args.beams, max_new_tokens=budget, budget_top_k=top_k
            )
            ms = simulate(processor, args.beams * args.batch, args.steps)
            guard = "no budget guard" if not budget else "budget guard" + (", top-k" if top_k else ", full")
            print(f"  {mode:8s} {guard:22s} {ms:8.1f} ms/step")


def searches(args: argparse.Namespace) -> list[tuple[str, str, bool | None]]:
    """Part 2's searches: ``(label, constrained mode, early_stopping or None for the default stop)``.

    ``--modes`` with the default stop (``generate``'s heuristic), then ``--early-stopping-modes`` with
    ``early_stopping=true``; the first mode is the one the ratios are to (free decoding: ``none``).
    """
    modes = [m for m in args.modes.split(",") if m]
    stopped = [m for m in args.early_stopping_modes.split(",") if m]
    return [(m, m, None) for m in modes] + [(f"{m}, early_stopping=true", m, True) for m in stopped]


def _metrics(folder: Path, stage: str) -> dict[str, float]:
    """The last logged value of each ``<stage>/...`` metric in a CSVLogger's metrics.csv."""
    out: dict[str, float] = {}
    with (folder / "metrics.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            out.update({k.split("/", 1)[1]: float(v) for k, v in row.items() if v and k.startswith(f"{stage}/")})
    return out


def _run(args: argparse.Namespace, mode: str, stop: bool | None, out: Path) -> dict[str, float] | None:
    """One ``kbqa validate``/``test`` of a search; its logged metrics (``None``: it failed, printed)."""
    cmd = ["kbqa", args.split, "--config", args.config, *sum((["--config", c] for c in args.extra_config), []),
           "--ckpt_path", args.ckpt, "--trainer.logger.init_args.version", str(out),
           "--trainer.callbacks.init_args.predictions_dir", str(out),
           f"--trainer.callbacks.init_args.num_beams={args.beams_eval}",
           f"--trainer.callbacks.init_args.constrained={mode}", *args.cli_arg]  # fmt: skip
    if stop is not None:
        cmd.append(f"--trainer.callbacks.init_args.early_stopping={str(stop).lower()}")
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        print(f"{mode}: failed ({done.returncode})\n{done.stderr[-2000:]}")
        return None
    return _metrics(out, "val" if args.split == "validate" else "test")


def part2(args: argparse.Namespace) -> None:
    """Each search on the same checkpoint and questions: generation seconds, questions/s, the ratio to free.

    With ``--repeats N`` the searches run N rounds in turn (free, then each constrained one, again);
    the table gives each search's median generation seconds, the ratio of its median to free
    decoding's, and each round's ratio (constrained over the free run just before it).
    """
    print(f"\n{args.split} split of {args.config}, checkpoint {args.ckpt}, {args.beams_eval} beams"
          + (f", {args.repeats} rounds (medians)" if args.repeats > 1 else ""))  # fmt: skip
    print(f"{'search':30s} {'generate s':>10s} {'ratio':>6s} {'share':>6s} {'q/s':>6s} {'F1':>6s} {'exec':>6s}")
    runs = searches(args)
    seen: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in runs}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(max(1, args.repeats)):
            for label, mode, stop in runs:
                name = label.replace(" ", "_").replace(",", "").replace("=", "_") + (f"_r{k}" if k else "")
                m = _run(args, mode, stop, Path(args.predictions_dir or tmp) / name)
                if m is not None:
                    seen[label].append(m)
    free = _median([m.get("time_generate_s", float("nan")) for m in seen[runs[0][0]]]) if runs else float("nan")
    for label, _, _ in runs:
        if not seen[label]:
            continue
        seconds = _median([m.get("time_generate_s", float("nan")) for m in seen[label]])
        last = seen[label][-1]
        share = _median([m["time_generate_s"] / m["time_total_s"] for m in seen[label] if m.get("time_total_s")])
        print(f"{label:30s} {seconds:10.1f} {seconds / free if free else float('nan'):6.2f} {share:6.0%} "
              f"{_median([m.get('questions_per_s', 0) for m in seen[label]]):6.1f} "
              f"{last.get('f1', 0):6.3f} {last.get('executable', 0):6.3f}")  # fmt: skip
        if args.repeats > 1 and label != runs[0][0]:
            pairs = zip(seen[label], seen[runs[0][0]], strict=False)
            key = "time_generate_s"
            per_round = [a.get(key, 0) / b[key] for a, b in pairs if b.get(key)]
            print(f"{'':30s} rounds: " + " ".join(f"{r:.2f}" for r in per_round))


def _median(values: list[float]) -> float:
    """``statistics.median`` of the values that are numbers (NaN when none is)."""
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beams", type=int, default=50)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=2000)
    parser.add_argument("--ckpt", default=None, help="a checkpoint for `kbqa test` (part 2)")
    parser.add_argument("--config", default="configs/quickstart.yaml")
    parser.add_argument("--extra-config", action="append", default=[], help="more --config files (part 2)")
    parser.add_argument("--split", choices=("validate", "test"), default="validate",
                        help="part 2's questions (validate: never tune on test)")  # fmt: skip
    parser.add_argument("--beams-eval", type=int, default=10, help="part 2's beams")
    parser.add_argument("--modes", default="none,grammar,schema", help="part 2's constrained modes, free first")
    parser.add_argument("--early-stopping-modes", default="none,schema",
                        help="part 2's modes also run with early_stopping=true ('' for none)")  # fmt: skip
    parser.add_argument("--cli-arg", action="append", default=[],
                        help="one more argument for part 2's kbqa command (repeat; --cli-arg=--data...)")  # fmt: skip
    parser.add_argument("--skip-part1", action="store_true", help="only part 2")
    parser.add_argument("--repeats", type=int, default=1,
                        help="part 2's rounds: each search N times in turn, medians reported")  # fmt: skip
    parser.add_argument("--predictions-dir", default=None,
                        help="keep part 2's prediction files in DIR/<search> (default: a temporary one)")  # fmt: skip
    args = parser.parse_args(argv)
    if not args.skip_part1:
        part1(args)
    if args.ckpt:
        part2(args)


if __name__ == "__main__":
    sys.exit(main())
