"""Test setup: the Triton interpreter on (no GPU in CI), fixtures' locations, the requires_cuda marker."""

import contextlib
import difflib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

# Must happen before triton is imported anywhere: kernels then run on numpy, and Inductor loads them that way.
os.environ.setdefault("TRITON_INTERPRET", "1")
# One BLAS thread per process: the suite's workers already use every core, and numpy's OpenBLAS threads (the
# interpreter's tl.dot) spinning against each other's made an interpreted bf16 matmul check 3x slower (33 s -> 11 s).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# What harvest remembers of the extractions it made (harvest/trust.py) goes to a folder of this test session's own,
# never into the HOME of whoever runs the suite; harvest's children inherit it.
os.environ.setdefault("HARVEST_STATE_DIR", tempfile.mkdtemp(prefix="harvest-state-"))

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLES = ROOT / "examples"
CPU_FIXTURES = FIXTURES / "torch-2.13.0+cpu_triton-3.9.0"
CUDA_FIXTURES = FIXTURES / "torch-2.11.0+cu130_triton-3.6.0"


def tree_env(**extra: str) -> dict[str, str]:
    """The environment for `python -m harvest`: this tree's harvest first, whatever is installed."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, COLUMNS="250", **extra)  # rich wraps at 80 columns when not on a terminal


def harvest(*args: str, cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    """`python -m harvest ARGS` in cwd (env: variables to set for it); output captured as text."""
    return run_command([sys.executable, "-m", "harvest", *args], cwd, tree_env(**env), timeout)


def run_check(module: Path) -> subprocess.CompletedProcess:
    """`TRITON_INTERPRET=1 python module.py --check`, as the module's own header says to run it on a CPU."""
    return run_command([sys.executable, str(module), "--check"], module.parent, dict(os.environ, TRITON_INTERPRET="1"), 600)


def run_command(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`python -m MODULE ...` or `python FILE ...` as its own process, forked from a process of this worker that has
    torch, triton and harvest imported (tests/fork_server.py); HARVEST_TEST_FORK=0 starts each from nothing."""
    if os.environ.get("HARVEST_TEST_FORK", "1") == "0" or env.get("TRITON_INTERPRET") != os.environ.get("TRITON_INTERPRET"):
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    request = {"cwd": str(cwd), "env": env}
    if command[1] == "-m":
        request.update(module=command[2], argv=["-m", *command[3:]])
    else:
        request.update(path=command[1], argv=command[1:])
    with FORK_SERVERS.lease() as server, tempfile.TemporaryDirectory(prefix="harvest-test-") as tmp:
        request.update(stdout=os.path.join(tmp, "stdout"), stderr=os.path.join(tmp, "stderr"))
        status = server.run(request, timeout, command)
        stdout, stderr = (as_text(Path(request[name]).read_bytes()) for name in ("stdout", "stderr"))
    return subprocess.CompletedProcess(command, status, stdout, stderr)


def as_text(data: bytes) -> str:
    """What subprocess.run(text=True) makes of a stream: UTF-8, universal newlines."""
    return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


class ForkServer:
    """One tests/fork_server.py process: runs one command at a time."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("fork_server.py"))],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=tree_env(), bufsize=0)

    def run(self, request: dict, timeout: float, command: list[str]) -> int:
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        pid = json.loads(self.read_line(None))["pid"]
        try:
            reply = self.read_line(timeout)
        except subprocess.TimeoutExpired:
            os.kill(pid, signal.SIGKILL)
            self.read_line(None)
            raise subprocess.TimeoutExpired(command, timeout) from None
        return json.loads(reply)["status"]

    def read_line(self, timeout: float | None) -> bytes:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            raise subprocess.TimeoutExpired("fork_server", timeout or 0)
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"tests/fork_server.py ended (exit {self.process.wait()}): HARVEST_TEST_FORK=0 runs without it")
        return line


class ForkServers:
    """As many servers as commands this worker runs at once (a test may run two in threads), each started once."""

    def __init__(self) -> None:
        self.idle: list[ForkServer] = []
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self):
        with self.lock:
            server = self.idle.pop() if self.idle else None
        server = server or ForkServer()
        try:
            yield server
        except BaseException:
            server.process.kill()  # its state is unknown: the next command gets a new one
            raise
        with self.lock:
            self.idle.append(server)


FORK_SERVERS = ForkServers()


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under directory, relative path -> bytes."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


RUN_LOG = "raw/target.log"  # the target's own output from a run: not deterministic, not hashed, not replayed


def assert_same_tree(a: Path, b: Path) -> None:
    """Two extractions hold the same files, byte for byte (the run's log of the target's output aside)."""
    left, right = ({path: data for path, data in tree(side).items() if path != RUN_LOG} for side in (a, b))
    assert sorted(left) == sorted(right), f"different files: only in {a}: {set(left) - set(right)}; only in {b}: {set(right) - set(left)}"
    differ = [path for path in left if left[path] != right[path]]
    if differ:
        first = differ[0]
        shown = difflib.unified_diff(
            left[first].decode(errors="replace").splitlines(), right[first].decode(errors="replace").splitlines(),
            f"{a}/{first}", f"{b}/{first}", lineterm="", n=1,
        )
        raise AssertionError(f"files differ between {a} and {b}: {differ}\n" + "\n".join(list(shown)[:40]))


def kernels(manifest: dict) -> list[dict]:
    return [kernel for graph in manifest["graphs"] for kernel in graph["kernels"]]


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (requires_cuda); run on the device machine")
    for item in items:
        if "requires_cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
