"""Kernel kinds beyond pointwise and reductions, on the CPU Triton path: a foreach (combo) kernel and a max-autotune
matmul template each become a module that checks every output against the run's record (bit for bit) and the eager
reference; a user-written @triton.jit kernel, which Dynamo cannot trace through the interpreter here, runs between
the graphs with one line saying so, and the graphs around it are extracted. Cooperative reductions (RSPLIT programs
a row, meeting at a grid barrier) run under the interpreter in passes, one more per barrier. (The H200's foreach, split-scan and
template kernels: tests/test_reference_h200_recorded.py and docs/benchmarks.md.)"""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, extraction_of, harvest, run_check

FOREACH = """\
import torch

def step(xs, ys, z):
    return torch._foreach_add(xs, ys), torch.relu(z) * 2

compiled = torch.compile(step)
xs, ys = [torch.randn(8), torch.randn(16)], [torch.randn(8), torch.randn(16)]
compiled(xs, ys, torch.randn(32))
"""

TEMPLATE = """\
import torch
import torch._inductor.config as config

config.max_autotune_gemm_backends = "TRITON"  # templates only: on a CPU the library matmul would always win

def f(a, b):
    return torch.relu(a @ b) + 1

compiled = torch.compile(f, mode="max-autotune-no-cudagraphs")
print(float(compiled(torch.randn(32, 32), torch.randn(32, 32)).sum()))
"""

# A batched matmul template: its store mask ands a block with the batch index's scalar test, which triton 3.9's
# interpreter gave int32 data (it refused the store: "mask has unsupported dtype"); the shim hands it over as bools.
BMM_TEMPLATE = TEMPLATE.replace("torch.relu(a @ b) + 1", "torch.relu(torch.bmm(a, b) + 1)").replace(
    "torch.randn(32, 32), torch.randn(32, 32)", "torch.randn(4, 32, 64), torch.randn(4, 64, 32)")


def extract(tmp_path, name: str, text: str) -> tuple[dict, object]:
    (tmp_path / f"{name}.py").write_text(text)
    done = harvest("extract", f"{name}.py", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "out/manifest.json").read_text()), done


@pytest.mark.parametrize("name, text, prefix, kind", [("foreach_target", FOREACH, "triton_for_", "foreach"),
                                                       ("template_target", TEMPLATE, "triton_tem_", "template"),
                                                       ("bmm_template_target", BMM_TEMPLATE, "triton_tem_", "template")])
def test_the_kernel_becomes_a_module_that_checks_against_record_and_reference(tmp_path, name, text, prefix, kind):
    manifest, _ = extract(tmp_path, name, text)
    kernels = [k for g in manifest["graphs"] for k in g["kernels"]]
    found = [k for k in kernels if k["name"].startswith(prefix)]
    assert len(found) == 1, [k["name"] for k in kernels]
    assert found[0]["kind"] == kind and found[0]["module"] and not found[0]["standalone_reason"]
    assert found[0]["reference"]["coverage"] == "full", found[0]["reference"]
    for kernel in kernels:
        done = run_check(tmp_path / "out" / kernel["module"])
        assert done.returncode == 0, done.stdout + done.stderr
        assert "bit for bit" in done.stdout and "reference: ok" in done.stdout, done.stdout
        assert "NOT COMPARED" not in done.stdout and "not computed" not in done.stdout


def test_a_user_written_kernel_runs_between_the_graphs_and_says_so(tmp_path):
    manifest, done = extract(tmp_path, "user_kernel", (ROOT / "examples/models/user_kernel.py").read_text())
    assert "user-written Triton kernel scaled_relu_kernel runs between the compiled graphs" in done.stderr
    names = [k["name"] for g in manifest["graphs"] for k in g["kernels"] if k["module"]]
    assert any("sin" in n for n in names) and any("sum" in n for n in names), names  # the graphs before and after


def test_cooperative_reductions_run_under_the_interpreter_in_passes_and_check(tmp_path_factory):
    """examples/models/cooperative.py on the CPU path: the target runs (the interpreter cannot wait at a grid barrier:
    the grid runs once more per barrier, the workspace kept, everything else put back), each kernel becomes a
    module launched as Inductor launches it, and checks bit for bit against the record and against eager. With
    RSPLIT edited from the recorded 1 to 4, the Welford statistics are combined from 4 programs' partials, and
    still agree with eager (not bit for bit with the record: other partial sums round otherwise)."""
    out = extraction_of(ROOT / "examples/models/cooperative.py", tmp_path_factory)  # a copy of the session's one
    kernels = [k for g in json.loads((out / "manifest.json").read_text())["graphs"] for k in g["kernels"]]
    assert [k["kind"] for k in kernels] == ["cooperative_reduction"] * 2, kernels
    for kernel in kernels:
        module = out / kernel["module"]
        text = module.read_text()
        assert 'grid = (config["RSPLIT"], triton.cdiv(' in text and "launch_cooperative_grid=True" in text
        assert "torch._inductor" not in text  # harvest's x_grid_barrier, constexpr_next_power_of_2 and if_mask
        done = run_check(module)
        assert done.returncode == 0 and "NOT COMPARED" not in done.stdout, done.stdout + done.stderr
        compared = [o for o, how in kernel["reference"]["outputs"].items() if how == "compared"]
        assert done.stdout.count("recorded: ok") == done.stdout.count("reference: ok") == len(compared) > 0
    assert any("'RSPLIT': 2" in (out / k["module"]).read_text() for k in kernels)  # a split ran
    module = out / next(k["module"] for k in kernels if "var_mean" in k["name"])
    text = module.read_text()
    assert "'RSPLIT': 1" in text and "welford" in text
    module.write_text(text.replace("'RSPLIT': 1", "'RSPLIT': 4"))
    done = run_check(module)  # (the record, made with RSPLIT 1, differs in the last bits: other partial sums)
    assert done.stdout.count("reference: ok") == 3, done.stdout + done.stderr
    assert "values differ (bit for bit)" in done.stdout and "(all within torch.float32's tolerance" in done.stdout


def test_a_kernel_whose_config_inductor_fixed_becomes_a_module_on_both_paths(tmp_path):
    """examples/models/fixed_config.py: a choices handler fixes every kernel's config at compile time
    (`@triton_heuristics.fixed_config(config={...})`, a `triton_unk_` name that says no kind). The kernel becomes a
    module (it was refused: "unsupported heuristic"), its kind told by its parameters, checked against the record
    and eager; its output_code read alone as an artifact takes the decorator's config and checks on made-up inputs."""
    done = harvest("extract", str(ROOT / "examples/models/fixed_config.py"), "-o", "out", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (kernel,) = [k for g in json.loads((tmp_path / "out/manifest.json").read_text())["graphs"] for k in g["kernels"]]
    assert (kernel["kind"], kernel["standalone_reason"]) == ("reduction", None)
    done = run_check(tmp_path / "out" / kernel["module"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("recorded: ok") == done.stdout.count("reference: ok") == 2, done.stdout
    raw = tmp_path / "out/raw/g0_inference/output_code.py"
    done = harvest("extract", str(raw), "-o", "art", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    module = tmp_path / "art" / kernel["module"]
    assert "CONFIG = {'BLOCK_ROWS': 4, 'BLOCK_COLS': 256, 'num_warps': 2, 'num_stages': 3}  # fixed by Inductor" in module.read_text()
    done = run_check(module)
    assert done.returncode == 0 and done.stdout.count("reference: ok") == 2, done.stdout + done.stderr
