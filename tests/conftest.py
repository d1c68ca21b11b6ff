"""Test setup: the Triton interpreter on (no GPU in CI), fixtures' locations, the requires_cuda marker."""

import atexit
import contextlib
import difflib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

# Must happen before triton is imported anywhere: kernels then run on numpy, and Inductor loads them that way.
os.environ.setdefault("TRITON_INTERPRET", "1")
# One BLAS thread per process: the suite's workers already use every core, and numpy's OpenBLAS threads (the
# interpreter's tl.dot) spinning against each other's made an interpreted bf16 matmul check 3x slower (33 s -> 11 s).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# torch's threads for the eager ops of a script the tests run (`python module.py --check`: its reference): the cores
# shared among the workers. Two workers on 2 cores, each check taking 2 OpenMP threads, had 4 threads spinning on 2
# cores: a reference over 16M values took 40 s in the suite and 8 s alone. Not for `python -m harvest ...`: a
# capture's Inductor writes other kernels for another thread count (a split, a kernel more or less).
SCRIPT_THREADS = max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
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


class CaptureServer:
    """This worker's `tests/fork_server.py --captures`: the capture children of the commands forked from the fork
    servers start from it, with Dynamo and Inductor imported (a command forks its own while it is not up yet)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        if self.process is None and os.environ.get("HARVEST_TEST_FORK_CAPTURE", "1") != "0":
            folder = tempfile.mkdtemp(prefix="harvest-captures-")
            path = os.path.join(folder, "server")
            self.process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("fork_server.py")), "--captures",
                                             path], stdin=subprocess.PIPE, env=tree_env())
            os.environ["HARVEST_TEST_CAPTURE_SERVER"] = path  # (commands inherit it, and pass it to their captures)
            atexit.register(self.stop, folder)

    def stop(self, folder: str) -> None:
        """At the worker's end: the server ends when its stdin closes; its socket's folder goes."""
        self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


CAPTURE_SERVER = CaptureServer()


def harvest(*args: str, cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    """`python -m harvest ARGS` in cwd (env: variables to set for it); output captured as text."""
    return run_command([sys.executable, "-m", "harvest", *args], cwd, tree_env(**env), timeout)


def run_check(module: Path) -> subprocess.CompletedProcess:
    """`TRITON_INTERPRET=1 python module.py --check`, as the module's own header says to run it on a CPU."""
    return run_command([sys.executable, str(module), "--check"], module.parent, dict(os.environ, TRITON_INTERPRET="1"), 600)


def run_command(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`python -m MODULE ...` or `python FILE ...` as its own process, forked from a process of this worker that has
    torch, triton and harvest imported (tests/fork_server.py), and a command's capture child from this worker's capture
    server; HARVEST_TEST_FORK=0 starts each from nothing (HARVEST_TEST_FORK_CAPTURE=0: only the capture children)."""
    if command[1] != "-m" and "OMP_NUM_THREADS" not in env and SCRIPT_THREADS < (os.cpu_count() or 1):
        env = dict(env, OMP_NUM_THREADS=str(SCRIPT_THREADS))
    if os.environ.get("HARVEST_TEST_FORK", "1") == "0" or env.get("TRITON_INTERPRET") != os.environ.get("TRITON_INTERPRET"):
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    CAPTURE_SERVER.start()
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


def extraction_of(target: Path, factory: pytest.TempPathFactory) -> Path:
    """`harvest extract TARGET -q` on the CPU path, made once per test session for all its workers (several test
    files start from the same example: scans, cooperative, small_model), and a copy of it for the caller to change
    as it likes (`harvest twin` writes into it), noted as made on this machine (harvest.trust: the workers share the
    session's HARVEST_STATE_DIR, which the xdist controller made). The first worker to ask extracts while the others wait on a lock file."""
    import fcntl

    from harvest.trust import remember_made_here

    base = factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-extractions"
    shared.mkdir(exist_ok=True)
    made = shared / target.relative_to(ROOT).with_suffix("").as_posix().replace("/", "-")
    with open(f"{made}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (made / "manifest.json").is_file():
            shutil.rmtree(made, ignore_errors=True)
            done = harvest("extract", str(target), "-o", str(made), "-q", cwd=shared)
            assert done.returncode == 0, done.stderr
    copy = factory.mktemp(target.stem) / target.stem
    shutil.copytree(made, copy)
    assert remember_made_here(copy)
    return copy


def kernels(manifest: dict) -> list[dict]:
    return [kernel for graph in manifest["graphs"] for kernel in graph["kernels"]]


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def nvcc_path() -> str | None:
    """The nvcc harvest itself would use (PATH, $CUDA_HOME/bin, the pip CUDA wheel), or None."""
    from harvest.ptx.toolchain import ToolchainError, find_nvcc

    try:
        return str(find_nvcc())
    except ToolchainError:
        return None


def _has_browser() -> bool:
    import importlib.util

    return bool(shutil.which("chromium") or shutil.which("chromium-browser")) and importlib.util.find_spec("playwright") is not None


# The zoo's libraries beside transformers, tried once per run: by the pytest-xdist controller, whose workers take the
# answer from this variable (each would otherwise start interpreters of its own at collection: ~5 s of CPU a worker).
ZOO_LIBRARIES = ("diffusers", "torchvision", "timm")
IMPORTABLE_VARIABLE = "HARVEST_TEST_IMPORTABLE"


def _importable(modules: tuple[str, ...]) -> dict[str, bool]:
    """Which of modules `import` works for, tried in a new interpreter (a torchvision built for another torch breaks the
    process that imports it, transformers' imports included): one after another in one, and a module whose try ended
    that interpreter again alone in its own."""
    probe = ("import importlib, sys\nfor name in sys.argv[1:]:\n    try:\n        importlib.import_module(name)\n"
             "    except Exception:\n        print(name, 0, flush=True)\n    else:\n        print(name, 1, flush=True)\n")
    done = subprocess.run([sys.executable, "-c", probe, *modules], capture_output=True, text=True, timeout=300)
    found = {name: answer == "1" for name, answer in (line.split() for line in done.stdout.splitlines())}
    for name in modules:
        if name not in found:
            alone = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, timeout=300)
            found[name] = alone.returncode == 0
    return found


def _imports(module: str) -> bool:
    """Whether `import module` works (module: one of ZOO_LIBRARIES)."""
    if IMPORTABLE_VARIABLE not in os.environ:
        os.environ[IMPORTABLE_VARIABLE] = " ".join(name for name, ok in _importable(ZOO_LIBRARIES).items() if ok) or "-"
    return module in os.environ[IMPORTABLE_VARIABLE].split()


def _takes_chattr() -> bool:
    """Whether this file system makes a folder immutable (chattr +i): root ignores permission bits, not that."""
    with tempfile.TemporaryDirectory() as probe:
        if subprocess.run(["chattr", "+i", probe], capture_output=True).returncode != 0:
            return False
        subprocess.run(["chattr", "-i", probe], capture_output=True)
        return True


# the mermaid CLI scripts/validate_mermaid.sh installs (tests/test_report.py validates report.md's graphs with it)
MERMAID_DIR = Path(os.environ.get("HARVEST_MERMAID_DIR", Path.home() / ".cache" / "harvest-mermaid"))
# The Triton and nvcc versions the committed showcases' PTX was compiled with (tests/test_showcase.py).
SHOWCASE_TOOLCHAIN = {"triton": "3.9.0", "nvcc": "13.0"}


def _toolchain() -> dict:
    from harvest.ptx import toolchain_versions

    return toolchain_versions()


def _has_newer_helpers() -> bool:
    from torch._inductor.runtime import triton_helpers

    return {"pow_integer", "online_softmax_combine_with_sum"} <= set(vars(triton_helpers))


MMDC = MERMAID_DIR / "node_modules/.bin/mmdc"

# Everything a test may need beyond the README's install, and why it skips where that is missing. These markers are
# the suite's only skips (tests/test_inert.py checks that no test file skips by itself): a test that needs none of
# these runs everywhere.
REQUIREMENTS: dict[str, tuple[Callable[[], bool], str]] = {
    "requires_cuda": (_has_cuda, "needs an NVIDIA GPU (requires_cuda); run on the device machine"),
    "requires_no_cuda": (lambda: not _has_cuda(), "tests what harvest says on a machine without a GPU; this one has one"),
    "requires_nvcc": (lambda: nvcc_path() is not None,
                      "needs nvcc, and harvest finds none (not on PATH, not in $CUDA_HOME/bin, no pip CUDA wheel): "
                      "install a CUDA toolkit or `pip install .[cuda]`"),
    "requires_no_pip_nvcc": (lambda: nvcc_path() is None or shutil.which("nvcc") is not None,
                             "tests the no-nvcc error with PATH cut, but an nvcc is reachable without PATH here "
                             "($CUDA_HOME or a pip CUDA wheel)"),
    "requires_gxx": (lambda: shutil.which("g++") is not None, "needs g++ (the CUDA emulation compiles twins with it)"),
    "requires_browser": (_has_browser, "needs headless Chromium and playwright: `bash .ci/run` installs both "
                                       "(scripts/ensure_browser.sh, the test extras)"),
    "requires_mmdc": (lambda: MMDC.exists() or shutil.which("mmdc") is not None,
                      "needs the mermaid CLI (mmdc): bash scripts/validate_mermaid.sh --install-only"),
    "requires_chattr": (_takes_chattr, "needs a file system where chattr +i makes a folder immutable"),
    "requires_showcase_toolchain": (lambda: _toolchain() == SHOWCASE_TOOLCHAIN,
                                    f"compares PTX with the showcases', compiled by {SHOWCASE_TOOLCHAIN}; this machine's "
                                    "Triton or nvcc is another (or there is no nvcc)"),
    "requires_interpreter": (lambda: os.environ.get("TRITON_INTERPRET") == "1",
                             "captures on the CPU path, which runs under the Triton interpreter: TRITON_INTERPRET is "
                             "set to something else than 1"),
    "requires_triton_runtime": (lambda: os.environ.get("TRITON_INTERPRET") == "1" or _has_cuda(),
                                "runs Triton kernels: needs a GPU or TRITON_INTERPRET=1 (the suite's default)"),
    "requires_newer_inductor_helpers": (_has_newer_helpers, "this torch's Inductor has no pow_integer / "
                                                            "online_softmax_combine_with_sum (torch < 2.9)"),
    # the model zoo's libraries beside transformers (tests/test_zoo.py): torchvision must be the build for this torch
    "requires_torchvision": (lambda: _imports("torchvision"), "needs a torchvision built for this torch, which "
                             "scripts/ensure_venv.sh test installs where torch's own index serves one"),
    "requires_timm": (lambda: _imports("timm"), "needs timm (a test extra) and the torchvision it imports"),
    "requires_diffusers": (lambda: _imports("diffusers"), "needs diffusers (a test extra)"),
}
_MET: dict[str, bool] = {}


def requirement_met(name: str) -> bool:
    if name not in _MET:
        _MET[name] = REQUIREMENTS[name][0]()
    return _MET[name]


def skip_unless(name: str) -> None:
    """For a requirement only known inside a test (one parameter of several needs nvcc): skip, with its reason."""
    if not requirement_met(name):
        pytest.skip(REQUIREMENTS[name][1])


def pytest_configure(config):
    for name, (_, reason) in REQUIREMENTS.items():
        config.addinivalue_line("markers", f"{name}: skipped where missing ({reason})")
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput") and _collects_the_zoo(config):
        _imports(ZOO_LIBRARIES[0])  # the controller, before its workers start: they inherit the answer


def _collects_the_zoo(config) -> bool:
    """Whether this run's paths take in tests/test_zoo.py (whose parameters depend on the zoo's libraries)."""
    zoo = Path(__file__).with_name("test_zoo.py")
    paths = [Path(arg.split("::")[0]).resolve() for arg in config.args] or [ROOT]
    return any(path == zoo or path.is_dir() and zoo.is_relative_to(path) for path in paths)


# The files that take longest on the 2-core CI machine (--durations), longest first. pytest-xdist (--dist loadfile)
# hands a worker the next file as it finishes one: with these first, the last files the workers take are short ones,
# and neither waits long at the end for the other. A file missing here only runs later.
LONGEST_FILES = ("test_twin.py", "test_distributed.py", "test_reference_zoo.py", "test_twin_emulated.py",
                 "test_kernel_kinds_h200.py", "test_artifact_reference.py", "test_bad_input.py", "test_ptx.py",
                 "test_run_with.py", "test_program_fuzz.py", "test_inductor_helpers.py", "test_first_hour.py",
                 "test_reference_recorded.py", "test_record.py", "test_extract.py", "test_rename_scope.py", "test_zoo.py",
                 "test_reference_h200_recorded.py", "test_cli.py", "test_rename_property.py", "test_kernel_kinds.py",
                 "test_bench.py", "test_reference.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: index for index, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own tests keep their order
    for item in items:
        for name, (_, reason) in REQUIREMENTS.items():
            if name in item.keywords and not requirement_met(name):
                item.add_marker(pytest.mark.skip(reason=reason))
                break


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
