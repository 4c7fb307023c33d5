"""One cross-attention copy per example (``backbones/beam_cache.py``) against ``generate``'s own cache.

Runs the same encoder-decoder beam search twice per setting, ``generate`` as it ships and inside
:func:`~kbqa_lit.backbones.beam_cache.beam_search` (the shared cross-attention cache and the grouped
attention every CoQ / FC-KBQA search now uses), on a random-weight T5 of a real shape and random
source tokens, and prints seconds, the ratio, peak device memory and how many returned beams are
equal. Both searches run exactly ``--new-tokens`` steps (``min_new_tokens`` = ``max_new_tokens``), so
the timings compare equal work::

    python benchmarks/bench_beam_cache.py --device cuda --shape t5-base --beams 10,50 --dtypes bf16,fp32
    python benchmarks/bench_beam_cache.py --shape tiny --beams 4 --batch 2 --source 16 --new-tokens 4  # CPU, seconds

Random weights make the beams' scores close together, so bf16's rounding can swap two beams;
``equal rows`` says how many of the returned sequences agree position by position (fp32: all).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import T5Config, T5ForConditionalGeneration

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kbqa_lit.atomic import write_json_atomic  # noqa: E402
from kbqa_lit.backbones.beam_cache import beam_search  # noqa: E402

SHAPES: dict[str, dict[str, int]] = {
    "t5-base": {"d_model": 768, "d_ff": 3072, "num_layers": 12, "num_heads": 12, "d_kv": 64, "vocab_size": 32128},
    "t5-small": {"d_model": 512, "d_ff": 2048, "num_layers": 6, "num_heads": 8, "d_kv": 64, "vocab_size": 32128},
    "tiny": {"d_model": 32, "d_ff": 64, "num_layers": 2, "num_heads": 2, "d_kv": 16, "vocab_size": 256},
}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def build_model(shape: str, device: torch.device, dtype: torch.dtype) -> T5ForConditionalGeneration:
    """A random-weight T5 of ``shape`` (sdpa attention, eval mode) on ``device`` in ``dtype``."""
    torch.manual_seed(0)
    config = T5Config(**SHAPES[shape], dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = T5ForConditionalGeneration(config).eval()
    return model.to(device=device, dtype=dtype)


def sources(batch: int, length: int, vocab: int, device: torch.device) -> dict[str, torch.Tensor]:
    """Random source tokens; every other example is padded to three quarters of ``length``."""
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(2, vocab, (batch, length), generator=gen)
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[1::2, (3 * length) // 4 :] = 0
    ids[mask == 0] = 0
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device)}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def search(model: Any, enc: dict[str, torch.Tensor], beams: int, steps: int, shared: bool) -> tuple[Any, float, float]:
    """One beam search: its output, seconds, and peak device memory in GiB (0 on the CPU)."""
    device = enc["input_ids"].device
    args = {"num_beams": beams, "num_return_sequences": beams, "max_new_tokens": steps, "min_new_tokens": steps,
            "do_sample": False, "early_stopping": False, "output_scores": True,
            "return_dict_in_generate": True}  # fmt: skip
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    _sync(device)
    start = time.perf_counter()
    with torch.no_grad():
        if shared:
            with beam_search(model, beams) as extra:
                out = model.generate(**enc, **args, **extra)
        else:
            out = model.generate(**enc, **args)
    _sync(device)
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else 0.0
    return out, seconds, peak


def measure(model: Any, enc: dict[str, torch.Tensor], beams: int, steps: int, repeats: int) -> dict[str, Any]:
    """Both searches ``repeats`` times, alternating after a warm-up of each: medians, ratio, agreement."""
    search(model, enc, beams, steps, False)
    search(model, enc, beams, steps, True)
    times: dict[bool, list[float]] = {False: [], True: []}
    peaks: dict[bool, float] = {}
    outs: dict[bool, Any] = {}
    for _ in range(repeats):
        for shared in (False, True):
            outs[shared], seconds, peaks[shared] = search(model, enc, beams, steps, shared)
            times[shared].append(seconds)
    plain, ours = outs[False].sequences, outs[True].sequences
    equal = int((plain == ours).all(dim=1).sum()) if plain.shape == ours.shape else 0
    score_gap = (outs[False].sequences_scores - outs[True].sequences_scores).abs().max().item()
    plain_s, shared_s = statistics.median(times[False]), statistics.median(times[True])
    return {
        "beams": beams,
        "plain_s": round(plain_s, 4),
        "shared_s": round(shared_s, 4),
        "ratio": round(shared_s / plain_s, 3),
        "plain_peak_gib": round(peaks[False], 3),
        "shared_peak_gib": round(peaks[True], 3),
        "equal_rows": equal,
        "rows": int(plain.shape[0]),
        "max_score_gap": score_gap,
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run every (dtype, beams) setting, print a table, and write ``--json`` when given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="t5-base")
    parser.add_argument("--beams", default="10,50", help="comma-separated beam counts")
    parser.add_argument("--dtypes", default="bf16,fp32", help="comma-separated: bf16, fp32")
    parser.add_argument("--batch", type=int, default=16, help="questions per search")
    parser.add_argument("--source", type=int, default=320, help="source tokens (FC's composer reads 320)")
    parser.add_argument("--new-tokens", type=int, default=48, help="decoding steps of every search")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    rows = []
    for name in args.dtypes.split(","):
        model = build_model(args.shape, device, DTYPES[name])
        enc = sources(args.batch, args.source, SHAPES[args.shape]["vocab_size"], device)
        for beams in (int(b) for b in args.beams.split(",")):
            row = {"dtype": name, "shape": args.shape, "batch": args.batch, "source": args.source,
                   "steps": args.new_tokens, **measure(model, enc, beams, args.new_tokens, args.repeats)}  # fmt: skip
            rows.append(row)
            print(
                f"{name:5} {beams:3} beams  generate {row['plain_s']:.3f} s  one copy {row['shared_s']:.3f} s  "
                f"ratio {row['ratio']:.3f}  peak {row['plain_peak_gib']:.2f} -> {row['shared_peak_gib']:.2f} GiB  "
                f"equal rows {row['equal_rows']}/{row['rows']}",
                flush=True,
            )
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if args.json:
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        env = {"torch": torch.__version__, "transformers": transformers.__version__, "device": name}
        write_json_atomic(args.json, {"env": env, "rows": rows})
    return rows


if __name__ == "__main__":
    main()
