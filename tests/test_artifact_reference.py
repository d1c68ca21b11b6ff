"""H200 output_code read as artifacts, on this CPU: no run, so no record and no recorded graph; the eager reference
is built from each kernel's `# Graph fragment:` comment and the wrapper's text. Every kernel becomes a module (a
library call's output takes its layout from the `assert_size_stride` after it, a size from the symbols it is
computed from, a mix-order reduction Inductor's split config), and every output the kernel writes is compared by
the reference, where the comment says how to compute it: look-alike outputs and inputs are told apart by how both
sides compute them (harvest/reference/structure.py). The bindings agree with the ones the recorded graph gives for
the same kernels, and the modules pass --check under the interpreter on made-up inputs (in seconds: artifact
configs take large blocks, and the interpreter folds a reduction's combine for all outputs at once)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CUDA_FIXTURES, ROOT, harvest, kernels, run_check, run_command

from harvest.imports import import_file

MODELS = CUDA_FIXTURES / "models"
# (graph fixture, outputs its kernels write): the forward graphs of three models, whose every output is compared,
# and backward graphs with a mix-order reduction (its workspace's rows, two column sums in one), a Welford m2 read
# by the kernel after the statistics', and an embedding's atomic scatter.
GRAPHS = {
    "gpt2/g0_forward": 39,
    "transformer_encoder/g0_forward": 16,
    "conv_bn/g0_forward": 18,
    "bf16_mlp/g1_backward": 4,
    "transformer_encoder/g1_backward": 15,
    "embedding_ce/g1_backward": 3,
    "graph_break_recompile/g7_backward": 3,  # a mean's backward under dynamic shapes: SymInts the comment never lists
}


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> dict[str, tuple[dict, Path]]:
    found = {}
    for graph in GRAPHS:
        out = tmp_path_factory.mktemp(graph.replace("/", "-")) / "out"
        done = harvest("extract", str(MODELS / f"{graph}.py"), "-o", str(out), "-q", cwd=ROOT)
        assert done.returncode == 0, done.stderr
        found[graph] = (json.loads((out / "manifest.json").read_text()), out)
    return found


@pytest.mark.parametrize("graph", GRAPHS)
def test_every_kernel_of_an_h200_artifact_is_a_module_and_every_output_is_compared(artifacts, graph):
    manifest, _ = artifacts[graph]
    assert all(k["module"] for k in kernels(manifest)), [k["standalone_reason"] for k in kernels(manifest)]
    outputs = {f"{k['name']}:{o}": v for k in kernels(manifest) for o, v in k["reference"]["outputs"].items()}
    assert {o: v for o, v in outputs.items() if v != "compared"} == {}
    assert len(outputs) == GRAPHS[graph]
    assert manifest["references"]["full"] == len(kernels(manifest))


def module_of(artifacts, graph: str, inductor_name: str) -> Path:
    manifest, out = artifacts[graph]
    return out / next(k["module"] for k in kernels(manifest) if k["name"] == inductor_name)


# (graph, Inductor's kernel, what the reference must say, a line --check prints): each checks on made-up inputs.
CHECKED = [
    ("gpt2/g0_forward", "triton_poi_fused_addmm_cat_clone_split_transpose_view_3",
     "getitem_3 = split[1]", "out_1_ptr: reference: ok"),  # the key of a q/k/v split, told from the graph's kernels
    ("conv_bn/g0_forward", "triton_poi_fused__native_batch_norm_legit_functional_relu_3",
     "getitem = torch.ops.aten.div.Tensor(buf5, 262144)", "out_ptr: reference: ok"),  # the variance from the m2 read
    ("bf16_mlp/g1_backward", "triton_poi_fused_mul_silu_silu_backward_0",
     "mul_3 = torch.ops.aten.mul.Tensor(mm_4, ", "out_ptr: reference: ok"),  # three look-alike bf16 inputs placed
    ("embedding_ce/g1_backward", "triton_poi_fused_embedding_dense_backward_nll_loss_forward_tanh_backward_view_2",
     "index_put_.default(full_default_8, ", "out_ptr: reference: ok"),  # atomically added into, from its own value
    # `expand(tangents_1, [%primals_1, 2048])` and `div.Scalar(%expand, %mul_7)`: primals_1 is s75 (the wrapper's
    # `s75 = primals_1`); mul_7 is defined nowhere, and is the kernel's one size expression used as a value
    ("graph_break_recompile/g7_backward", "triton_poi_fused_add_div_expand_mul_pow_sub_unsqueeze_view_2",
     "div = torch.ops.aten.div.Scalar(expand, 2048 * s75)", "out_ptr: reference: ok"),
    ("graph_break_recompile/g7_backward", "triton_red_fused_div_expand_mul_neg_pow_sub_sum_0",
     "expand = torch.ops.aten.expand.default(tangents_1, [s75, 2048])", "out_ptr: reference: ok"),
]


@pytest.mark.parametrize("graph, inductor_name, in_reference, check_line", CHECKED, ids=[c[1][:60] for c in CHECKED])
def test_an_artifact_module_checks_against_its_reference_on_made_up_inputs(artifacts, graph, inductor_name,
                                                                          in_reference, check_line):
    module = module_of(artifacts, graph, inductor_name)
    text = module.read_text()
    assert in_reference in text[text.index("def reference("):text.index("RECORD = ")]
    done = run_check(module)
    assert done.returncode == 0, done.stdout + done.stderr
    assert check_line in done.stdout and "made-up inputs" in done.stdout


def stored_nodes(module: Path, launch_params: list) -> dict[str, str]:
    """Inductor's parameter -> what the module's reference returns for it (its last line, read as text)."""
    text = module.read_text()
    returned = text[text.index("def reference("):text.index("RECORD = ")].rstrip().splitlines()[-1]
    to_inductor = {new: old for old, new in launch_params if new}
    found = {}
    for name, value in re.findall(r'"(\w+)": (\{[^}]*\}|[\w.]+)', returned):
        inner = re.search(r'"expected": (\w+)', value)
        found[to_inductor.get(name, name)] = inner.group(1) if inner else value
    return found


BOUND = {"conv_bn": 27, "reference_reasons": 22, "graph_break_recompile": 34}  # outputs bound both ways, at least


@pytest.mark.parametrize("model", BOUND)
def test_the_comment_binds_what_the_recorded_graph_binds(tmp_path, model):
    """Each H200 recorded capture replayed twice: with its recorded graph (exact bindings) and its output_code.py
    alone (bound from the comment). Every output the comment binds, it binds to the node the record names (or the
    copy_ that writes that node into a graph input, which is the same value)."""
    source = tmp_path / model
    shutil.copytree(CUDA_FIXTURES / "recorded" / model, source)
    done = harvest("extract", str(source), "-o", str(tmp_path / "recorded"), "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    recorded = json.loads((tmp_path / "recorded" / "manifest.json").read_text())
    compared = 0
    for graph in recorded["graphs"]:
        out = tmp_path / graph["name"]
        done = harvest("extract", str(source / "raw" / graph["name"] / "output_code.py"), "-o", str(out), "-q", cwd=ROOT)
        assert done.returncode == 0, done.stderr
        artifact = {k["name"]: k for k in kernels(json.loads((out / "manifest.json").read_text()))}
        for kernel in graph["kernels"]:
            theirs = artifact[kernel["name"]]
            truth = stored_nodes(tmp_path / "recorded" / kernel["module"], kernel["launch_params"])
            bound = stored_nodes(out / theirs["module"], theirs["launch_params"])
            for param, node in bound.items():
                if re.fullmatch(r"copy__?\d*", truth.get(param, "")) and not node.startswith("copy_"):
                    continue  # (the record names the copy_ into the input; the comment its value)
                assert truth.get(param) == node or node.endswith("_count") and truth.get(param, "").endswith("_count"), \
                    (graph["name"], kernel["name"], param, truth.get(param), node)
                compared += 1
    assert compared >= BOUND[model], compared


SOFTMAX = "triton_per_fused__softmax_add_arange_exp_expand_le_lift_fresh_mul_native_dropout_prepare_softmax_online_scalar_tensor_sub_unsqueeze_view_where_6"


def run_shrunk(module: Path, count: str) -> subprocess.CompletedProcess:
    return run_command([sys.executable, str(module), "--check", "--shrink", count], module.parent,
                       dict(os.environ, TRITON_INTERPRET="1"), 600)


def test_shrink_runs_a_sample_of_the_grid_and_compares_what_it_wrote(artifacts, tmp_path):
    """gpt2's attention softmax (2048 programs of 32 x 256 at H200 size: 86 s under the interpreter) with --shrink 4:
    four programs run, the first and the last among them, and the 4 x 32 rows they wrote are compared; an edit that
    breaks the values fails the same quick check."""
    module = module_of(artifacts, "gpt2/g0_forward", SOFTMAX)
    done = run_shrunk(module, "4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--shrink: ran 4 of the grid's 2048 programs" in done.stdout
    assert "out_ptr: reference: ok (32768 of 16777216 values, those the programs --shrink ran wrote" in done.stdout
    shutil.copytree(module.parent.parent, tmp_path / "x")
    broken = tmp_path / "x" / module.parent.name / module.name
    text = broken.read_text()
    assert "tl.store(out_ptr + (cols + 256*rows), mul_2, None)" in text
    broken.write_text(text.replace("tl.store(out_ptr + (cols + 256*rows), mul_2, None)",
                                   "tl.store(out_ptr + (cols + 256*rows), mul_2 * 1.5, None)"))
    done = run_shrunk(broken, "4")
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"out_ptr: reference: \d+ of 32768 of 16777216 values, those the programs --shrink ran wrote differ",
                     done.stdout), done.stdout


def test_shrink_leaves_partials_of_left_out_programs_to_the_full_check(artifacts):
    """A mix-order layer-norm backward: its output rows are compared from the sampled programs, its workspace (each
    value a sum over every program's partial row) is said to need the whole grid, without failing the check."""
    module = module_of(artifacts, "transformer_encoder/g1_backward", "triton_per_fused_add_native_layer_norm_backward_view_5")
    done = run_shrunk(module, "4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "out_ptr: reference: ok (" in done.stdout and "those the programs --shrink ran wrote" in done.stdout
    assert "ws_ptr: reference: not compared under --shrink" in done.stdout
    assert "check without --shrink for a full check" in done.stdout


def test_shrink_runs_the_whole_grid_of_a_kernel_that_adds_with_atomics(artifacts):
    module = module_of(artifacts, "embedding_ce/g1_backward",
                       "triton_poi_fused_embedding_dense_backward_nll_loss_forward_tanh_backward_view_2")
    done = run_shrunk(module, "4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--shrink: not used: its programs add into the same outputs with atomics" in done.stdout
    assert "out_ptr: reference: ok (" in done.stdout and "--shrink ran wrote" not in done.stdout
    done = run_shrunk(module, "0")
    assert done.returncode == 2 and "--shrink 0: give the number of programs to run, 1 or more" in done.stderr


def test_shrink_says_when_this_tritons_interpreter_cannot_be_sampled(artifacts, monkeypatch):
    """--shrink stands in for parts of Triton's interpreter (the grid loop's function, the masked store, the grid
    index the builder keeps). A Triton whose interpreter lacks one of them gets one line naming it, and check() runs
    the whole grid: GridSample.unsupported() of the extraction's harness.py, with each part taken away in turn."""

    from triton.runtime import interpreter

    _, out = artifacts["graph_break_recompile/g7_backward"]
    harness = import_file(out / "harness.py", "g7_harness")
    assert harness.GridSample.unsupported() == ""
    assert "or GridSample.unsupported()" in (out / "harness.py").read_text()  # what check() asks before sampling
    for owner, name, said in ((interpreter.InterpreterBuilder, "create_masked_store", "InterpreterBuilder.create_masked_store"),
                              (interpreter.InterpreterBuilder, "set_grid_idx", "InterpreterBuilder.set_grid_idx"),
                              (interpreter, "GridExecutor", "GridExecutor")):
        with monkeypatch.context() as patch:
            patch.delattr(owner, name)
            assert re.fullmatch(rf"this Triton \(\S+\)'s interpreter has no {re.escape(said)}", harness.GridSample.unsupported())
