"""Warm processes for a pipeline's commands: import torch and Lightning once, fork one process per command.

A ``kbqa fit`` or ``kbqa fc detect`` process spends about 7 s of a 2-core CPU importing torch, Lightning
(which imports torchmetrics, and through it transformers and scipy) before it does anything; in a
``--quick`` chain of tiny trainings that start-up is most of each step. :class:`WarmServer` starts one
``python -m kbqa_lit.runner.warm`` process with the pipeline's environment, which imports those
libraries (:data:`PRELOAD`) and then forks one child per command: the child runs ``kbqa ARGS`` exactly as
``python -m kbqa_lit ARGS`` would (its own process, ``sys.argv``, exit status, atexit handlers, stdout and
stderr), only without paying the imports again. A warm child that runs a nested ``kbqa pipeline`` forks its
commands from itself (:func:`run_forked`): it has the libraries already.

``kbqa pipeline --warm`` (the default with ``--quick``) uses it; without it every command is a fresh
``python -m kbqa_lit`` process and a step's seconds include its start-up (what the comparison's
questions/s are read from). Nothing here runs torch code before forking (the parent only imports), so
no thread pool or CUDA context is shared with a child.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
import traceback
from collections.abc import Mapping, Sequence

#: Imported by the warm process before it forks (a missing optional package is left out). W&B's launch
#: package is what ``wandb.init`` imports for every run (``kbqa eval --log``); with torch loaded, pydantic's
#: class set-up there walks every module, about 2 s per process.
PRELOAD = (
    "torch",
    "lightning.pytorch",
    "lightning.pytorch.cli",
    "transformers",
    "peft",
    "kbqa_lit.cli",
    "kbqa_lit.lightning_cli",
    "wandb",
    "wandb.sdk.launch",
)

_warm = False  # True in a warm process and in every command it forked


def available() -> bool:
    """Whether commands can run forked here (``os.fork`` exists: not on Windows)."""
    return hasattr(os, "fork")


def is_warm() -> bool:
    """Whether this process is a warm process or a command forked from one (then it forks its own)."""
    return _warm


def _exit_status(code: object) -> int:
    """The exit status of ``sys.exit(code)`` as the interpreter gives it (a message prints, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _run_child(argv: Sequence[str], env: Mapping[str, str] | None, close_fds: Sequence[int]) -> None:
    """In a forked child: run ``kbqa ARGV`` as ``python -m kbqa_lit`` would, then exit; never returns."""
    status = 1
    try:
        for fd in close_fds:
            os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if env:
            os.environ.update(env)
        sys.argv = ["kbqa_lit", *argv]
        runpy.run_module("kbqa_lit", run_name="__main__", alter_sys=True)  # `python -m kbqa_lit`: sys.exit(main())
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except KeyboardInterrupt:
        status = 128 + signal.SIGINT
    except BaseException:  # noqa: BLE001  (an uncaught error ends the command as the interpreter would)
        traceback.print_exc()
        status = 1
    finally:
        try:
            atexit._run_exitfuncs()  # what interpreter shutdown runs (W&B, logging)
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001, S110  (a closed stream has nothing to flush)
                    pass
            os._exit(status)


def run_forked(argv: Sequence[str], *, env: Mapping[str, str] | None = None, close_fds: Sequence[int] = ()) -> int:
    """Fork this process, run ``kbqa ARGV`` in the child and return its exit status (as ``subprocess`` gives it).

    Args:
        argv: The ``kbqa`` arguments (without ``kbqa``).
        env: Environment variables the child sets before it runs.
        close_fds: File descriptors the child closes first (the warm process's control pipes).
    """
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    # the imported libraries' objects go to the permanent generation: the child's collections skip them
    # (and leave their pages shared) instead of walking them at every full collection
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        _run_child(argv, env, close_fds)
    interrupted = False
    while True:
        try:
            _, wait_status = os.waitpid(pid, 0)
            break
        except KeyboardInterrupt:  # the child got the same interrupt: let it end first
            interrupted = True
    if interrupted:
        raise KeyboardInterrupt
    return os.waitstatus_to_exitcode(wait_status)


class WarmServer:
    """One warm process (``python -m kbqa_lit.runner.warm``) that runs the commands given to :meth:`run`.

    Args:
        env: The warm process's environment (every command's: variables such as ``OMP_NUM_THREADS`` are
            read when torch is imported).
        preload: The modules it imports before the first fork (default :data:`PRELOAD`).
    """

    def __init__(self, env: Mapping[str, str], preload: Sequence[str] | None = None) -> None:
        preload = PRELOAD if preload is None else preload
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "kbqa_lit.runner.warm", str(request_read), str(reply_write), ",".join(preload)],
                env=dict(env),
                pass_fds=(request_read, reply_write),
            )
        finally:
            os.close(request_read)
            os.close(reply_write)
        self._requests = os.fdopen(request_write, "w", encoding="utf-8")
        self._replies = os.fdopen(reply_read, "r", encoding="utf-8")

    def run(self, argv: Sequence[str]) -> int:
        """Run ``kbqa ARGV`` in a child of the warm process; its exit status (1 if the warm process died)."""
        try:
            self._requests.write(json.dumps(list(argv)) + "\n")
            self._requests.flush()
        except BrokenPipeError:
            return 1
        reply = self._replies.readline()
        return int(reply) if reply.strip() else 1

    def close(self) -> None:
        """End the warm process (it ends when its request pipe closes)."""
        try:
            self._requests.close()
        except BrokenPipeError:
            pass
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._replies.close()

    def __enter__(self) -> WarmServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(request_fd: int, reply_fd: int, preload: Sequence[str] = PRELOAD) -> int:
    """The warm process: import ``preload``, then fork one child per request line until the pipe closes.

    A request is a JSON list (the ``kbqa`` arguments); the reply, one line, the command's exit status.
    """
    global _warm
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is the running command's (and the runner's)
    for name in preload:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    _warm = True
    with (
        os.fdopen(request_fd, "r", encoding="utf-8") as requests,
        os.fdopen(reply_fd, "w", encoding="utf-8") as replies,
    ):
        for line in requests:
            if not line.strip():
                continue
            status = run_forked(json.loads(line), close_fds=(request_fd, reply_fd))
            replies.write(f"{status}\n")
            replies.flush()
    return 0


if __name__ == "__main__":
    from kbqa_lit.runner import warm  # the module under its own name, whose flag the commands read

    sys.exit(warm.serve(int(sys.argv[1]), int(sys.argv[2]), [m for m in sys.argv[3].split(",") if m]))
