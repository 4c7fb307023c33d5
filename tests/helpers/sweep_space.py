"""Expand a W&B sweep's parameter space offline and build the command lines an agent would run.

W&B sweeps cannot run offline (the controller lives on the server), so the tests validate a sweep
file by doing the controller's part here: ``grid`` gives the full product of the ``values``;
``random`` and ``bayes`` give ``n`` seeded samples from the parameter distributions (bayes proposes
points from the same space, so samples stand in for its proposals). The command line then comes
from wandb's own agent helpers (``create_sweep_command_args``: ``${args}`` → ``--key=value``).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping
from typing import Any

GRID_KINDS = ("values", "value")


def _grid_values(name: str, spec: Mapping[str, Any]) -> list[Any]:
    if "value" in spec:
        return [spec["value"]]
    if "values" in spec:
        return list(spec["values"])
    raise ValueError(f"grid parameter {name!r} needs `values` or `value`, got {sorted(spec)}")


def _infer_distribution(spec: Mapping[str, Any]) -> str:
    """W&B's defaults: ``values`` → categorical, ``value`` → constant, int min/max → int_uniform."""
    if "distribution" in spec:
        return str(spec["distribution"])
    if "values" in spec:
        return "categorical"
    if "value" in spec:
        return "constant"
    if isinstance(spec.get("min"), int) and isinstance(spec.get("max"), int):
        return "int_uniform"
    return "uniform"


def _quantize(x: float, q: float) -> float:
    return round(x / q) * q


def sample_value(name: str, spec: Mapping[str, Any], rng: random.Random) -> Any:
    """Draw one value of a parameter spec (the distributions of the W&B sweep format).

    Raises:
        ValueError: For a distribution this expander does not know.
    """
    dist = _infer_distribution(spec)
    lo, hi = spec.get("min"), spec.get("max")
    q = float(spec.get("q", 1.0))
    if dist == "constant":
        return spec["value"]
    if dist == "categorical":
        values = list(spec["values"])
        weights = spec.get("probabilities")
        return rng.choices(values, weights=weights, k=1)[0]
    if dist == "int_uniform":
        return rng.randint(int(lo), int(hi))
    if dist in ("uniform", "q_uniform"):
        x = rng.uniform(float(lo), float(hi))
        return _quantize(x, q) if dist == "q_uniform" else x
    if dist in ("log_uniform_values", "q_log_uniform_values"):
        x = math.exp(rng.uniform(math.log(float(lo)), math.log(float(hi))))
        return _quantize(x, q) if dist.startswith("q_") else x
    if dist == "log_uniform":  # min/max are exponents (natural log)
        return math.exp(rng.uniform(float(lo), float(hi)))
    if dist == "inv_log_uniform_values":
        return 1.0 / math.exp(rng.uniform(math.log(1.0 / float(hi)), math.log(1.0 / float(lo))))
    if dist in ("normal", "q_normal"):
        x = rng.gauss(float(spec.get("mu", 0.0)), float(spec.get("sigma", 1.0)))
        return _quantize(x, q) if dist == "q_normal" else x
    if dist in ("log_normal", "q_log_normal"):
        x = math.exp(rng.gauss(float(spec.get("mu", 0.0)), float(spec.get("sigma", 1.0))))
        return _quantize(x, q) if dist == "q_log_normal" else x
    raise ValueError(f"parameter {name!r}: unknown distribution {dist!r}")


def expand(sweep: Mapping[str, Any], n: int = 8, seed: int = 0) -> list[dict[str, Any]]:
    """The points of a sweep: every grid point, or ``n`` seeded samples for random/bayes.

    Args:
        sweep: The parsed sweep YAML (``method``, ``parameters``).
        n: Samples drawn for ``random``/``bayes``.
        seed: Seed of those samples.

    Returns:
        One ``{parameter name: value}`` per point, in the parameters' order.
    """
    params: Mapping[str, Mapping[str, Any]] = sweep["parameters"]
    for name, spec in params.items():
        if "parameters" in spec:
            raise ValueError(f"nested parameters are not supported here: {name!r}")
    method = sweep["method"]
    if method == "grid":
        names = list(params)
        grids = [_grid_values(name, params[name]) for name in names]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*grids)]
    if method in ("random", "bayes"):
        rng = random.Random(seed)
        return [{name: sample_value(name, spec, rng) for name, spec in params.items()} for _ in range(n)]
    raise ValueError(f"unknown sweep method {method!r}")


def agent_command(sweep: Mapping[str, Any], point: Mapping[str, Any]) -> list[str]:
    """The command an agent runs for ``point``, with W&B's own macro expansion.

    ``${env}`` and ``${interpreter}`` become ``/usr/bin/env`` and ``python`` as in ``wandb agent``.
    """
    from wandb.sdk.launch.sweeps.utils import create_sweep_command, create_sweep_command_args

    sweep_vars: dict[str, Any] = create_sweep_command_args({"args": {k: {"value": v} for k, v in point.items()}})
    sweep_vars.update(env=["/usr/bin/env"], interpreter=["python"], program=[sweep.get("program", "")])
    out: list[str] = []
    for chunk in create_sweep_command(list(sweep["command"])):
        chunk = str(chunk)
        if chunk.startswith("${") and chunk.endswith("}"):
            out.extend(sweep_vars.get(chunk[2:-1]) or [])
        else:
            out.append(chunk)
    return out


def cli_args(command: list[str]) -> list[str]:
    """The arguments after ``python -m kbqa_lit`` in an agent command (what ``build_cli`` takes)."""
    idx = command.index("kbqa_lit")
    if command[idx - 1] != "-m":
        raise ValueError(f"not a `python -m kbqa_lit` command: {command}")
    return command[idx + 1 :]


def lookup(config: Any, dotted: str) -> Any:
    """The value at a dotted CLI path in a printed config.

    A list on the way (``trainer.callbacks``) resolves to its last item, as jsonargparse does for
    ``--trainer.callbacks.init_args.x``.
    """
    node = config
    for part in dotted.split("."):
        if isinstance(node, list):
            node = node[-1]
        node = node[part]
    return node
