"""The suite's process starter: imports torch, triton and harvest once, then forks one child per command the tests
would otherwise start from nothing (`python -m harvest ...`, `python module.py --check`).

The child is that command's own process: the cwd, environment, argv, stdin (empty), stdout and stderr it asks for,
`sys.path` as Python would set it, and its exit status as the return code (a signal's as minus its number). Only
the imports are shared: 1.5-2 s of CPU per command on 2 cores; the suite went from 999 s to 558 s with them shared.
This process runs no torch op and starts no thread (numpy's OpenBLAS starts one unless OPENBLAS_NUM_THREADS=1, which
tests/conftest.py sets, and handles a fork itself), so forking it is safe.

Protocol, one JSON object per line: a request {"path" | "module", "argv", "cwd", "env", "stdout", "stderr"} on
stdin; the replies {"pid": N} when the child started and {"status": N} when it ended, on stdout.
"""

import atexit
import json
import os
import runpy
import signal
import sys
import traceback


def preload() -> None:
    """What every command imports first (the kernel modules: torch and triton; harvest's commands: the rest)."""
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    import harvest.api  # noqa: F401
    import harvest.cli  # noqa: F401
    import harvest.ptx  # noqa: F401
    import harvest.report  # noqa: F401
    import harvest.twin.command  # noqa: F401


SERVER_ENV = dict(os.environ)


def python_path(env: dict) -> list[str]:
    return [os.path.abspath(entry) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]


def exit_code(exc: SystemExit) -> int:
    """What the interpreter exits with for an uncaught SystemExit."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def run_child(request: dict) -> None:
    """Become the requested command; never returns."""
    code, interrupted = 1, False
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))  # as a new interpreter would take it
        sys.argv = list(request["argv"])
        # sys.path as Python sets it: the script's folder (with -m: the cwd), PYTHONPATH's entries, the rest
        first = os.getcwd() if request.get("module") else os.path.dirname(os.path.abspath(request["path"]))
        sys.path[:] = [first, *python_path(os.environ), *(p for p in sys.path[1:] if os.path.abspath(p) not in python_path(SERVER_ENV))]
        try:
            if request.get("module"):
                runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(request["path"], run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exit_code(exc)
        except KeyboardInterrupt:  # the interpreter prints it and dies of SIGINT
            traceback.print_exc()
            interrupted = True
        except BaseException:  # noqa: BLE001  (what the interpreter does with any uncaught exception)
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        if interrupted:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(code)


def serve() -> None:
    preload()
    replies = sys.stdout.fileno()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_child(request)
        os.write(replies, (json.dumps({"pid": pid}) + "\n").encode())
        _, status = os.waitpid(pid, 0)
        os.write(replies, (json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n").encode())


if __name__ == "__main__":
    serve()
