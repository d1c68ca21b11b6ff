"""The CUDA twin: translation of real extracted kernels, `harvest twin` on an extraction, nvcc on every twin.

Running the twins needs a GPU (scripts/gpu_twins.sh checks all of them on the H200 against the run's record);
here every twin is translated from real kernel modules and compiled with the real nvcc.
"""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CUDA_FIXTURES, EXAMPLES, ROOT, harvest

from harvest.errors import NoDeviceError
from harvest.twin import NoTwin, read_module, translate

SHOWCASE = ROOT / "extracted" / "h200"
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")


def ptx_of(cuda: str, tmp_path: Path, name: str = "twin") -> str:
    source = tmp_path / f"{name}.cu"
    source.write_text(cuda)
    result = subprocess.run([NVCC, "-ptx", "-arch=sm_90", "-o", str(tmp_path / f"{name}.ptx"), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return (tmp_path / f"{name}.ptx").read_text()


def module_text(relative: str) -> str:
    return (SHOWCASE / relative).read_text(encoding="utf-8")


@needs_nvcc
def test_square_twin_moves_16_bytes_per_access(tmp_path):
    twin = translate(read_module(module_text("square_square/g0_inference/square_square_kernel.py")))
    assert twin.shape == "pointwise" and twin.params == ("a_ptr", "out_ptr", "n_elements")
    assert 'extern "C" __global__ void square_square_kernel(' in twin.cuda
    assert "hv::load_vector(a_ptr + hv_base" in twin.cuda and "hv::store_vector(out_ptr + hv_base" in twin.cuda
    ptx = ptx_of(twin.cuda, tmp_path)
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx
    assert "void launch(torch::Tensor a_ptr, torch::Tensor out_ptr, int64_t n_elements);" == twin.declaration
    assert "square_square_kernel<<<" in twin.launcher


@needs_nvcc
def test_layer_norm_twin_reduces_rows_with_shuffles(tmp_path):
    twin = translate(read_module(module_text("small_model/g0_forward/layer_norm_fwd_kernel.py")))
    assert twin.shape == "reduction"
    assert twin.cuda.count("hv::block_reduce(") == 2  # mean, then variance: each its own pass over the row
    assert "rsqrtf(" in twin.cuda  # libdevice.rsqrt: the accurate function
    ptx = ptx_of(twin.cuda, tmp_path)
    assert "shfl.sync.bfly" in ptx and "bar.sync" in ptx


def test_unsupported_kernel_gets_a_reason_not_a_twin():
    text = module_text("square_square/g0_inference/square_square_kernel.py").replace("square = a * a", "square = tl.cumsum(a, 0)")
    with pytest.raises(NoTwin, match=r"uses tl\.cumsum"):
        translate(read_module(text))


def test_last_value_accumulator_is_refused():
    """A loop-carried value that is not folded by the combine its final reduction undoes cannot be split across
    threads: the twin must refuse it rather than compute something else."""
    text = module_text("small_model/g1_backward/add_sum_kernel.py")
    last_value = text.replace("total_acc = tl.where(col_mask, add, total_acc)", "total_acc = tl.where(col_mask, broadcast, total_acc)")
    assert last_value != text
    translate(read_module(text))  # the sum itself translates
    with pytest.raises(NoTwin, match="accumulator total_acc"):
        translate(read_module(last_value))


def test_literal_grid_counts_programs_times_block():
    text = module_text("small_model/g0_forward/layer_norm_fwd_kernel.py")
    literal = text.replace('grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)', "grid = (1024,)")
    assert literal != text
    twin = translate(read_module(literal))
    assert "const int64_t hv_rows = int64_t(2048);" in twin.launcher  # 1024 programs x BLOCK_ROWS 2


def test_module_without_arguments_table_is_refused():
    text = module_text("square_square/g0_inference/square_square_kernel.py").replace("ARGUMENTS = {", "INPUTS = {")
    with pytest.raises(NoTwin, match=r"not one harvest can read \(no ARGUMENTS = \.\.\."):
        translate(read_module(text))
    with pytest.raises(NoTwin, match="no '# >>> kernel' line"):
        translate(read_module("import triton\n@triton.jit\ndef k(x_ptr):\n    pass\n"))


@needs_nvcc
def test_harvest_twin_writes_twins_manifest_and_report(tmp_path):
    out = tmp_path / "small_model"
    shutil.copytree(SHOWCASE / "small_model", out)
    result = harvest("twin", str(out), cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "reduction: 9 of 9 translated" in result.stderr and "pointwise: 4 of 4 translated" in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    entries = [k["twin"] for g in manifest["graphs"] for k in g["kernels"]]
    assert all(e["status"] == "ok" and e["nvcc"] == "compiles for sm_90" for e in entries)
    cu = out / "g0_forward" / "twin" / "softmax_kernel.cu"
    module = out / "g0_forward" / "twin" / "softmax_kernel_twin.py"
    assert cu.is_file() and module.is_file()
    assert manifest["generated_files"]["g0_forward/twin/softmax_kernel.cu"]
    assert "CUDA twins" in (out / "report.md").read_text()
    # without a GPU the twin module says so in one line
    run = subprocess.run([sys.executable, str(module)], capture_output=True, text=True, cwd=out)
    assert run.returncode == NoDeviceError.exit_code and "needs a GPU" in run.stderr
    # a hand-edited twin is kept
    cu.write_text(cu.read_text() + "// tuned by hand\n")
    again = harvest("twin", str(out), "--no-compile", cwd=ROOT)
    assert again.returncode == 0 and "kept your edited" in again.stderr
    assert cu.read_text().endswith("// tuned by hand\n")
    # the same input twice gives the same bytes
    first = (out / "g0_forward" / "twin" / "layer_norm_fwd_kernel.cu").read_bytes()
    harvest("twin", str(out / "g0_forward" / "layer_norm_fwd_kernel.py"), "--no-compile", cwd=ROOT)
    assert (out / "g0_forward" / "twin" / "layer_norm_fwd_kernel.cu").read_bytes() == first
    assert cu.read_text().endswith("// tuned by hand\n")  # another kernel's twin untouched


def test_a_twin_module_without_a_gpu_exits_9_as_harvest_documents_it(tmp_path):
    """Its --check exited 1 without a GPU while a kernel module's --bench exited 9: one code says "needs a GPU"."""
    import torch

    assert not torch.cuda.is_available(), "this test is about a machine without a GPU"
    out = tmp_path / "square_square"
    assert harvest("extract", str(EXAMPLES / "square_square.py"), "-o", str(out), "-q", cwd=tmp_path).returncode == 0
    assert harvest("twin", str(out), "--no-compile", cwd=tmp_path).returncode == 0
    [module] = out.glob("g0_inference/twin/*_twin.py")
    for flags in (["--check"], ["--bench"], []):
        run = subprocess.run([sys.executable, str(module), *flags], capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert run.returncode == NoDeviceError.exit_code == 9, (flags, run.stdout, run.stderr)
        assert run.stdout == "" and run.stderr.startswith("the CUDA twin needs a GPU to run (torch sees no CUDA device)")
        assert run.stderr.count("\n") == 1, run.stderr
    documented = harvest("--help", cwd=tmp_path).stdout
    assert "9 NoDeviceError (needs a GPU)" in documented.splitlines()[-1]


def test_twin_of_a_path_outside_an_extraction_is_a_usage_error(tmp_path):
    result = harvest("twin", str(tmp_path), cwd=ROOT)
    assert result.returncode == 2 and "not inside an extraction" in result.stderr


@pytest.mark.slow
@needs_nvcc
def test_every_kernel_of_the_real_models_gets_a_twin_that_compiles(tmp_path):
    """The six real models' CUDA output_code (captured on the H200) read as artifacts; every kernel's twin is
    written and compiled by nvcc, or has a reason."""
    graphs = sorted((CUDA_FIXTURES / "models").glob("*/*.py"))

    def extract_and_twin(graph: Path) -> tuple[Path, subprocess.CompletedProcess, subprocess.CompletedProcess | None]:
        out = tmp_path / f"{graph.parent.name}_{graph.stem}"
        extracted = harvest("extract", str(graph), "-o", str(out), "-q", cwd=ROOT)
        return out, extracted, harvest("twin", str(out), "-q", cwd=ROOT) if extracted.returncode == 0 else None

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:  # two processes at a time: CI has 2 cores
        results = list(pool.map(extract_and_twin, graphs))
    counts: dict[str, list[int]] = {}
    for graph, (out, extracted, twinned) in zip(graphs, results):
        assert extracted.returncode == 0, extracted.stderr
        assert twinned is not None and twinned.returncode == 0, twinned.stderr if twinned else ""
        manifest = json.loads((out / "manifest.json").read_text())
        for kernel in (k for g in manifest["graphs"] for k in g["kernels"] if k.get("module")):
            kind = "pointwise" if kernel["kind"] == "pointwise" else "reduction"
            row = counts.setdefault(kind, [0, 0])
            row[0] += 1
            row[1] += kernel["twin"]["status"] == "ok"
            assert kernel["twin"]["status"] in ("ok", "no twin"), kernel["twin"]
        if (graph.parent.name, graph.stem) == ("graph_break_recompile", "g2_backward"):
            # an outer sum whose per-row load (mean[row % 2048]) does not vote: 32 rows per block
            assert "hv::column_reduce(" in (out / "g0_backward/twin/div_sub_pow_sum_kernel.cu").read_text()
    print(counts)
    assert counts["pointwise"][0] == counts["pointwise"][1]
    assert counts["reduction"][1] >= 0.8 * counts["reduction"][0]


@needs_nvcc
def test_outer_reduction_takes_32_rows_per_block(tmp_path):
    """A sum over the outer dimension (add_sum: row stride 1, reduced stride 512) puts 32 neighbouring rows on
    threadIdx.x so the loads coalesce, and combines each row's partials through shared memory."""
    twin = translate(read_module(module_text("small_model/g1_backward/add_sum_kernel.py")))
    assert "hv::column_reduce(total_acc, hv::Sum())" in twin.cuda
    assert "if (threadIdx.y == 0 && hv_row_ok) out_ptr[rows] = total;" in twin.cuda
    assert "const dim3 hv_threads(32, hv_lanes);" in twin.launcher
    ptx_of(twin.cuda, tmp_path)
    inner = translate(read_module(module_text("small_model/g0_forward/softmax_kernel.py")))
    assert "hv::block_reduce(" in inner.cuda and "column_reduce" not in inner.cuda


@needs_nvcc
def test_outer_reduction_with_a_dynamic_size_in_its_address_still_takes_32_rows_per_block(tmp_path):
    """graph_break_recompile's recompiled backward (dynamic shapes) on the CPU path, the module harvest wrote for it
    (in the lean module format).
    On the H200 Inductor split the same sum and put the run-time size in the address (`2048*x1*((15 + ks0) // 16)`,
    tests/fixtures/torch-2.11.0+cu130_triton-3.6.0/models/graph_break_recompile/g7_backward.py); that form is put in
    here. A size known only at run time gets a stand-in value when the mapping is chosen: strides decide it."""
    text = (ROOT / "tests/fixtures/twin/dynamic_outer_sum_kernel.py").read_text()
    assert "a_ptr + (rows + 32*cols)" in text
    twin = translate(read_module(text.replace("a_ptr + (rows + 32*cols)", "a_ptr + (rows + 32*cols + 32*cols*((15 + size_0) // 16))")))
    assert "hv::column_reduce(total_acc, hv::Sum())" in twin.cuda
    ptx_of(twin.cuda, tmp_path)
