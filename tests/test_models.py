"""A real model end to end on the CPU path: graph breaks, a recompile on a new shape (dynamic sizes), in-place updates
of inputs and buffers, forward and backward (examples/models/graph_break_recompile.py). Every kernel must become a
module whose --check compares every output it writes with the run's record, and passes.

The other real models (examples/models/) are run by scripts/model_matrix.py, on the CPU and on the H200; their
figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import EXAMPLES, harvest, kernels, run_check

MODEL = EXAMPLES / "models" / "graph_break_recompile.py"


@pytest.mark.slow  # ~40 s: 16 graphs captured, 28 modules checked
def test_graph_breaks_recompiles_and_in_place_updates_all_check_against_the_record(tmp_path):
    proc = harvest("extract", str(MODEL), "-o", "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    found = kernels(manifest)
    assert len(manifest["graphs"]) >= 8 and len(found) >= 20  # several graphs: breaks and a recompile
    assert all(k["module"] for k in found), [k["standalone_reason"] for k in found if not k["module"]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda k: (k, run_check(tmp_path / "out" / k["module"])), found))
    failed = [f"{k['module']}:\n{p.stdout}{p.stderr[-800:]}" for k, p in results if p.returncode != 0]
    assert not failed, "\n".join(failed)
    for _, proc in results:
        assert "(recorded inputs)" in proc.stdout and "NOT COMPARED" not in proc.stdout
        assert re.search(r": recorded: ok \(", proc.stdout), proc.stdout
