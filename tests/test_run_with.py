"""`harvest run TARGET --with EXTRACTION` on the CPU path: edited modules in place of Inductor's kernels, the model's
outputs compared end to end, and every refusal in one line with its exit code and nothing in the extraction changed.
Real runs: Inductor's CPU Triton backend, the Triton interpreter, the edited module imported by the capture child."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, harvest, tree

from harvest.errors import EXIT_CODES

SQUARE = ROOT / "examples" / "square_square.py"


@pytest.fixture(scope="module")
def square(tmp_path_factory) -> tuple[Path, Path]:
    """square_square.py copied (so a test may change it) and its extraction."""
    where = tmp_path_factory.mktemp("square")
    target = where / "square_square.py"
    shutil.copy(SQUARE, target)
    done = harvest("extract", str(target), "-o", str(where / "x"), "-q", cwd=where)
    assert done.returncode == 0, done.stderr
    return target, where / "x"


@pytest.fixture()
def extraction(square, tmp_path) -> tuple[Path, Path]:
    """A fresh copy of the extraction for one test to edit."""
    target, made = square
    copy = tmp_path / "x"
    shutil.copytree(made, copy)
    return target, copy


KERNEL = "g0_inference/square_square_kernel.py"


def edit(extraction: Path, old: str, new: str) -> None:
    path = extraction / KERNEL
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def run(target: Path, extraction: Path, *extra: str):
    return harvest("run", str(target), "--with", str(extraction), *extra, cwd=target.parent)


def test_an_edit_that_computes_the_same_gives_equal_results_bit_for_bit(extraction):
    target, x = extraction
    edit(x, "CONFIG = {'BLOCK_SIZE': 1024,", "CONFIG = {'BLOCK_SIZE': 256,")  # a config edit counts as an edit
    edit(x, "    square = a * a\n", "    square = tl.fma(a, a, 0.0)\n")
    done = run(target, x)
    assert done.returncode == 0, done.stderr
    assert "1 graph outputs compared: 1 bit for bit, 0 within tolerance, 0 differs" in done.stdout
    assert "results equal" in done.stdout and "CPU path: correctness only" in done.stdout
    record = json.loads((x / "runs/1/run.json").read_text())
    assert record["equal"] and record["swaps"] == [{"graph": "g0_inference", "kernel": "triton_poi_fused_pow_0",
                                                    "module": KERNEL, "edited": True}]
    assert record["outputs"] == [{"graph": "g0_inference", "index": 0, "dtype": "float32", "shape": [1000, 1000],
                                  "verdict": "bit for bit", "max_abs_diff": 0.0, "detail": ""}]
    assert "| g0_inference | triton_poi_fused_pow_0 | g0_inference/square_square_kernel.py | yes |" in (x / "runs/1/run.md").read_text()
    # the CPU path launches through the interpreter: the direct launch path (harvest.capture.launcher) says why not
    why = "the Triton interpreter runs them on the CPU path, where nothing is compiled"
    assert f"Launch path: through Triton's JIT at every launch ({why})." in (x / "runs/1/run.md").read_text()
    assert record["launch"] == {"paths": {KERNEL: f"jit: {why}"}, "cuda_graphs": []}
    assert record["timing"] == {"measured": False, "why": "not measured on the CPU path (the Triton interpreter's times "
                                                          "are not GPU times): correctness only"}


def test_a_wrong_edit_fails_naming_the_kernel_and_the_first_differing_output(extraction):
    target, x = extraction
    edit(x, "    square_1 = square * square\n", "    square_1 = square * square * 1.001\n")
    listed = ("manifest.json", "report.md")  # where the run is listed
    before = {p: b for p, b in tree(x).items() if not p.startswith("runs/") and p not in listed}
    done = run(target, x)
    assert done.returncode == EXIT_CODES["ResultsDiffer"] == 13, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("harvest: error: results differ: ")
    assert "g0_inference output 0 (Mismatched elements: " in line
    assert "the first kernel whose outputs differ: g0_inference/triton_poi_fused_pow_0 (g0_inference/square_square_kernel.py)" in line
    # the target's own check failed too, and says so; the extraction is as it was, a run directory beside it, the
    # run listed in the manifest and in report.md
    assert "the target failed with the edited kernels (Greatest relative difference" in line
    assert {p: b for p, b in tree(x).items() if not p.startswith("runs/") and p not in listed} == before
    assert "- [run 1](runs/1/run.md): `g0_inference/square_square_kernel.py`: results **differ**" in (x / "report.md").read_text()
    assert json.loads((x / "manifest.json").read_text())["runs"] == [
        {"number": 1, "report": "runs/1/run.md", "equal": False, "modules": [KERNEL]}]
    record = json.loads((x / "runs/1/run.json").read_text())
    assert not record["equal"] and record["first_difference"]["verdict"] == "differs"
    assert 0.4 < record["first_difference"]["max_abs_diff"] < 1.0  # 0.001 of the largest x**4 of 1e6 normal values


def test_no_edit_is_refused(extraction):
    target, x = extraction
    done = run(target, x)
    assert done.returncode == EXIT_CODES["SwapError"] == 12
    assert "no kernel module of this extraction is edited" in done.stderr
    assert not (x / "runs").exists()
    done = run(target, x, "-k", "softmax*")
    assert done.returncode == 12 and "no kernel module matches -k 'softmax*'" in done.stderr


def test_an_unedited_module_named_with_k_runs_and_matches(extraction):
    target, x = extraction
    done = run(target, x, "-k", "square_square_kernel")
    assert done.returncode == 0, done.stderr
    assert json.loads((x / "runs/1/run.json").read_text())["swaps"][0]["edited"] is False


def test_an_edit_that_does_not_compile_is_refused_with_tritons_error(extraction):
    target, x = extraction
    edit(x, "    square = a * a\n", "    square = tl.no_such_op(a)\n")
    done = run(target, x)
    assert done.returncode == 12, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(f"harvest: error: {x / KERNEL}: ") and "no_such_op" in line
    assert "the run with edits stopped there, the extraction is unchanged" in line


def test_a_parameter_that_no_longer_maps_is_refused_naming_it(extraction):
    target, x = extraction
    text = (x / KERNEL).read_text()
    (x / KERNEL).write_text(re.sub(r"\bn_elements\b", "count", text))
    done = run(target, x)
    assert done.returncode == 12
    assert "launch parameter count is none of Inductor's launch arguments for triton_poi_fused_pow_0" in done.stderr


def test_a_kernel_that_inductor_now_writes_differently_is_refused(extraction, tmp_path):
    target, x = extraction
    edit(x, "CONFIG = {'BLOCK_SIZE': 1024,", "CONFIG = {'BLOCK_SIZE': 512,")
    changed = tmp_path / "square_square.py"  # the model changed since the extraction: another size, the same kernel name
    changed.write_text(target.read_text().replace("else 1000", "else 1024"))
    done = run(changed, x)
    assert done.returncode == 12, done.stderr
    assert "Inductor now writes another kernel there (its source differs from the one extracted)" in done.stderr
    # another computation: Inductor names (and writes) another kernel, and the edit has nothing to replace
    changed.write_text(target.read_text().replace("return torch.square(torch.square(x))", "return torch.square(torch.square(x)) + 1"))
    done = run(changed, x)
    assert done.returncode == 12, done.stderr
    assert "graph g0_inference launched no kernel triton_poi_fused_pow_0 this time" in done.stderr
    assert not (x / "runs").exists()


def test_another_targets_extraction_is_refused(extraction):
    _, x = extraction
    edit(x, "CONFIG = {'BLOCK_SIZE': 1024,", "CONFIG = {'BLOCK_SIZE': 512,")
    done = harvest("run", str(ROOT / "examples/small_model.py"), "--with", str(x), cwd=ROOT)
    assert done.returncode == EXIT_CODES["UsageError"]
    assert "holds the extraction of" in done.stderr and "not of" in done.stderr
    done = harvest("run", str(SQUARE), "--with", str(x / "nothing"), cwd=ROOT)
    assert done.returncode == 2 and "no manifest.json in" in done.stderr


def test_a_training_step_with_two_edited_kernels_matches_forward_and_backward(tmp_path):
    out = tmp_path / "small"
    done = harvest("extract", str(ROOT / "examples/small_model.py"), "-o", str(out), "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for module in ("g0_forward/softmax_kernel.py", "g1_backward/softmax_bwd_kernel.py"):
        path = out / module
        path.write_text(re.sub(r"'num_warps': \d+", "'num_warps': 8", path.read_text(), count=1))
    done = harvest("run", str(ROOT / "examples/small_model.py"), "--with", str(out), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "runs/1/run.json").read_text())
    assert [s["module"] for s in record["swaps"]] == ["g0_forward/softmax_kernel.py", "g1_backward/softmax_bwd_kernel.py"]
    graphs = {o["graph"] for o in record["outputs"]}
    assert graphs == {"g0_forward", "g1_backward"}  # the backward's outputs: the gradients
    assert all(o["verdict"] == "bit for bit" for o in record["outputs"]) and len(record["outputs"]) >= 10


def test_a_run_past_its_timeout_compares_nothing(extraction):
    target, x = extraction
    edit(x, "CONFIG = {'BLOCK_SIZE': 1024,", "CONFIG = {'BLOCK_SIZE': 512,")
    done = run(target, x, "--timeout", "1")
    assert done.returncode == EXIT_CODES["TimeoutError"] == 5
    assert "the run with Inductor's kernels passed --timeout: nothing was compared" in done.stderr
    assert not (x / "runs").exists()


def test_an_extraction_this_machine_did_not_make_runs_only_with_trust_artifact(extraction, tmp_path):
    # Another machine's state directory: it never made this extraction, whatever the manifest says ("mode": "cpu-triton").
    target, x = extraction
    edit(x, "CONFIG = {'BLOCK_SIZE': 1024,", "CONFIG = {'BLOCK_SIZE': 512,")
    elsewhere = str(tmp_path / "another-machine")
    done = harvest("run", str(target), "--with", str(x), cwd=target.parent, HARVEST_STATE_DIR=elsewhere)
    assert done.returncode == EXIT_CODES["UsageError"]
    assert "was not made on this machine by running a target" in done.stderr and "--trust-artifact" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (x / "runs").exists()
    done = harvest("run", str(target), "--with", str(x), "--trust-artifact", cwd=target.parent, HARVEST_STATE_DIR=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "results equal" in done.stdout


def test_an_extraction_that_cannot_be_noted_as_made_here_says_so_and_is_whole(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # the state directory would have to be made inside a file
    done = harvest("extract", str(SQUARE), "-o", str(tmp_path / "x"), cwd=tmp_path, HARVEST_STATE_DIR=str(blocked / "state"))
    assert done.returncode == 0, done.stderr
    assert f"could not note {tmp_path / 'x'} as made here ({blocked / 'state'} cannot be written)" in done.stderr
    assert "--trust-artifact" in done.stderr and (tmp_path / "x" / "manifest.json").is_file()
