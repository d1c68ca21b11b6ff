"""Record-on-run on the CPU path: every launch recorded, modules launch on the recorded arguments, and --check
compares every written output with what Inductor's kernel wrote in the run (plus the eager reference).

The target (tests/targets/kernel_kinds.py) makes every kernel kind met in real training code: pointwise, persistent
and looped reductions, a split reduction, dropout (seed buffer + load_seed_offset), an in-place update of a graph
input view, embedding lookups with index bounds, and buffers made by extern matmuls; forward and backward.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from conftest import CUDA_FIXTURES, ROOT, harvest, kernels, run_check

from harvest.capture.recorded import launch_from_json, launch_to_json

TARGET = ROOT / "tests" / "targets" / "kernel_kinds.py"


@pytest.fixture(scope="module")
def kinds(tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("kinds")
    proc = harvest("extract", str(TARGET), "-o", "out", cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return cwd / "out"


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_every_kernel_launch_is_recorded_with_its_data(kinds):
    manifest = _manifest(kinds)
    found = kernels(manifest)
    assert len(found) >= 10
    kinds_seen = {k["kind"] for k in found}
    assert {"pointwise", "reduction", "persistent_reduction"} <= kinds_seen
    for kernel in found:
        assert kernel["standalone_reason"] is None, kernel
        recorded = kernel["recorded"]
        assert recorded is not None and recorded["launches"] >= 1, kernel["name"]
        assert (kinds / recorded["data"]).is_file(), recorded
        assert recorded["device"] == "cpu"
    capture = json.loads((kinds / "raw" / "capture.json").read_text())
    for graph in capture["graphs"]:
        for name, launch in graph["recorded"].items():
            assert launch_to_json(launch_from_json(launch)) == launch  # capture.json round-trips exactly
            assert launch["config"]["num_warps"] >= 1 and launch["grid"], name


def test_dropout_launch_records_its_seeds(kinds):
    capture = json.loads((kinds / "raw" / "capture.json").read_text())
    dropout = [launch for g in capture["graphs"] for name, launch in g["recorded"].items() if "dropout" in name]
    assert dropout
    args = {a["param"]: a for a in dropout[0]["args"]}
    assert args["load_seed_offset"]["value"] is not None
    seeds = [a for a in args.values() if a.get("tensor", {}).get("dtype") == "int64"]
    assert seeds, "the seed buffer is an int64 tensor argument"


def test_record_files_are_plain_tensors_and_skip_write_only_garbage(kinds):
    for path in (kinds / "raw").rglob("*.pt"):
        data = torch.load(path, weights_only=True)
        assert set(data) == {"before", "after"}
        assert all(t is None or t.dtype == torch.uint8 for t in data["before"] + data["after"])
        assert any(t is not None for t in data["after"]), f"{path}: a launch that wrote nothing"


def test_every_module_checks_every_output_bit_for_bit_against_the_record(kinds):
    atomics = 0
    for kernel in kernels(_manifest(kinds)):
        module = kinds / kernel["module"]
        proc = run_check(module)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "(recorded inputs)" in proc.stdout
        assert "NOT COMPARED" not in proc.stdout
        # Atomics add in launch order: those kernels compare with tolerances, every other one bit for bit.
        exact = "EXACT_POSSIBLE = True" in module.read_text()
        atomics += not exact
        outputs = re.findall(r"^  (\w+): recorded: ok \(.*" + ("bit for bit" if exact else "rtol="), proc.stdout, flags=re.M)
        assert outputs, proc.stdout
    assert atomics <= 2


def test_an_edited_kernel_is_compared_with_tolerances(kinds, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(kinds, out)
    module = out / kernels(_manifest(out))[0]["module"]
    text = module.read_text()
    body = text.index("# >>> kernel")
    module.write_text(text[: body] + text[body:].replace("\n    ", "\n    # tuned by hand\n    ", 1))
    proc = run_check(module)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"recorded: ok \(\d+ values, torch.float32, rtol=", proc.stdout), proc.stdout
    assert not re.search(r"torch.float32, bit for bit", proc.stdout), proc.stdout


def test_without_its_record_a_module_says_so_and_never_passes_uncompared(kinds, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(kinds, out)
    shutil.rmtree(out / "raw")
    results = {}
    for kernel in kernels(_manifest(out)):
        proc = run_check(out / kernel["module"])
        assert "no record (" in proc.stdout, proc.stdout
        results[kernel["name"]] = proc
    # Dropout's mask is drawn again by the reference (Triton's own random numbers): it checks without a record.
    dropout = [proc for name, proc in results.items() if "dropout" in name and "backward" not in name]
    assert dropout and all(p.returncode == 0 and "torch.bool, bit for bit" in p.stdout for p in dropout)
    # An output that neither oracle compares fails the check: a module whose reference computes nothing, no record.
    module = out / kernels(_manifest(out))[0]["module"]
    text = module.read_text()
    module.write_text(text.replace("\nRECORD = ", "\ndef reference():\n    return {}\n\n\nRECORD = ", 1))
    proc = run_check(module)
    assert proc.returncode == 1 and "NOT COMPARED: no record and no reference for it" in proc.stdout, proc.stdout


def test_record_layouts_only_keeps_layouts_and_no_data(tmp_path):
    proc = harvest("extract", str(TARGET), "-o", "out", "--record", "layouts", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not list((tmp_path / "out" / "raw").rglob("*.pt"))
    manifest = _manifest(tmp_path / "out")
    assert all(k["recorded"] and k["recorded"]["data"] is None for k in kernels(manifest))
    module = tmp_path / "out" / next(k["module"] for k in kernels(manifest) if "log_mean" in k["module"])
    assert "no data recorded for this launch" in module.read_text()
    check = run_check(module)
    assert check.returncode == 0 and "made-up inputs" in check.stdout, check.stdout


def test_a_per_kernel_cap_keeps_layouts_of_bigger_launches(tmp_path):
    proc = harvest("extract", str(TARGET), "-o", "out", "--record-cap", "0.1", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    notes = [k["recorded"]["note"] for k in kernels(_manifest(tmp_path / "out"))]
    assert any("over the per-kernel cap" in n for n in notes) and any(n == "" for n in notes)


def test_an_artifact_is_only_read_unless_asked_to_run(kinds, tmp_path):
    source = kinds / "raw" / "g1_backward" / "output_code.py"
    marker = tmp_path / "marker-file"
    artifact = tmp_path / "output_code.py"
    # If harvest ever executed a file it was only asked to read, this would create the marker.
    artifact.write_text(source.read_text() + f"\nopen({str(marker)!r}, 'w').close()\n")
    read = harvest("extract", str(artifact), "-o", "read", "-q", cwd=tmp_path)
    assert read.returncode == 0, read.stderr
    assert not marker.exists()
    assert all(k["recorded"] is None for k in kernels(_manifest(tmp_path / "read")))

    ran = harvest("extract", str(artifact), "-o", "ran", "--run-artifact", "-q", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    found = kernels(_manifest(tmp_path / "ran"))
    assert found and all(k["recorded"] and k["recorded"]["data"] for k in found)
    for kernel in found:
        check = run_check(tmp_path / "ran" / kernel["module"])
        assert check.returncode == 0 and "(recorded inputs)" in check.stdout, check.stdout


@pytest.mark.requires_no_cuda
def test_run_artifact_of_cuda_code_without_a_gpu_is_one_clear_line(tmp_path):
    cuda = CUDA_FIXTURES / "square_square" / "graph_000.py"
    proc = harvest("extract", str(cuda), "-o", "out", "--run-artifact", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("harvest: error: --run-artifact: the artifact was compiled for CUDA"), proc.stderr
    assert "Traceback" not in proc.stderr
