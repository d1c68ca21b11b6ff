"""Issue 18, points 3-6, as a new user meets them: a target's output never mixes into harvest's own, a C++ capture
says what it holds, the closing hint is a command that runs, and a failed run leaves no empty directories behind.

No mocks: the CLI runs as a subprocess, targets are real scripts run through Inductor's CPU Triton backend (and,
once, its C++ backend). The bad-input cases of these points (C++ artifacts, failed runs) are rows of
tests/test_bad_input.py's table and tested there.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, harvest, tree_env

from harvest.api import ExtractResult
from harvest.capture.runner import RunOutcome
from harvest.cli import check_hint
from harvest.errors import EXIT_CODES
from harvest.model import Capture

SQUARE_OUTPUT_CODE = ROOT / "tests/fixtures/torch-2.13.0+cpu_triton-3.9.0/square_square/graph_000.py"

TALKY = """\
import sys, torch
print("v{version} starts")
print("v{version} warns", file=sys.stderr)
f = torch.compile(lambda x: torch.square(x) + {version})
print("v{version}", f(torch.randn(64)).shape)
"""


@pytest.fixture(scope="module")
def talky_run(tmp_path_factory):
    """One extraction (progress lines on) of a target that prints on stdout and stderr."""
    cwd = tmp_path_factory.mktemp("talky")
    (cwd / "talky.py").write_text(TALKY.format(version=1))
    return harvest("extract", "talky.py", "-o", "out", cwd=cwd), cwd


def test_the_target_output_goes_to_its_log_never_to_harvests_output(talky_run):
    proc, cwd = talky_run
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # harvest extract's own output is on stderr; the target's is in the log
    assert "v1" not in proc.stderr, proc.stderr
    assert all(line.startswith(("harvest ", "extracted to ", "  ", "launch record:", "the target's output:", "report:", "check a kernel:"))
               for line in proc.stderr.splitlines()), proc.stderr
    # stdout and stderr through one pipe: the log keeps the order the target wrote in
    assert (cwd / "out/raw/target.log").read_text() == "v1 starts\nv1 warns\nv1 torch.Size([64])\n"
    assert "the target's output: out/raw/target.log (3 lines)" in proc.stderr.splitlines()


def test_the_log_is_not_hashed_nor_replayed(talky_run, tmp_path):
    _, cwd = talky_run
    manifest = json.loads((cwd / "out/manifest.json").read_text())
    assert not [path for path in manifest["generated_files"] if "target.log" in path]
    replay = harvest("extract", str(cwd / "out"), "-o", "replayed", "-q", cwd=tmp_path)  # a replay runs no target
    assert replay.returncode == 0, replay.stderr
    assert not (tmp_path / "replayed/raw/target.log").exists()
    assert (tmp_path / "replayed/manifest.json").read_bytes() == (cwd / "out/manifest.json").read_bytes()
    shutil.copytree(cwd / "out", tmp_path / "copy")
    in_place = harvest("extract", "copy", "-q", cwd=tmp_path)  # raw/ is the input: left as it is, log included
    assert in_place.returncode == 0, in_place.stderr
    assert (tmp_path / "copy/raw/target.log").read_bytes() == (cwd / "out/raw/target.log").read_bytes()
    other = harvest("extract", str(SQUARE_OUTPUT_CODE), "-o", "copy", "--force", "-q", cwd=tmp_path)
    assert other.returncode == 0, other.stderr
    assert not (tmp_path / "copy/raw/target.log").exists()  # another capture, made by no run: the old run's log goes


def test_the_closing_hint_names_a_real_module_and_the_interpreter_that_has_harvest(talky_run):
    proc, cwd = talky_run
    (hint,) = [line for line in proc.stderr.splitlines() if line.startswith("check a kernel: ")]
    manifest = json.loads((cwd / "out/manifest.json").read_text())
    module = manifest["graphs"][0]["kernels"][0]["module"]
    # no GPU here: the interpreter form, with this interpreter (the one harvest runs in), not a bare `python`
    assert hint == f"check a kernel: TRITON_INTERPRET=1 {shlex.quote(sys.executable)} out/{module} --check"
    words = shlex.split(hint.removeprefix("check a kernel: "))
    env = dict(os.environ, **dict(word.split("=", 1) for word in words[:1]))
    check = subprocess.run(words[1:], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert check.returncode == 0 and "recorded: ok" in check.stdout, check.stdout + check.stderr


def test_the_closing_hint_of_an_artifact_extraction(tmp_path):
    proc = harvest("extract", str(SQUARE_OUTPUT_CODE), "-o", "my out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    hint = proc.stderr.splitlines()[-1]
    assert hint == f"check a kernel: TRITON_INTERPRET=1 {shlex.quote(sys.executable)} 'my out/g0_inference/square_square_kernel.py' --check"
    assert "the target's output" not in proc.stderr  # nothing ran


def test_on_a_gpu_the_hint_is_the_gpu_form_only():
    """A run on CUDA means this machine has a GPU: the module runs there without the interpreter."""
    capture = Capture(target="t.py", command=(), device="cuda (H200)", torch_version="", triton_version="", gpu_name="H200",
                      graphs=(), mode="cuda")
    result = ExtractResult(out_dir=Path("out"), manifest={"graphs": [{"kernels": [{"module": None}, {"module": "g0_inference/k.py"}]}]},
                           outcome=RunOutcome(capture=capture, status="ok", exit_code=0, error="", seconds=1.0))
    assert check_hint(result) == f"check a kernel: {shlex.quote(sys.executable)} out/g0_inference/k.py --check"


@pytest.mark.requires_cuda
def test_on_a_gpu_an_artifact_extraction_gives_the_gpu_form(tmp_path):
    proc = harvest("extract", str(SQUARE_OUTPUT_CODE), "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1] == f"check a kernel: {shlex.quote(sys.executable)} out/g0_inference/square_square_kernel.py --check"


def test_diff_of_two_scripts_prints_only_the_diff(tmp_path):
    """`harvest diff A.py B.py --json` must print JSON a program can read: the targets' prints go to their logs."""
    (tmp_path / "a.py").write_text(TALKY.format(version=1))
    (tmp_path / "b.py").write_text(TALKY.format(version=2))
    proc = subprocess.run([sys.executable, "-m", "harvest", "diff", "a.py", "b.py", "--json"], cwd=tmp_path, env=tree_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    diff = json.loads(proc.stdout)
    assert diff["old"] == "a.py" and diff["new"] == "b.py" and diff["exit_code"] == 0
    assert "v1" not in proc.stdout + proc.stderr and "v2" not in proc.stdout + proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]  # the targets were extracted elsewhere


def test_an_extraction_with_no_triton_kernel_gives_no_check_hint(tmp_path):
    """A matmul alone is an extern call: the graph is extracted, with no module to check and no hint to check one."""
    (tmp_path / "mm.py").write_text("import torch\nf = torch.compile(lambda x, w: x @ w)\nprint(f(torch.randn(8, 16), torch.randn(16, 4)).shape)\n")
    proc = harvest("extract", "mm.py", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "g0_inference: 0 Triton kernels; extern calls: 1 mm" in proc.stderr
    assert "check a kernel" not in proc.stderr
    assert (tmp_path / "out/raw/target.log").read_text() == "torch.Size([8, 4])\n"


@pytest.mark.slow  # Inductor's C++ backend compiles the kernel with the system compiler: ~30 s
def test_a_script_that_chooses_the_cpp_backend_says_so(tmp_path):
    (tmp_path / "cpp.py").write_text(
        "import torch\nimport torch._inductor.config\ntorch._inductor.config.cpu_backend = 'cpp'\n"
        "f = torch.compile(lambda x: torch.cos(x) * 2 + 1)\nprint('cpp', f(torch.randn(64)).shape)\n"
    )
    proc = harvest("extract", "cpp.py", "-o", "out", "-q", cwd=tmp_path)
    assert proc.returncode == EXIT_CODES["NoTritonKernelsError"], proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("harvest: error: cpp.py compiled 1 C++ kernel (cpp_fused_") and "no Triton kernel" in line, line
    assert "cpu_backend" in line and line.endswith("the capture is kept in out/raw"), line
    raw = tmp_path / "out/raw"
    assert "async_compile.cpp_pybinding(" in (raw / "g0_inference/output_code.py").read_text()  # kept: the run's only copy
    # the target's own output, torch's warnings included (C++ compiles warn where no CUDA runtime is found)
    assert "cpp torch.Size([64])\n" in (raw / "target.log").read_text()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["raw"]  # no report of 0 kernels, no manifest


def test_the_main_job_and_its_check_each_in_a_python_started_from_nothing(tmp_path):
    """The README's two steps as a shell runs them: each command a new Python that imports everything itself (the
    other tests fork theirs from a process that has the imports done, tests/fork_server.py)."""
    done = subprocess.run([sys.executable, "-m", "harvest", "extract", str(ROOT / "examples/square_square.py"), "-o", "out"],
                          cwd=tmp_path, env=tree_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    hint = next(line for line in (done.stdout + done.stderr).splitlines() if line.startswith("check a kernel: "))
    (module,) = (tmp_path / "out" / "g0_inference").glob("*_kernel.py")
    assert hint.endswith(f"g0_inference/{module.name} --check"), hint
    check = subprocess.run([sys.executable, str(module), "--check"], cwd=tmp_path, env=dict(os.environ, TRITON_INTERPRET="1"),
                           capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "out_ptr: recorded: ok (1000000 values, torch.float32, bit for bit)" in check.stdout, check.stdout
