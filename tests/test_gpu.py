"""GPU path: real CUDA capture and real kernel launches. Runs only where torch sees a GPU (the device machine)."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT


def _env() -> dict:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)  # real kernels, not the interpreter
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.requires_cuda
def test_square_square_captures_one_cuda_kernel_with_its_autotune_winner(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "harvest", "extract", str(ROOT / "examples/square_square.py"), "-o", str(out), "--device", "cuda"],
        capture_output=True, text=True, env=_env(), cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["mode"] == "cuda" and manifest["gpu"]
    kernels = [k for g in manifest["graphs"] for k in g["kernels"]]
    assert len(kernels) == 1
    assert kernels[0]["autotune"]["chosen_by"] == "autotune"
    assert "device_str='cuda'" in (out / "raw/g0_inference/output_code.py").read_text()
    check = subprocess.run([sys.executable, str(out / kernels[0]["module"]), "--check"], capture_output=True, text=True, env=_env())
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok" in check.stdout


@pytest.mark.requires_cuda
def test_extracted_cuda_kernel_benchmarks_without_the_interpreter(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "harvest", "extract", str(ROOT / "examples/square_compile.py"), "-o", str(out)],
        capture_output=True, text=True, env=_env(), cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    module = next((out / "g0_inference").glob("*.py"))
    bench = subprocess.run([sys.executable, str(module), "--bench"], capture_output=True, text=True, env=_env())
    assert bench.returncode == 0, bench.stderr
    assert "median ms" in bench.stdout
