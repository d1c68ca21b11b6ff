"""Kernel kinds beyond pointwise and reductions, on the CPU Triton path: a foreach (combo) kernel and a max-autotune
matmul template each become a module that checks every output against the run's record (bit for bit) and the eager
reference; a user-written @triton.jit kernel, which Dynamo cannot trace through the interpreter here, runs between
the graphs with one line saying so, and the graphs around it are extracted. (The H200's foreach, split-scan and
template kernels: tests/test_reference_h200_recorded.py and docs/benchmarks.md.)"""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, harvest, run_check

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


def extract(tmp_path, name: str, text: str) -> tuple[dict, object]:
    (tmp_path / f"{name}.py").write_text(text)
    done = harvest("extract", f"{name}.py", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "out/manifest.json").read_text()), done


@pytest.mark.parametrize("name, text, prefix, kind", [("foreach_target", FOREACH, "triton_for_", "foreach"),
                                                       ("template_target", TEMPLATE, "triton_tem_", "template")])
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
