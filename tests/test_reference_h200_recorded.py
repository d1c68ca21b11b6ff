"""The reference built from recorded graphs that only a GPU makes: three H200 captures (torch 2.11, triton 3.6) kept
as their raw/ (capture.json with each kernel's recorded graph, and output_code.py; the launch data left out),
replayed on this CPU. What the H200 does and the CPU path does not: batch norm's statistics as a split Welford
(each chunk's mean, m2 and weight, then a combine), split sums stored with the split as the last dim, a
convolution's bias added by the kernel that reads the library's output, and a mean split over a dynamic size.
A compiled AdamW step's foreach kernels and a split scan (triton_spl_*, with its workspace) become modules too.
Every kernel's every output must have a reference; the kernels small enough for the interpreter are checked
against it on made-up inputs (the H200's own --check against its record is in docs/benchmarks.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import CUDA_FIXTURES, ROOT, harvest, run_check

RECORDED = CUDA_FIXTURES / "recorded"
MODELS = ("conv_bn", "reference_reasons", "graph_break_recompile", "adamw_step", "scans")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> dict[str, tuple[dict, Path]]:
    found = {}
    for model in MODELS:
        source = tmp_path_factory.mktemp(model) / model
        shutil.copytree(RECORDED / model, source)
        out = source.parent / "out"
        done = harvest("extract", str(source), "-o", str(out), "-q", cwd=ROOT)
        assert done.returncode == 0, done.stderr
        found[model] = (json.loads((out / "manifest.json").read_text()), out)
    return found


def kernels(manifest: dict) -> list[dict]:
    return [k for g in manifest["graphs"] for k in g["kernels"]]


@pytest.mark.parametrize("model", MODELS)
def test_every_kernel_of_the_h200_capture_has_a_full_reference_from_its_recorded_graph(replayed, model):
    manifest, _ = replayed[model]
    made = [k for k in kernels(manifest) if k["module"]]
    assert made and len(made) == len(kernels(manifest))
    assert manifest["references"] == {"full": len(made), "partial": 0, "none": 0, "from_recorded_graph": len(made)}
    for kernel in made:  # (a workspace is no output of the graph: "scratch: ...", the split scan's)
        assert all(v == "compared" or v.startswith("scratch: ") for v in kernel["reference"]["outputs"].values()), kernel


def module_of(replayed, model: str, inductor_name: str) -> Path:
    """The module of `inductor_name` ("g6_forward/triton_...": the one of that graph; else the first)."""
    manifest, out = replayed[model]
    graph, _, name = inductor_name.rpartition("/")
    kernel = next(k for k in kernels(manifest) if k["name"] == name and k["module"].startswith(graph))
    return out / kernel["module"]


# (model, Inductor's kernel, what its reference must do, the check's line for one output)
CHECKED = [
    ("conv_bn", "triton_per_fused__native_batch_norm_legit_functional_copy__2",
     "var_mean_m2 = ", "rstd_ptr: reference: ok (32 values"),  # the Welford combine, on made-up counts
    ("conv_bn", "triton_per_fused_native_batch_norm_backward_threshold_backward_6",
     "along dim [1]", "out_ptr: reference: ok (32 values"),  # a (32, 32) buffer of partials, split along the last dim
    ("reference_reasons", "triton_per_fused__native_batch_norm_legit_functional_convolution_copy__relu_1",
     "convolution_bias", "maximum_ptr: reference: ok (1024 values"),  # the bias the kernel adds to the library's conv
    ("graph_break_recompile", "g6_forward/triton_per_fused_add_copy__mean_mul_1",
     "divides by s75", "mean_ptr: reference: ok (2048 values"),  # a mean over a dynamic size, from partial sums
    ("graph_break_recompile", "g6_forward/triton_red_fused_mean_0",
     "s75 times mean", "out_ptr: reference: ok (2048 values"),  # and the partial sums themselves
    ("adamw_step", "triton_for_fused_0",  # a compiled AdamW's foreach kernel: the step counts, += 1 in place
     "_foreach_add.Scalar(", "out_3_ptr: reference: ok (1 values"),
]


@pytest.mark.parametrize("model, inductor_name, in_reference, check_line", CHECKED, ids=[c[1] for c in CHECKED])
def test_an_h200_kernel_checks_against_its_reference_on_the_cpu(replayed, model, inductor_name, in_reference,
                                                                  check_line):
    module = module_of(replayed, model, inductor_name)
    text = module.read_text()
    assert in_reference in text[text.index("def reference("):text.index("UNCHECKED = ")]
    assert "UNCHECKED = {}" in text
    done = run_check(module)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "made-up inputs" in done.stdout and check_line in done.stdout, done.stdout
    assert "NOT COMPARED" not in done.stdout and "not computed" not in done.stdout


def test_a_split_welfords_first_stage_is_checked_by_combining_its_three_partial_buffers(replayed):
    """The first stage stores each chunk's mean, m2 and weight (32 chunks of 8192 values per channel): the check
    combines the three with Chan's formula and compares with the var_mean of the whole. The kernel is H200-sized
    (8M values: minutes in the interpreter), so here the reference and the harness's combine are run on what the
    kernel computes, from torch, on the launch's own shapes."""
    import torch

    from harvest.module.render import harness_source

    module = module_of(replayed, "conv_bn", "triton_red_fused__native_batch_norm_legit_functional_1")
    text = module.read_text()
    assert "Split Welford, stage 1" in text and '"reduce": "welford"' in text and "UNCHECKED = {}" in text
    namespace: dict = {}
    # harvest's own generated sources (the harness, then the module's reference function), run in a test
    exec(compile(harness_source([]), "harness.py", "exec"), namespace)
    start, end = text.index("def reference("), text.index("\nRECORD = ")
    exec(compile(text[start:end], str(module), "exec"), namespace)
    x = torch.randn(64, 32, 64, 64)  # the convolution's output, as ARGUMENTS gives it
    expected = namespace["reference"](x)
    # The kernel's partials: channel c, chunk k = batch items 2k and 2k + 1 (8192 values), stored (1, 32, 1, 1, 32).
    chunks = x.reshape(32, 2, 32, 4096).permute(2, 0, 1, 3).reshape(32, 32, 8192)
    means = chunks.mean(-1)
    m2s = ((chunks - means[..., None]) ** 2).sum(-1)
    weights = torch.full_like(means, 8192.0)
    parts = tuple(t.reshape(1, 32, 1, 1, 32) for t in (means, m2s, weights))
    for param in ("out_ptr", "out_1_ptr", "out_2_ptr"):
        split = expected[param]
        assert split["reduce"] == "welford" and split["of"] == ["out_ptr", "out_1_ptr", "out_2_ptr"]
        assert namespace["compare"](param, parts, split, "reference"), param
    wrong = (parts[0], parts[1] * 1.01, parts[2])  # a kernel whose m2 is 1 % off must fail
    assert not namespace["compare"]("out_1_ptr", wrong, expected["out_1_ptr"], "reference")


def test_the_adamw_update_reads_the_step_count_the_first_kernel_updated(replayed):
    """The second foreach kernel reads the step counts after the first kernel's in-place += 1: its reference takes
    them as that update's values (the getitems of _foreach_add), never adds 1 again."""
    text = module_of(replayed, "adamw_step", "triton_for_fused_1").read_text()
    reference = text[text.index("def reference("):text.index("UNCHECKED = ")]
    assert "_foreach_add.Scalar([arg7_1" not in reference and "getitem = " in reference
    assert "torch.ops.aten._foreach_add.List(" in reference  # exp_avg.lerp_ written out of place


def test_a_split_scan_module_zeroes_its_workspace_and_compares_with_tolerances(replayed):
    text = module_of(replayed, "scans", "triton_spl_fused_cumsum_2").read_text()
    launch = text[text.index("def launch("):text.index("ARGUMENTS = ")]
    assert "ws_ptr.zero_()" in launch and "ws_ptr" not in text[text.index("OUTPUTS = "):].split("\n")[0]
    assert "EXACT_POSSIBLE = False" in text  # the look-back adds its predecessors in the order they finish
    assert '"reduce": "scan"' in text and "torch.ops.aten.cumsum.default(" in text
