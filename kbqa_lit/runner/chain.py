"""Run a multi-stage pipeline of ``kbqa`` commands described in one YAML file.

CoQ is a chain of separately trained parts (decomposition → candidate retrieval → joint
classifier → patterns → generator → execution-guided answers); each part already has its own
``kbqa`` command and config. A pipeline file lists those commands in order, so one command runs
(or resumes) the chain::

    vars:                       # ${name} substitutions; override with --set name=value
      work: outputs/coq_pipeline
      test_file: ${work}/world/test.jsonl   # a variable may name another (resolved after --set)
    steps:
      - name: world
        run: data synth --out ${work}/world --seed 0 --size small
        outputs: [${work}/world/train.jsonl]
      - name: decompose
        foreach: {split: [train, dev, test]}        # one command per value, ${split} bound
        run: decompose --config configs/coq/decompose/synthetic_gold.yaml --source gold
             --input ${work}/world/${split}.jsonl --out ${work}/decomposed/${split}.jsonl
        outputs: [${work}/decomposed/${split}.jsonl]
      - name: generator
        run: fit --config configs/quickstart.yaml --data.init_args.data_dir ${work}/patterns
        quick: --trainer.max_steps 2 --trainer.limit_val_batches 1   # appended with --quick
        outputs: [${work}/generator/checkpoints/last.ckpt]

Semantics:

- ``run`` is a ``kbqa`` command line without the leading ``kbqa`` (a tool such as ``data``,
  ``kb``, ``decompose``, ``retrieve``, ``eval``, or a LightningCLI subcommand ``fit``, ``test``,
  ``predict``, ``validate``). Each command runs in its own Python process (``python -m
  kbqa_lit``), so a step starts from a clean state and its own logging. With ``warm`` (``kbqa
  pipeline --warm``, the default with ``--quick``) each process is forked from one that imported
  torch and Lightning once (:mod:`kbqa_lit.runner.warm`): still its own process, without the
  ~7 s of imports per step.
- A step (or one ``foreach`` item) whose ``outputs`` all exist is skipped: re-running the
  pipeline resumes after the last finished step. A command that started and did not finish (killed,
  or failed after writing some outputs) runs again, and one work folder takes one ``kbqa pipeline``
  at a time (:mod:`kbqa_lit.runner.guard`). ``--force`` re-runs everything, ``--from NAME``
  starts at a step, ``--only NAME`` runs one.
- ``quick`` arguments are appended when the pipeline runs with ``--quick`` (a smoke test: a few
  steps per training, one batch per evaluation).
- A top-level ``timings: ${work}/pipeline_timings.jsonl`` (variables allowed) makes every command that
  finishes append its seconds there (:mod:`kbqa_lit.runner.timings`): the comparison reads each
  system's answering time from it.
- A failing command stops the pipeline with :class:`~kbqa_lit.errors.PipelineError` naming the
  step and the command; the steps before it stay done.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

import yaml

from kbqa_lit.errors import KBQAError, UserInputError
from kbqa_lit.runner import warm as runner_warm
from kbqa_lit.runner.guard import RunGuard
from kbqa_lit.runner.timings import append_timing

LIGHTNING_SUBCOMMANDS = ("fit", "validate", "test", "predict")


class PipelineError(KBQAError):
    """A pipeline step's command failed."""


@dataclass
class Step:
    """One step of a pipeline file (see the module docstring)."""

    name: str
    run: str
    outputs: list[str] = field(default_factory=list)
    foreach: dict[str, list[str]] = field(default_factory=dict)
    quick: str = ""


@dataclass
class Command:
    """One concrete command of a step: ``argv`` (after ``kbqa``) and the outputs it makes."""

    step: str
    argv: list[str]
    outputs: list[Path]
    binding: dict[str, str] = field(default_factory=dict)

    def done(self, guard: RunGuard | None = None) -> bool:
        """Whether the command need not run again.

        Every output exists (a step without outputs always runs) and, given ``guard``, the command finished
        and its output files are as it wrote them.
        """
        finished = bool(self.outputs) and all(p.exists() for p in self.outputs)
        if not finished or guard is None:
            return finished
        return not guard.is_unfinished(self.outputs) and not guard.changed(self.outputs)


@dataclass
class Pipeline:
    """A parsed pipeline file: its variables and steps."""

    path: Path
    vars: dict[str, str]
    steps: list[Step]
    timings: Path | None = None

    def commands(self, *, quick: bool = False) -> list[Command]:
        """Every command in order, with variables and ``foreach`` bindings substituted.

        Raises:
            UserInputError: For an unknown ``${name}``.
        """
        out: list[Command] = []
        for step in self.steps:
            keys = list(step.foreach)
            for values in itertools.product(*(step.foreach[k] for k in keys)) if keys else [()]:
                binding = dict(zip(keys, values, strict=True))
                scope = {**self.vars, **binding}
                text = step.run + (" " + step.quick if quick and step.quick else "")
                argv = [_substitute(a, scope, self.path, step.name) for a in shlex.split(text)]
                outputs = [Path(_substitute(o, scope, self.path, step.name)) for o in step.outputs]
                out.append(Command(step.name, argv, outputs, binding))
        return out


def resolve_vars(scope: Mapping[str, str], path: Path) -> dict[str, str]:
    """Variables whose values name other variables (``test_file: ${work}/world/test.jsonl``), resolved.

    Resolution happens after ``--set``, so ``--set work=other`` moves every variable built on
    ``work`` with it; a value set on the command line may name variables too. A value without
    ``${...}`` is kept exactly as written.

    Raises:
        UserInputError: For a reference to an unknown variable or a circle of references.
    """
    done: dict[str, str] = {}

    def resolve(name: str, chain: tuple[str, ...]) -> str:
        if name in done:
            return done[name]
        if name in chain:
            circle = " -> ".join((*chain[chain.index(name) :], name))
            raise UserInputError(f"{path}: vars refer to each other in a circle: {circle}")
        value = scope[name]
        refs = _references(value)
        for ref in refs:
            if ref not in scope:
                raise UserInputError(f"{path}: vars.{name} uses ${{{ref}}}, which is not defined in vars")
        if refs:
            value = Template(value).substitute({ref: resolve(ref, (*chain, name)) for ref in refs})
        done[name] = value
        return value

    return {name: resolve(name, ()) for name in scope}


def _references(text: str) -> list[str]:
    """The variable names a ``string.Template`` text uses (``$name`` and ``${name}``)."""
    names = []
    for match in Template.pattern.finditer(text):
        name = match.group("named") or match.group("braced")
        if name and name not in names:
            names.append(name)
    return names


def _substitute(text: str, scope: Mapping[str, str], path: Path, step: str) -> str:
    try:
        return Template(text).substitute(scope)
    except KeyError as exc:
        raise UserInputError(f"{path}: step {step!r} uses ${{{exc.args[0]}}}, which is not defined in vars") from None
    except ValueError as exc:
        raise UserInputError(f"{path}: step {step!r}: bad ${{...}} in {text!r}: {exc}") from None


def _as_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | int | float):
        return [str(value)]
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return [str(v) for v in value]
    raise UserInputError(f"{where} must be a string or a list of strings")


def _parse_step(raw: Any, index: int, path: Path) -> Step:
    where = f"{path}: steps[{index}]"
    if not isinstance(raw, Mapping):
        raise UserInputError(f"{where} must be a mapping with 'name' and 'run'")
    unknown = set(raw) - {"name", "run", "outputs", "foreach", "quick"}
    if unknown:
        raise UserInputError(f"{where}: unknown keys {sorted(unknown)}")
    name, run = raw.get("name"), raw.get("run")
    if not isinstance(name, str) or not name.strip():
        raise UserInputError(f"{where}: 'name' must be a non-empty string")
    if not isinstance(run, str) or not run.strip():
        raise UserInputError(f"{where} ({name}): 'run' must be a kbqa command line")
    foreach = raw.get("foreach") or {}
    if not isinstance(foreach, Mapping):
        raise UserInputError(f"{where} ({name}): 'foreach' must map a variable to a list of values")
    quick = raw.get("quick") or ""
    if not isinstance(quick, str):
        raise UserInputError(f"{where} ({name}): 'quick' must be a string of extra arguments")
    return Step(
        name=name,
        run=" ".join(run.split()),
        outputs=_as_list(raw.get("outputs"), f"{where} ({name}) outputs"),
        foreach={str(k): _as_list(v, f"{where} ({name}) foreach.{k}") for k, v in foreach.items()},
        quick=" ".join(quick.split()),
    )


def load_pipeline(path: str | Path, overrides: Mapping[str, str] | None = None) -> Pipeline:
    """Read a pipeline file.

    Args:
        path: The YAML file.
        overrides: ``vars`` values that replace the file's (``--set name=value``).

    Raises:
        UserInputError: For a missing file or a malformed pipeline (naming the step).
    """
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"no such pipeline file: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise UserInputError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("steps"), list) or not data["steps"]:
        raise UserInputError(f"{path}: expected a mapping with a non-empty 'steps' list")
    variables = data.get("vars") or {}
    if not isinstance(variables, Mapping):
        raise UserInputError(f"{path}: 'vars' must be a mapping")
    scope = {str(k): str(v) for k, v in variables.items()}
    for key, value in (overrides or {}).items():
        if key not in scope:
            raise UserInputError(f"{path}: --set {key}=...: no such variable (known: {', '.join(sorted(scope))})")
        scope[key] = value
    scope = resolve_vars(scope, path)
    unknown = set(data) - {"vars", "steps", "timings"}
    if unknown:
        raise UserInputError(f"{path}: unknown top-level keys {sorted(unknown)} (known: vars, steps, timings)")
    timings = data.get("timings")
    if timings is not None and not isinstance(timings, str):
        raise UserInputError(f"{path}: 'timings' must be a file path (e.g. ${{work}}/pipeline_timings.jsonl)")
    steps = [_parse_step(raw, i, path) for i, raw in enumerate(data["steps"])]
    names = [s.name for s in steps]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UserInputError(f"{path}: duplicate step names {dupes}")
    timings_path = Path(_substitute(timings, scope, path, "timings")) if timings else None
    return Pipeline(path, scope, steps, timings_path)


def select_commands(
    commands: Sequence[Command], names: Sequence[str], *, start: str | None = None, only: str | None = None
) -> list[Command]:
    """The commands from step ``start`` on, or of step ``only``; all by default.

    Raises:
        UserInputError: For an unknown step name.
    """
    for name in (start, only):
        if name is not None and name not in names:
            raise UserInputError(f"no step named {name!r} (steps: {', '.join(names)})")
    if only is not None:
        return [c for c in commands if c.step == only]
    if start is not None:
        first = names.index(start)
        return [c for c in commands if names.index(c.step) >= first]
    return list(commands)


def run_commands(
    commands: Sequence[Command],
    *,
    force: bool = False,
    env: Mapping[str, str] | None = None,
    timings: Path | None = None,
    warm: bool = False,
    guard: RunGuard | None = None,
) -> list[dict[str, Any]]:
    """Run the commands in order, skipping finished ones unless ``force``.

    Args:
        commands: The commands (:meth:`Pipeline.commands`).
        force: Re-run commands whose outputs exist.
        env: Extra environment variables of the child processes.
        timings: A JSON-lines file to append each finished command's seconds to
            (:mod:`kbqa_lit.runner.timings`).
        warm: Fork each command from a process that has imported torch and Lightning once
            (:mod:`kbqa_lit.runner.warm`) instead of starting ``python -m kbqa_lit``; its seconds then
            leave out that start-up. Ignored where ``os.fork`` is missing.
        guard: The work folder's :class:`~kbqa_lit.runner.guard.RunGuard`: a command whose outputs exist
            but that started and never finished (killed, or failed late) runs again.

    Returns:
        One record per command: ``step``, ``binding``, ``status`` (``ran``/``skipped``), ``seconds``.

    Raises:
        PipelineError: When a command exits with a non-zero status.
    """
    records: list[dict[str, Any]] = []
    child_env = {**os.environ, **(env or {})}
    with contextlib.ExitStack() as stack:
        run = _command_runner(child_env, env, warm=warm, stack=stack)
        for cmd in commands:
            record: dict[str, Any] = {"step": cmd.step, "binding": cmd.binding, "status": "skipped", "seconds": 0.0}
            if not force and cmd.done(guard):
                records.append(record)
                continue
            for change in guard.changed(cmd.outputs) if guard is not None and not force else []:
                print(f"kbqa pipeline: {change}; running step {cmd.step!r} again", file=sys.stderr)
            if guard is not None:
                guard.start(cmd.outputs)
            start = time.perf_counter()
            returncode = run(cmd.argv)
            record.update(status="ran", seconds=round(time.perf_counter() - start, 2))
            _check_finished(cmd, returncode)
            if guard is not None:
                guard.finish(cmd.outputs)
            if timings is not None:
                append_timing(timings, cmd.step, cmd.binding, record["seconds"], "kbqa " + shlex.join(cmd.argv))
            records.append(record)
    return records


def _command_runner(
    child_env: Mapping[str, str], extra_env: Mapping[str, str] | None, *, warm: bool, stack: contextlib.ExitStack
) -> Callable[[Sequence[str]], int]:
    """A function that runs one command's arguments and returns its exit status (the warm server starts lazily)."""
    if not (warm and runner_warm.available()):
        return lambda argv: (
            subprocess.run([sys.executable, "-m", "kbqa_lit", *argv], env=child_env, check=False).returncode
        )
    if runner_warm.is_warm():  # a command forked from a warm process: it has the libraries, fork from it
        return lambda argv: runner_warm.run_forked(argv, env=extra_env)
    server: list[runner_warm.WarmServer] = []

    def run(argv: Sequence[str]) -> int:
        if not server:
            server.append(stack.enter_context(runner_warm.WarmServer(child_env)))
        return server[0].run(argv)

    return run


def _check_finished(cmd: Command, returncode: int) -> None:
    """Raise :class:`PipelineError` when the command failed or did not write its outputs."""
    if returncode != 0:
        raise PipelineError(
            f"step {cmd.step!r} failed (exit {returncode}): kbqa {shlex.join(cmd.argv)}; "
            "fix the cause and re-run: finished steps are skipped"
        )
    missing = [str(p) for p in cmd.outputs if not p.exists()]
    if missing:
        raise PipelineError(f"step {cmd.step!r} finished but did not write {', '.join(missing)}")


__all__ = [
    "Command",
    "LIGHTNING_SUBCOMMANDS",
    "Pipeline",
    "PipelineError",
    "Step",
    "load_pipeline",
    "run_commands",
    "select_commands",
]
