"""A graph's extraction is a frozen value (module.pool.GraphResult), and manifest.py spells it as manifest.json's entry."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import FIXTURES

from harvest.capture.target import classify, read_artifact
from harvest.manifest import kernel_json
from harvest.module.pool import GraphResult, finish_graph, plan_graph, render_all
from harvest.writer import sha256

GPT2_FORWARD = FIXTURES / "torch-2.11.0+cu130_triton-3.6.0" / "models" / "gpt2" / "g0_forward.py"


@pytest.fixture(scope="module")
def gpt2_forward() -> GraphResult:
    capture = read_artifact(classify(GPT2_FORWARD))
    said: list[str] = []
    plan = plan_graph(capture.graphs[0], capture, "readable")
    done = finish_graph(plan, capture, render_all(capture, "readable", list(plan.jobs)), said.append)
    assert said == [f"{capture.graphs[0].name}: 14 Triton kernels, 14 standalone modules, 14 extern calls"]
    return done


def test_a_graph_result_is_frozen_and_its_files_are_the_modules_its_entry_names(gpt2_forward):
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpt2_forward.files = {}  # type: ignore[misc]
    kernels = gpt2_forward.entry["kernels"]
    named = {k["module"]: k["sha256"] for k in kernels if k["module"] is not None}
    assert named == {path: sha256(source) for path, source in gpt2_forward.files.items()}
    assert list(gpt2_forward.files) == [k["module"] for k in kernels if k["module"] is not None]  # in kernel order
    assert gpt2_forward.skipped == tuple((k["name"], k["standalone_reason"]) for k in kernels if k["standalone_reason"])


def test_manifest_keys_keep_their_order(gpt2_forward):
    """manifest.json is written without sorting keys: the order here is the order on disk."""
    entry = gpt2_forward.entry
    assert list(entry) == ["name", "role", "aot_id", "compile_id", "raw", "raw_sha256", "kernels", "externs", "launches",
                           "unparsed", "fusion"]
    assert list(entry["kernels"][0]) == ["name", "display_name", "kind", "module", "sha256", "standalone_reason",
                                         "launches", "autotune", "fusion", "recorded", "reference", "launch_params"]
    assert kernel_json.__module__ == "harvest.manifest"
