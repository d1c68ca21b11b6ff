"""The suite's process starter: imports torch, triton and harvest once, then forks one child per command the tests
would otherwise start from nothing (`python -m harvest ...`, `python module.py --check`).

The child is that command's own process: the cwd, environment, argv, stdin (empty), stdout and stderr it asks for,
`sys.path` as Python would set it, and its exit status as the return code (a signal's as minus its number). Only
the imports are shared: 1.5-2 s of CPU per command on 2 cores; the suite went from 999 s to 558 s with them shared.
This process runs no torch op and starts no thread (numpy's OpenBLAS starts one unless OPENBLAS_NUM_THREADS=1, which
tests/conftest.py sets, and handles a fork itself), so forking it is safe.

Protocol, one JSON object per line: a request {"path" | "module", "argv", "cwd", "env", "stdout", "stderr"} on
stdin; the replies {"pid": N} when the child started and {"status": N} when it ended, on stdout.

A command's own capture child (`python -m harvest.capture.bootstrap ...`, which runs the target under torch.compile:
75 in the suite) is forked too. From the worker's capture server (`fork_server.py --captures PATH`), which has
imported Dynamo and Inductor as well (the child's next 2 of its ~4 s of CPU; a command must not have them imported,
so the commands' servers do not), when the capture's environment differs from the server's only in variables read
after the fork (READ_AFTER_FORK): a request on a Unix socket brings the writing end of the child's output pipe, the
replies are its pid and exit status. Else from the command's own process while that is as its server left it (one
thread, no compiler variable changed). Else, and for every other command a command starts, subprocess.Popen starts
it from nothing; so does HARVEST_TEST_FORK_CAPTURE=0 for every capture child. test_run_with.py and test_cli.py
together: 122 s from nothing, 81 s forked from the command, 67 s from the capture server.
"""

import atexit
import contextlib
import io
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import weakref


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
# sys.path past its first entry and PYTHONPATH's: the interpreter's own (taken once the server has started)
BASE_PATH: list[str] = []


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


def output_files(request: dict) -> tuple[int, int]:
    """The file descriptors of a request's stdout and stderr files (created or emptied)."""
    return tuple(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for name in ("stdout", "stderr"))


def run_child(request: dict, stdout: int, stderr: int) -> None:
    """Become the requested command, its output going to the file descriptors stdout and stderr; never returns."""
    code, interrupted = 1, False
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        for fd in {stdout, stderr} - {1, 2}:
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        threads = os.environ.get("OMP_NUM_THREADS", "")
        if threads != SERVER_ENV.get("OMP_NUM_THREADS", "") and threads.isdigit() and "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(threads))  # as OpenMP takes it in a new interpreter
        # the streams as a new interpreter would open them: unbuffered when PYTHONUNBUFFERED asks for it
        unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0 if unbuffered else -1, closefd=False), encoding="utf-8",
                                      write_through=unbuffered)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))  # as a new interpreter would take it
        sys.argv = list(request["argv"])
        # sys.path as Python sets it: the script's folder (with -m: the cwd), PYTHONPATH's entries, the rest
        first = os.getcwd() if request.get("module") else os.path.dirname(os.path.abspath(request["path"]))
        sys.path[:] = [first, *python_path(os.environ), *BASE_PATH]
        if os.environ.get("HARVEST_TEST_FORK_CAPTURE", "1") != "0":  # the command's capture child: forked from here too
            subprocess.Popen = ForkingPopen
        try:
            if request.get("module"):
                sys.modules.pop(request["module"], None)  # as in a new interpreter, where -m runs it before any import
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
    BASE_PATH.extend(p for p in sys.path[1:] if os.path.abspath(p) not in python_path(SERVER_ENV))
    replies = sys.stdout.fileno()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_child(request, *output_files(request))
        os.write(replies, (json.dumps({"pid": pid}) + "\n").encode())
        _, status = os.waitpid(pid, 0)
        os.write(replies, (json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n").encode())


CAPTURE_MODULE = "harvest.capture.bootstrap"
# What a capture's environment may set differently from the server's: read after the fork (by harvest, Inductor,
# Dynamo, Triton's knobs) or by run_child. Any other difference (TORCH_LOGS, a PYTHON* or OMP_* variable, ...) is
# read by the interpreter or torch at start or import, so such a child starts from nothing.
READ_AFTER_FORK = ("HARVEST_", "TRITON_INTERPRET", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "PYTHONPATH",
                   "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTEST_", "COLUMNS", "LINES", "HOME")
# ... and those Dynamo and Inductor read at import: a child forked from a process that has not imported them yet
# (the command's own) may change them as well; one forked from the capture server may not.
READ_AT_COMPILER_IMPORT = ("TORCHINDUCTOR_", "TORCHDYNAMO_")
# What harvest.capture.runner sets for every capture child, and Inductor reads at import: the capture server, which
# imports Inductor, starts with it
CAPTURE_ENV = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}


def capture_request(args, kwargs: dict) -> dict | None:
    """The request that runs subprocess.Popen(args, **kwargs) as a forked capture child; None for any other command."""
    if not (isinstance(args, list) and args[:3] == [sys.executable, "-m", CAPTURE_MODULE]):
        return None
    if set(kwargs) - {"env", "cwd", "stdout", "stderr", "text", "errors", "start_new_session"}:
        return None
    if kwargs.get("stdout") != subprocess.PIPE or kwargs.get("stderr") != subprocess.STDOUT or not kwargs.get("text"):
        return None
    env = dict(kwargs["env"] if kwargs.get("env") is not None else os.environ)
    return {"module": CAPTURE_MODULE, "argv": ["-m", *args[3:]], "cwd": str(kwargs.get("cwd") or os.getcwd()), "env": env,
            "session": bool(kwargs.get("start_new_session"))}


def changed_only(env: dict, base: dict, names: tuple[str, ...]) -> bool:
    """Whether every variable env sets differently from base is one of `names` (prefixes)."""
    return all(name.startswith(names) for name in set(env) | set(base) if env.get(name) != base.get(name))


def single_threaded(wait: float = 1.0) -> bool:
    """Whether this process has one thread (a fork copies only the caller; a thread of Python's, OpenMP's or BLAS's
    would be missing in the child). harvest imports torch in a thread while the target runs (here: at once), and
    a thread that has ended leaves the process a moment later, so wait for that."""
    deadline = time.monotonic() + wait
    while threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def forget_parent() -> None:
    """In a capture child forked from a command: drop what the command registered to run at its own exit (its
    temporary directories' finalizers would delete the capture's folder) and its signal handlers."""
    atexit._clear()
    for finalizer in list(weakref.finalize._registry):  # noqa: SLF001  (no public way to list them)
        finalizer.detach()
    weakref.finalize._registered_with_atexit = False  # noqa: SLF001  (so that the child's own register again)
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGALRM, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, signal.SIG_DFL)


class ForkedCapture:
    """The part of subprocess.Popen that harvest.capture.runner uses, for a capture child forked from this process:
    stdout (text, stderr joined to it), pid, returncode, poll, wait, send_signal, kill, terminate."""

    def __init__(self, request: dict, errors: str | None) -> None:
        self.args, self.returncode = [sys.executable, *request["argv"]], None
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            if request["session"]:
                os.setsid()
            forget_parent()
            run_child(request, write, os.dup(write))
        os.close(write)
        self.pid = pid
        self.stdout = io.TextIOWrapper(io.FileIO(read, "r"), encoding="utf-8", errors=errors)

    def poll(self) -> int | None:
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            if self.returncode is None:
                self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            return self.returncode
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, number: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, number)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class ServerRefused(Exception):
    """The capture server cannot start this capture (its environment differs where the server has read it)."""


class ServedCapture(ForkedCapture):
    """A capture child forked by the capture server (serve_captures): its output comes through a pipe whose writing
    end was passed to the server, its pid and exit status as messages on the connection."""

    def __init__(self, request: dict, errors: str | None, server: socket.socket) -> None:
        self.args, self.returncode = [sys.executable, *request["argv"]], None
        read, write = os.pipe()
        socket.send_fds(server, [json.dumps(request).encode()], [write])
        os.close(write)
        self.server = server
        reply = json.loads(server.recv(MESSAGE))
        if reply.get("refused"):
            os.close(read)
            server.close()
            raise ServerRefused
        self.pid = reply["pid"]
        self.stdout = io.TextIOWrapper(io.FileIO(read, "r"), encoding="utf-8", errors=errors)

    def poll(self, timeout: float = 0) -> int | None:
        if self.returncode is None and select.select([self.server], [], [], timeout)[0]:
            self.returncode = json.loads(self.server.recv(MESSAGE))["status"]
            self.server.close()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.poll(timeout) is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode


def capture_server(env: dict) -> socket.socket | None:
    """A connection to this worker's capture server when it can start this capture (it is up, and the capture's
    environment differs from the server's only where nothing it imported has read it); None otherwise."""
    path = env.get("HARVEST_TEST_CAPTURE_SERVER")
    if not path or not changed_only(env, {**SERVER_ENV, **CAPTURE_ENV}, READ_AFTER_FORK):
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(path)
    except OSError:  # not up yet (it imports Inductor first)
        connection.close()
        return None
    return connection


class ForkingPopen(subprocess.Popen):
    """subprocess.Popen in a forked command: a capture child starts from the capture server (ServedCapture), else
    from this process where it can (ForkedCapture); anything else starts as before."""

    def __new__(cls, args, *rest, **kwargs):
        request = None if rest else capture_request(args, kwargs)
        if request is not None:
            server = capture_server(request["env"])
            if server is not None:
                with contextlib.suppress(ServerRefused):
                    return ServedCapture(request, kwargs.get("errors"), server)
            if changed_only(request["env"], SERVER_ENV, READ_AFTER_FORK + READ_AT_COMPILER_IMPORT) and single_threaded():
                return ForkedCapture(request, kwargs.get("errors"))
        return super().__new__(cls)


MESSAGE = 1 << 16


def preload_compiler() -> None:
    """What a capture child imports next: Dynamo and Inductor (2 of its ~4 s of CPU on the CPU path)."""
    import torch._dynamo  # noqa: F401
    import torch._inductor.codecache  # noqa: F401
    import torch._inductor.codegen.triton  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401

    import harvest.capture.bootstrap  # noqa: F401


def serve_captures(path: str) -> None:
    """The capture server: forks one capture child a request, from a process that has imported what a capture
    child imports; a request on a connection to `path` brings the writing end of the child's output pipe. It ends
    when its stdin closes (its worker has ended)."""
    os.environ.update(CAPTURE_ENV)
    SERVER_ENV.update(os.environ)
    preload()
    preload_compiler()
    BASE_PATH.extend(p for p in sys.path[1:] if os.path.abspath(p) not in python_path(SERVER_ENV))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters end on their own
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path + ".binding")
    listener.listen(8)
    os.rename(path + ".binding", path)  # connectable from the moment it exists
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in ready and not sys.stdin.buffer.read1(1):
            return
        if listener in ready:
            connection, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                wait_for_capture(connection)
            connection.close()


def wait_for_capture(connection: socket.socket) -> None:
    """In a waiter the server forked: fork the capture child, say its pid, then its exit status; never returns."""
    message, fds, _, _ = socket.recv_fds(connection, MESSAGE, 1)
    request, [write] = json.loads(message), fds
    if not changed_only(request["env"], SERVER_ENV, READ_AFTER_FORK):  # (its own environment decides, not the asker's guess)
        connection.send(json.dumps({"refused": True}).encode())
        os._exit(0)
    pid = os.fork()
    if pid == 0:
        connection.close()
        if request["session"]:
            os.setsid()
        run_child(request, write, os.dup(write))
    os.close(write)
    connection.send(json.dumps({"pid": pid}).encode())
    _, status = os.waitpid(pid, 0)
    connection.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())
    os._exit(0)


if __name__ == "__main__":
    serve_captures(sys.argv[2]) if sys.argv[1:2] == ["--captures"] else serve()
