"""A pipeline's step timings: one JSON line per finished command, read back by step name.

A pipeline file with a top-level ``timings: ${work}/pipeline_timings.jsonl`` makes
``kbqa pipeline`` append ``{"step", "binding", "seconds", "finished_at", "command"}`` for every
command that ran to the end (a skipped step writes nothing, so a resumed run keeps the earlier
figure). :func:`step_seconds` sums the latest record of each named step; the comparison uses it
for each system's answering time (``kbqa eval --timing FILE --timing-step answers[form=paper]``).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbqa_lit.errors import UserInputError, split_key_value

_SPEC = re.compile(r"^(?P<step>[^\[\]]+?)(?:\[(?P<binding>[^\]]*)\])?$")


def append_timing(path: Path, step: str, binding: Mapping[str, str], seconds: float, command: str) -> None:
    """Append one finished command's record to ``path`` (one ``write`` of one line, opened for append)."""
    record = {
        "step": step,
        "binding": dict(binding),
        "seconds": round(seconds, 2),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def parse_step_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``answers`` or ``answers[form=paper]`` (``[k=v,k2=v2]`` for several bindings) → name and binding.

    Raises:
        UserInputError: For a malformed spec.
    """
    match = _SPEC.match(spec.strip())
    if match is None:
        raise UserInputError(f"bad step {spec!r}: expected NAME or NAME[key=value,...]")
    binding: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in (match.group("binding") or "").split(","))):
        key, value = split_key_value(item, f"bad step {spec!r}: a binding")
        binding[key] = value.strip()
    return match.group("step").strip(), binding


def read_timings(path: Path) -> list[dict[str, Any]]:
    """The records of a timings file, oldest first (a torn last line from a killed run is skipped).

    Raises:
        UserInputError: The file is missing.
    """
    if not path.is_file():
        raise UserInputError(f"no timings file {path} (a pipeline with 'timings:' writes it as its steps finish)")
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "step" in record and "seconds" in record:
            records.append(record)
    return records


def step_seconds(path: Path, specs: Sequence[str]) -> float:
    """The summed seconds of the latest finished run of each step in ``specs``.

    Raises:
        UserInputError: A step (with its binding) never finished according to the file.
    """
    records = read_timings(path)
    total = 0.0
    for spec in specs:
        name, binding = parse_step_spec(spec)
        found = [r for r in records if r["step"] == name and all(r["binding"].get(k) == v for k, v in binding.items())]
        if not found:
            raise UserInputError(f"{path}: no finished run of step {spec!r}")
        total += float(found[-1]["seconds"])
    return total


__all__ = ["append_timing", "parse_step_spec", "read_timings", "step_seconds"]
