"""Test setup: the Triton interpreter on (no GPU in CI), fixtures' locations, the requires_cuda marker."""

import difflib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Must happen before triton is imported anywhere: kernels then run on numpy, and Inductor loads them that way.
os.environ.setdefault("TRITON_INTERPRET", "1")
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
    return subprocess.run(
        [sys.executable, "-m", "harvest", *args], cwd=cwd, env=tree_env(**env), capture_output=True, text=True,
        timeout=timeout,
    )


def run_check(module: Path) -> subprocess.CompletedProcess:
    """`TRITON_INTERPRET=1 python module.py --check`, as the module's own header says to run it on a CPU."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    return subprocess.run(
        [sys.executable, str(module), "--check"], cwd=module.parent, env=env, capture_output=True, text=True, timeout=600
    )


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
