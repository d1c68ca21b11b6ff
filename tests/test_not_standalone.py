"""Kernels harvest cannot make standalone (here a real foreach/combo kernel) are listed with the reason and their raw
source kept; the other kernels of the same target are still extracted and checked. Never a crash."""

import json
import os
import subprocess
import sys

from conftest import ROOT

TARGET = """\
import torch

def step(xs, ys, z):
    return torch._foreach_add(xs, ys), torch.relu(z) * 2

compiled = torch.compile(step)
xs, ys = [torch.randn(8), torch.randn(16)], [torch.randn(8), torch.randn(16)]
compiled(xs, ys, torch.randn(32))
"""


def test_foreach_kernel_is_listed_with_its_reason_and_the_rest_is_extracted(tmp_path):
    (tmp_path / "foreach_target.py").write_text(TARGET)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "harvest", "extract", "foreach_target.py", "-o", "out"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    kernels = {k["name"]: k for g in manifest["graphs"] for k in g["kernels"]}
    foreach = [k for name, k in kernels.items() if name.startswith("triton_for_")]
    assert len(foreach) == 1, sorted(kernels)
    assert foreach[0]["module"] is None and "foreach" in foreach[0]["standalone_reason"]
    assert "not standalone" in done.stderr and foreach[0]["name"] in done.stderr  # the summary says so
    raw = (tmp_path / "out" / manifest["graphs"][0]["raw"]).read_text()
    assert f"{foreach[0]['name']} = async_compile.triton(" in raw  # its source is kept
    others = [k for k in kernels.values() if k["module"]]
    assert others, "the pointwise kernel next to it must still be extracted"
    for kernel in others:
        check = subprocess.run(
            [sys.executable, str(tmp_path / "out" / kernel["module"]), "--check"],
            env=dict(env, TRITON_INTERPRET="1"), capture_output=True, text=True, timeout=300,
        )
        assert check.returncode == 0, check.stdout + check.stderr
    assert foreach[0]["name"] in (tmp_path / "out/report.md").read_text()
