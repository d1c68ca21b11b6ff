"""The CUDA twin: translation of real extracted kernels, `harvest twin` on an extraction, nvcc on every twin.

Running the twins needs a GPU (scripts/gpu/verify.sh twins checks all of them on the H200 against the run's record);
here every twin is translated from real kernel modules and compiled with the real nvcc.
"""

from __future__ import annotations

import ast
import concurrent.futures
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CUDA_FIXTURES, EXAMPLES, ROOT, extraction_of, harvest, nvcc_path, run_check

from harvest.errors import NoDeviceError, UsageError
from harvest.imports import import_file
from harvest.resources import load_template
from harvest.twin import NoTwin, TwinChoices, read_module, translate
from harvest.twin.body import program_offsets_apart, steps_within_groups
from harvest.twin.choices import DEFAULT_CHOICES
from harvest.twin.command import twin_module_text
from harvest.twin.cpp import Uses
from harvest.twin.helpers import HELPER_NEEDS, helpers_named, identifiers
from harvest.writer import sha256

NVCC = nvcc_path()


def ptx_of(cuda: str, tmp_path: Path, name: str = "twin") -> str:
    source = tmp_path / f"{name}.cu"
    source.write_text(cuda)
    result = subprocess.run([NVCC, "-ptx", "-arch=sm_90", "-o", str(tmp_path / f"{name}.ptx"), str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return (tmp_path / f"{name}.ptx").read_text()


def extract(factory, name: str) -> Path:
    """examples/NAME.py extracted on the CPU path (real Inductor Triton kernels, the run's record of every launch):
    a copy of the session's one extraction of it (conftest.extraction_of)."""
    return extraction_of(EXAMPLES / f"{name}.py", factory)


@pytest.fixture(scope="module")
def square_square(tmp_path_factory) -> Path:
    return extract(tmp_path_factory, "square_square")


def artifact(tmp_path_factory, graph: str) -> Path:
    """An H200 model graph of tests/fixtures (`gpt2/g1_forward`) extracted as an artifact, read without a run."""
    out = tmp_path_factory.mktemp(graph.replace("/", "_")) / "out"
    done = harvest("extract", str(CUDA_FIXTURES / "models" / f"{graph}.py"), "-o", str(out), "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def small_model(tmp_path_factory) -> Path:
    return extract(tmp_path_factory, "small_model")


@pytest.fixture(scope="module")
def small_twins(small_model, tmp_path_factory) -> Path:
    """A copy of the small model's extraction after `harvest twin` (every twin compiled by nvcc when it is here)."""
    out = tmp_path_factory.mktemp("twins") / "small_model"
    shutil.copytree(small_model, out)
    done = harvest("twin", str(out), *([] if NVCC else ["--no-compile"]), cwd=out.parent)
    assert done.returncode == 0, done.stderr
    return out


def twin_of(extraction: Path, module: str, edit: tuple[str, str] | None = None, choices: TwinChoices = DEFAULT_CHOICES):
    text = (extraction / module).read_text(encoding="utf-8")
    if edit:
        assert edit[0] in text, edit[0]
        text = text.replace(*edit)
    return translate(read_module(text, module), choices)


def cu_helpers(cuda: str) -> set[str]:
    """The hv:: helpers a .cu defines."""
    namespace = cuda[cuda.index("namespace hv {") : cuda.index("}  // namespace hv")] if "namespace hv {" in cuda else ""
    return {name for name in HELPER_NEEDS if re.search(rf"(struct {name}\b|\b{name}\()", namespace)}


@pytest.mark.requires_nvcc
def test_square_twin_moves_16_bytes_per_access(square_square, tmp_path):
    twin = twin_of(square_square, "g0_inference/square_square_kernel.py")
    assert twin.shape == "pointwise" and twin.params == ("a_ptr", "out_ptr", "n_elements")
    assert 'extern "C" __global__ void square_square_kernel(' in twin.cuda
    assert "hv::load_vector(a_ptr + hv_base" in twin.cuda and "hv::store_vector(out_ptr + hv_base" in twin.cuda
    ptx = ptx_of(twin.cuda, tmp_path)
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx
    assert "void launch(torch::Tensor a_ptr, torch::Tensor out_ptr, int64_t n_elements);" == twin.declaration
    assert "square_square_kernel<<<hv::pointwise_blocks(hv_numel, 256, 4), 256, 0," in twin.launcher
    # only the helpers it names: no reduction, no NaN-aware max, no cast
    assert cu_helpers(twin.cuda) == {"aligned16", "load_vector", "store_vector"}
    assert "shuffle_xor" not in twin.cuda and "block_reduce" not in twin.cuda and "struct Sum" not in twin.cuda


@pytest.mark.requires_nvcc
def test_layer_norm_twin_reduces_rows_with_shuffles(small_model, tmp_path):
    twin = twin_of(small_model, "g0_forward/layer_norm_fwd_kernel.py")
    assert twin.shape == "reduction"
    # a short row (32 values): one warp per row, mean then variance each a pass over the row, the row's values loaded
    # once and kept in registers for the passes after the first
    assert twin.cuda.count("hv::warp_reduce(") == 2
    assert "rsqrtf(" in twin.cuda  # libdevice.rsqrt: the accurate function
    assert cu_helpers(twin.cuda) == {"Sum", "shuffle_xor", "shuffle_first", "warp_reduce"}  # no block_reduce, Max, Welford, ...
    first_pass, later = twin.cuda.split("hv::warp_reduce(", 1)
    assert "hv_kept_a[hv_k] = a;" in first_pass and "const float a = hv_kept_a[hv_k];" in later
    assert "a_ptr[" in first_pass and "a_ptr[" not in later  # the row is read from memory once
    # the weight and bias the last pass needs are loaded with the row, in the first pass, as Triton loads them
    for name in ("weight", "bias"):
        assert f"{name}_ptr[" in first_pass and f"hv_kept_{name}[hv_k] = {name};" in first_pass
        assert f"{name}_ptr[" not in later and f"const float {name} = hv_kept_{name}[hv_k];" in later
    ptx = ptx_of(twin.cuda, tmp_path)
    assert "shfl.sync.bfly" in ptx and "shfl.sync.idx" in ptx and "bar.sync" not in ptx  # warp shuffles, no block barrier


def test_unsupported_kernel_gets_a_reason_not_a_twin(square_square):
    with pytest.raises(NoTwin, match=r"uses tl\.cumsum"):
        twin_of(square_square, "g0_inference/square_square_kernel.py", ("square = a * a", "square = tl.cumsum(a, 0)"))


def test_last_value_accumulator_is_refused():
    """A loop-carried value that is not folded by the combine its final reduction undoes cannot be split across
    threads: the twin must refuse it rather than compute something else."""
    text = (ROOT / "tests/fixtures/twin/dynamic_outer_sum_kernel.py").read_text()
    last_value = text.replace("total_acc = tl.where(col_mask & row_mask, add, total_acc)", "total_acc = tl.where(col_mask & row_mask, broadcast, total_acc)")
    assert last_value != text
    translate(read_module(text))  # the sum itself translates
    with pytest.raises(NoTwin, match="accumulator total_acc"):
        translate(read_module(last_value))


def test_literal_grid_counts_programs_times_block(small_model):
    twin = twin_of(small_model, "g0_forward/layer_norm_fwd_kernel.py", ('grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)', "grid = (1024,)"))
    block_rows = read_module((small_model / "g0_forward/layer_norm_fwd_kernel.py").read_text()).constexprs["BLOCK_ROWS"]
    assert f"const int64_t hv_rows = int64_t({1024 * block_rows});" in twin.launcher  # 1024 programs x BLOCK_ROWS


def test_module_without_arguments_table_is_refused(square_square):
    with pytest.raises(NoTwin, match=r"not one harvest can read \(no ARGUMENTS = \.\.\."):
        twin_of(square_square, "g0_inference/square_square_kernel.py", ("ARGUMENTS = {", "INPUTS = {"))
    with pytest.raises(NoTwin, match="no '# >>> kernel' line"):
        translate(read_module("import triton\n@triton.jit\ndef k(x_ptr):\n    pass\n"))


@pytest.mark.requires_nvcc
def test_a_parameter_the_kernel_never_reads_is_not_passed(square_square, tmp_path):
    """Gone from the CUDA signature and the launcher's call; the launcher and PARAMS keep what the launch reads."""
    text = (square_square / "g0_inference/square_square_kernel.py").read_text()
    for old, new in [("out_ptr, n_elements, BLOCK_SIZE", "out_ptr, n_elements, scale, BLOCK_SIZE"),
                     ("out_ptr, n_elements, config=CONFIG", "out_ptr, n_elements, scale, config=CONFIG"),
                     ("out_ptr, n_elements, **config", "out_ptr, n_elements, scale, **config"),
                     ('    "n_elements": 1000000,\n', '    "n_elements": 1000000,\n    "scale": 3,\n')]:
        assert old in text, old
        text = text.replace(old, new)
    facts = read_module(text)
    assert facts.params == ("a_ptr", "out_ptr", "n_elements", "scale")
    twin = translate(facts)
    assert twin.params == ("a_ptr", "out_ptr", "n_elements") and "scale" not in twin.declaration + twin.launcher
    assert "// Not a parameter here: scale (the kernel never reads it" in twin.cuda
    assert "int32_t n_elements) {" in twin.cuda and "scale" not in twin.cuda.split('extern "C"')[1]
    module = twin_module_text(twin, "g0_inference", "square_square_kernel.py", facts.params)
    assert "PARAMS = ['a_ptr', 'out_ptr', 'n_elements']  # launch()'s, passed from square_square_kernel.py's ARGUMENTS by name; not passed: scale" in module
    ptx_of(twin.cuda, tmp_path)
    # a parameter the body overwrites (n_rows = 32) is not the kernel's; the launcher still reads it for the grid
    dynamic = translate(read_module((ROOT / "tests/fixtures/twin/dynamic_outer_sum_kernel.py").read_text()))
    signature = dynamic.cuda.split('extern "C" __global__ void')[1].split(") {")[0]
    assert "n_rows" not in signature and "n_cols" in signature and "const int32_t n_rows = 32;" in dynamic.cuda
    assert "n_rows" in dynamic.params and "const int64_t hv_rows = n_rows;" in dynamic.launcher
    assert "static_cast<int32_t>(n_rows)" not in dynamic.launcher


def test_every_helper_of_the_cu_template_is_written_with_what_it_needs_and_nothing_else(tmp_path):
    """twin/helpers.py's table against twin.cu.j2: each helper alone, with the helpers the table says it needs, names
    no other helper; all of them together compile."""
    template = load_template("twin.cu.j2")

    def render(helpers, uses: Uses | None = None):
        return template.render(kernel_name="k", signature="float* x", body="", uses=uses or Uses(), helpers=frozenset(helpers),
                               unused=[], shape="pointwise", notes=["a test"])

    for name in HELPER_NEEDS:
        wanted = helpers_named(f"hv::{name}")
        cuda = render(wanted)
        assert cu_helpers(cuda) == wanted, name
        assert not (identifiers(cuda) & set(HELPER_NEEDS)) - wanted, (name, (identifiers(cuda) & set(HELPER_NEEDS)) - wanted)
    assert "namespace hv" not in render(())
    if NVCC:
        ptx_of(render(HELPER_NEEDS, Uses(half=True, bf16=True, assert_=True)), tmp_path)


@pytest.mark.requires_nvcc
def test_harvest_twin_writes_twins_manifest_and_report(small_model, tmp_path):
    out = tmp_path / "small_model"
    shutil.copytree(small_model, out)
    result = harvest("twin", str(out), cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "reduction: 7 of 7 translated" in result.stderr and "pointwise: 4 of 4 translated" in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    entries = [k["twin"] for g in manifest["graphs"] for k in g["kernels"]]
    assert all(e["status"] == "ok" and e["nvcc"] == "compiles for sm_90" for e in entries)
    cu = out / "g0_forward" / "twin" / "softmax_kernel.cu"
    module = out / "g0_forward" / "twin" / "softmax_kernel_twin.py"
    assert cu.is_file() and module.is_file()
    assert manifest["generated_files"]["g0_forward/twin/softmax_kernel.cu"]
    # the twins' shared code: written once beside the graphs, hashed in the manifest like harness.py
    harness = out / "twin_harness.py"
    assert manifest["generated_files"]["twin_harness.py"] == sha256(harness.read_text())
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
    assert harness.is_file() and json.loads((out / "manifest.json").read_text())["generated_files"]["twin_harness.py"]


def test_twin_modules_hold_only_what_is_their_own(small_twins):
    """The build, the Triton module bound to its harness, check, bench and main are the extraction's twin_harness.py:
    a twin module is its header, KERNEL_FILE, LAUNCHER, DECLARATION, PARAMS and a two-line main (169-176 lines each
    before, 32-39 now), and no 6 lines (blank ones left out) are the same in two of them."""
    modules = sorted(small_twins.glob("*/twin/*_twin.py"))
    assert len(modules) == 11
    texts = {m.relative_to(small_twins).as_posix(): m.read_text() for m in modules}
    for name, text in texts.items():
        assert len(text.splitlines()) <= 45, (name, len(text.splitlines()))
        assert "def " not in text and "pip_cuda_toolkit" not in text and "argparse" not in text, name
        assert text.rstrip().endswith('if __name__ == "__main__":\n    sys.exit(main(globals()))'), name
    seen: dict[tuple[str, ...], str] = {}
    for name, text in texts.items():
        lines = [line for line in text.splitlines() if line.strip()]
        for start in range(len(lines) - 5):
            block = tuple(lines[start : start + 6])
            assert seen.setdefault(block, name) == name, f"{name} and {seen[block]} share:\n" + "\n".join(block)


def test_every_cu_holds_only_the_helpers_its_kernel_names(small_twins):
    kinds = {}
    for cu in sorted(small_twins.glob("*/twin/*.cu")):
        cuda = cu.read_text()
        body = cuda[cuda.index('extern "C" __global__') :]
        assert cu_helpers(cuda) == helpers_named(body), cu.name
        kinds.setdefault("reduction" if re.search(r"\b(block|column|warp)_reduce\(", body) else "pointwise", []).append(cuda)
    assert len(kinds["pointwise"]) == 4 and len(kinds["reduction"]) == 7
    for cuda in kinds["pointwise"]:  # no warp-reduce helper, no reduction functor in a pointwise twin
        assert not cu_helpers(cuda) & {"shuffle_xor", "shuffle_first", "block_reduce", "warp_reduce", "column_reduce", "Sum", "MaxNan", "Welford"}
    for cuda in kinds["reduction"]:
        assert not cu_helpers(cuda) & {"Prod", "Min", "MinNan", "Welford", "ArgMax", "philox", "load_vector"}


def test_a_twin_module_binds_its_triton_module_and_checks_through_the_twin_harness(small_twins, monkeypatch, capsys):
    """On a CPU, with a Python stand-in for the compiled launch: check() runs the recorded inputs through it and
    compares every output with the record and the reference (a wrong result fails)."""

    import torch

    path = small_twins / "g0_forward" / "twin" / "add_kernel_twin.py"
    for name in ("harness", "twin_harness"):  # this extraction's, not one another test imported
        monkeypatch.delitem(sys.modules, name, raising=False)
    module = import_file(path, "add_kernel_twin_test")
    twin = sys.modules[module.main.__module__].Twin(vars(module))
    assert Path(sys.modules[module.main.__module__].__file__).resolve() == (small_twins / "twin_harness.py").resolve()
    kernel = twin.triton_module()
    assert set(twin.PARAMS) <= set(kernel.ARGUMENTS) and kernel.load_record("cpu") is not None
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    output, first = twin.PARAMS[0], twin.PARAMS[1]

    def launch(*args):  # what add_kernel computes: the output += the other input
        named = dict(zip(twin.PARAMS, args))
        named[output].add_(named[first])

    assert twin.check("cpu", launch=launch)
    said = capsys.readouterr().out
    assert "add_kernel CUDA twin on cpu (recorded inputs):" in said and said.count(" ok ") >= 2, said
    assert not twin.check("cpu", launch=lambda *args: None)


def test_a_twin_module_without_a_gpu_exits_9_as_harvest_documents_it(square_square, tmp_path):
    """Its --check exited 1 without a GPU while a kernel module's --bench exited 9: one code says "needs a GPU"."""
    import torch

    assert not torch.cuda.is_available(), "this test is about a machine without a GPU"
    out = tmp_path / "square_square"
    shutil.copytree(square_square, out)
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
@pytest.mark.requires_nvcc
def test_every_kernel_of_the_real_models_gets_a_twin_that_compiles(tmp_path):
    """The six real models' CUDA output_code (captured on the H200), each model's graphs read as one artifact (laid
    out as a TORCH_COMPILE_DEBUG directory: one extraction and one `harvest twin` a model, not one a graph); every
    kernel's twin is written and compiled by nvcc, or has a reason."""
    models = sorted(path for path in (CUDA_FIXTURES / "models").iterdir() if path.is_dir())

    def extract_and_twin(model: Path) -> tuple[Path, subprocess.CompletedProcess, subprocess.CompletedProcess | None]:
        debug_dir = tmp_path / "debug" / model.name
        for graph in model.glob("*.py"):  # torchinductor/<graph>/output_code.py, read in the graphs' order
            (debug_dir / "torchinductor" / graph.stem).mkdir(parents=True)
            shutil.copy(graph, debug_dir / "torchinductor" / graph.stem / "output_code.py")
        out = tmp_path / model.name
        extracted = harvest("extract", str(debug_dir), "-o", str(out), "-q", cwd=ROOT)
        return out, extracted, harvest("twin", str(out), "-q", cwd=ROOT) if extracted.returncode == 0 else None

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:  # two processes at a time: CI has 2 cores
        results = list(pool.map(extract_and_twin, models))
    counts: dict[str, list[int]] = {}
    for model, (out, extracted, twinned) in zip(models, results):
        assert extracted.returncode == 0, extracted.stderr
        assert twinned is not None and twinned.returncode == 0, twinned.stderr if twinned else ""
        manifest = json.loads((out / "manifest.json").read_text())
        assert len(manifest["graphs"]) == len(list(model.glob("*.py"))), model.name
        for kernel in (k for g in manifest["graphs"] for k in g["kernels"] if k.get("module")):
            kind = "pointwise" if kernel["kind"] == "pointwise" else "reduction"
            row = counts.setdefault(kind, [0, 0])
            row[0] += 1
            row[1] += kernel["twin"]["status"] == "ok"
            assert kernel["twin"]["status"] in ("ok", "no twin"), kernel["twin"]
        if model.name == "graph_break_recompile":
            # g2_backward's outer sum, whose per-row load (mean[row % 2048]) does not vote: 32 rows per block
            assert "hv::column_reduce(" in (out / "g2_backward/twin/div_sub_pow_sum_kernel.cu").read_text()
    print(counts)
    assert sum(row[0] for row in counts.values()) == 126  # every kernel of the 26 graphs has a module
    assert counts["pointwise"][0] == counts["pointwise"][1]
    assert counts["reduction"][1] >= 0.8 * counts["reduction"][0]


@pytest.mark.requires_nvcc
def test_outer_reduction_takes_32_rows_per_block(small_model, tmp_path):
    """A sum over the outer dimension (add_sum: row stride 1, reduced stride 32) puts 32 neighbouring rows on
    threadIdx.x so the loads coalesce, and combines each row's partials through shared memory."""
    twin = twin_of(small_model, "g1_backward/add_sum_kernel.py")
    assert "hv::column_reduce(hv_partial, hv::Sum())" in twin.cuda
    assert "if (threadIdx.y == 0 && hv_row_ok && row_mask) out_ptr[rows] = total;" in twin.cuda
    assert "<<<hv::column_blocks(hv_rows), hv::column_threads(hv_rows, hv_rnumel), 0," in twin.launcher
    assert cu_helpers(twin.cuda) == {"Sum", "column_reduce"}  # no block_reduce, no shuffle
    ptx_of(twin.cuda, tmp_path)
    inner = twin_of(small_model, "g0_forward/softmax_kernel.py")
    assert "hv::block_reduce(" in inner.cuda and "column_reduce" not in inner.cuda


@pytest.mark.requires_nvcc
def test_outer_reduction_with_a_dynamic_size_in_its_address_still_takes_32_rows_per_block(tmp_path):
    """graph_break_recompile's recompiled backward (dynamic shapes) on the CPU path, the module harvest wrote for it.
    On the H200 Inductor split the same sum and put the run-time size in the address (`2048*x1*((15 + ks0) // 16)`,
    tests/fixtures/torch-2.11.0+cu130_triton-3.6.0/models/graph_break_recompile/g7_backward.py); that form is put in
    here. A size known only at run time gets a stand-in value when the mapping is chosen: strides decide it."""
    text = (ROOT / "tests/fixtures/twin/dynamic_outer_sum_kernel.py").read_text()
    assert "a_ptr + (rows + 32*cols)" in text
    twin = translate(read_module(text.replace("a_ptr + (rows + 32*cols)", "a_ptr + (rows + 32*cols + 32*cols*((15 + size_0) // 16))")))
    # a looped reduction: each thread keeps four copies of its accumulator (four chains of loads in flight),
    # combined in order before the rows' threads combine
    assert "float total_acc_copies[4] = {total_acc, total_acc, total_acc, total_acc};" in twin.cuda
    assert ("hv::column_reduce(hv::Sum()(hv::Sum()(hv::Sum()(total_acc_copies[0], total_acc_copies[1]), total_acc_copies[2]), "
            "total_acc_copies[3]), hv::Sum())") in twin.cuda
    ptx_of(twin.cuda, tmp_path)


def test_a_size_fixed_in_the_grid_is_the_twins_numel_not_a_count_of_programs():
    """The rename may fix a size, so launch()'s grid reads `triton.cdiv(1048576, config["BLOCK_SIZE"])`: the twin
    covers 1048576 elements (it once took the number for a recorded count of programs and covered 512 times as
    many, an illegal address on the H200)."""
    from harvest.twin import read_module, translate

    path = ROOT / "extracted/h200/small_model/g0_forward/add_kernel.py"
    text = path.read_text()
    assert 'grid = (triton.cdiv(1048576, config["BLOCK_SIZE"]),)' in text
    twin = translate(read_module(text, "g0_forward/add_kernel.py"))
    assert "int64_t(1048576)" in twin.launcher and "536870912" not in twin.launcher + twin.cuda


@pytest.fixture(scope="module")
def embedding_ce_h200(tmp_path_factory) -> Path:
    """embedding_ce's H200 forward graph read as an artifact (a 4096 x 8192 log_softmax in three looped passes)."""
    return artifact(tmp_path_factory, "embedding_ce/g0_forward")


@pytest.mark.requires_nvcc
def test_a_looped_reduction_reading_its_rows_contiguously_uses_vector_loads(embedding_ce_h200, tmp_path):
    """Each thread takes 4 neighbouring columns a step (copy v of its accumulators is the v-th of them) and reads
    them with one 16-byte load where all 4 are in the row and the address is aligned (elsewhere one at a time): a
    warp's load is 512 neighbouring bytes. The launcher gives a row a thread per 4 columns (at most 512). This
    kernel makes three passes over its rows, so a thread takes one vector a step (see the chunked test below)."""
    twin = twin_of(embedding_ce_h200, "g0_forward/log_softmax_kernel.py")
    assert twin.cuda.count("hv::load_vector(mm_ptr + (cols + (8192 * rows)), mm") == 3  # one per pass
    assert "float mm_vec[4];" in twin.cuda
    assert "const int32_t col_start_v = col_start + hv_v + 3 * static_cast<int32_t>(threadIdx.x);" in twin.cuda
    assert "const float mm = (hv_fast_mm ? mm_vec[hv_v] : (col_mask ? mm_ptr[(cols + (8192 * rows))] : 0.0f));" in twin.cuda
    assert "hv::row_threads((hv_rnumel + 3) / 4)" in twin.launcher
    ptx = ptx_of(twin.cuda, tmp_path)
    assert ptx.count("ld.global.v4.") == 3  # one 16-byte load in each of the three passes over the row
    # A gather along the row (mm_ptr + (where_1 + 8192*cols): a row picked by a loaded index) keeps the block-strided
    # columns: a vector of neighbouring columns would not be neighbouring memory.
    gather = twin_of(embedding_ce_h200, "g0_forward/log_softmax_kernel_1.py")
    assert "load_vector" not in gather.cuda and "hv_v * blockDim.x" in gather.cuda


@pytest.fixture(scope="module")
def gpt2_h200(tmp_path_factory) -> Path:
    """gpt2's H200 forward graph read as an artifact: its q/k/v split copies heads out of the addmm's rows."""
    return artifact(tmp_path_factory, "gpt2/g0_forward")


@pytest.fixture(scope="module")
def gpt2_h200_g1(tmp_path_factory) -> Path:
    """gpt2's second H200 forward graph read as an artifact: the loss's log_softmax over 8192 rows of 4096."""
    return artifact(tmp_path_factory, "gpt2/g1_forward")


@pytest.mark.requires_nvcc
def test_a_one_pass_looped_reduction_loads_four_chunks_before_it_uses_any(gpt2_h200_g1, tmp_path):
    """One pass over the row with one load: a thread takes 4 neighbouring columns in each of 4 chunks a block of
    threads apart (Triton's layout: each warp's load is 512 neighbouring bytes), issues the four 16-byte loads
    before it uses any, and folds column v of every chunk into copy v of its accumulators; a chunk not all in the
    row, or not aligned, loads one value at a time. The launcher gives a row a thread per 16 columns."""
    twin = twin_of(gpt2_h200_g1, "g0_forward/log_softmax_kernel.py")  # an artifact read alone is graph g0
    assert "in each of 4 chunks 4 x blockDim.x columns apart" in twin.cuda
    assert ("const int32_t col_start_v = col_start + (hv_v / 4) * 4 * blockDim.x + hv_v % 4 + 3 * static_cast<int32_t>(threadIdx.x);"
            in twin.cuda)
    assert "for (int32_t hv_c = 0; hv_c < 4; ++hv_c) {" in twin.cuda
    assert "hv::row_threads((hv_rnumel + 15) / 16)" in twin.launcher
    ptx = ptx_of(twin.cuda, tmp_path)
    assert ptx.count("ld.global.v4.") == 4  # the four chunks' loads, unrolled


@pytest.mark.requires_nvcc
def test_a_warp_per_row_reduction_of_bf16_rows_gives_a_lane_eight_neighbouring_values(bf16_mlp_h200, gpt2_h200, tmp_path):
    """bf16_mlp's RMSNorm forward (rows of 1024 bf16 values, one warp each): a lane takes 8 neighbouring values of
    each 256 and reads the row and the weight with 16-byte loads, writes its output with 16-byte stores once a
    group's last value is in, and keeps the row in registers between the passes. Rows of fp32 values keep a lane's
    values 32 apart (gpt2's attention softmax): 16-byte groups of 4 were slower there on the H200."""
    twin = twin_of(bf16_mlp_h200["g0_forward"], "g0_forward/cast_pow_mean_kernel.py")
    assert "const int32_t hv_r = (hv_k / 8) * 256 + 8 * hv_lane + hv_e;" in twin.cuda
    assert "if (hv_fast_a_ptr) hv::load_vector(a_ptr + (cols + (1024 * rows)), a_ptr_group);" in twin.cuda
    assert "if (hv_fast_weight_ptr) hv::load_vector(weight_ptr + cols, weight_ptr_group);" in twin.cuda
    assert "if (hv_e == 7 && hv_fast_out_ptr) hv::store_vector(out_ptr_at, out_ptr_group);" in twin.cuda
    assert "hv_kept_a[hv_k] = a;" in twin.cuda
    ptx = ptx_of(twin.cuda, tmp_path)
    assert ptx.count("ld.global.v4.u32") == 8  # the row's 1024 values (4 groups a lane) and the weight's
    assert ptx.count("st.global.v4") == 4
    fp32 = twin_of(gpt2_h200, "g0_forward/softmax_kernel.py")
    assert "const int32_t hv_r = hv_k * 32 + hv_lane;" in fp32.cuda and "load_vector" not in fp32.cuda


@pytest.mark.requires_nvcc
def test_a_2d_pointwise_kernel_that_transposes_goes_through_a_shared_memory_tile(gpt2_h200, tmp_path):
    """addmm_cat reads mm and stores out along y (the channels) but stores out_1 along x (the sequence): a block
    takes a 32 x 32 tile, its warps run along y while computing, and out_1's values are stored from shared memory
    by warps running along x."""
    twin = twin_of(gpt2_h200, "g0_forward/addmm_cat_kernel.py")
    assert "__shared__ float hv_tile_out_1_ptr[32][33];" in twin.cuda
    assert "hv_tile_out_1_ptr[threadIdx.x][static_cast<int>(threadIdx.y) + 8 * hv_k] = add;" in twin.cuda
    assert ("if (x_mask) out_1_ptr[(x_offsets + (256 * y_offsets))] = "
            "hv_tile_out_1_ptr[static_cast<int>(threadIdx.y) + 8 * hv_k][threadIdx.x];") in twin.cuda
    assert twin.cuda.count("__syncthreads();") == 1  # (no staged load: mm is read along y, where the warps run)
    assert "<<<hv::tile_blocks(hv_fast, hv_slow), dim3(32, 8), 0," in twin.launcher
    ptx = ptx_of(twin.cuda, tmp_path)
    assert "st.shared.f32" in ptx and "ld.shared.f32" in ptx


@pytest.mark.requires_nvcc
def test_a_permuted_copy_uses_vector_accesses_within_each_aligned_group(gpt2_h200, tmp_path):
    """addmm_cat_1 (1-D) reads `1024 + col + 64*mid + 1536*mid_1 + ...` of col = offsets % 64: four neighbouring
    elements are four neighbouring floats, so a thread's 4 elements are one 16-byte load where that address is
    aligned, and so is its permuted store."""
    twin = twin_of(gpt2_h200, "g0_forward/addmm_cat_kernel_1.py")
    assert "if (hv_fast_mm_ptr) hv::load_vector(mm_ptr + ((((1024 + col) + (64 * mid)) + (1536 * mid_1)) + (393216 * row_)), mm_ptr_group);" in twin.cuda
    assert "if (hv_fast_out_ptr) hv::store_vector(out_ptr_at, out_ptr_group);" in twin.cuda
    ptx = ptx_of(twin.cuda, tmp_path)
    assert ptx.count("ld.global.v4") >= 2 and ptx.count("st.global.v4") >= 2
    # Rows of 66 floats: a group of 4 elements can straddle two rows, so the same accesses go one element at a time.
    straddling = twin_of(gpt2_h200, "g0_forward/addmm_cat_kernel_1.py", ("col = (offsets % 64)", "col = (offsets % 66)"))
    assert "mm_ptr_group" not in straddling.cuda and "out_ptr_group" not in straddling.cuda


def test_a_vector_of_columns_is_taken_only_where_no_aligned_group_straddles_a_piece_of_the_address():
    """steps_within_groups reads the address's arithmetic: `cols // 4096` and `cols % 4096` keep each aligned group
    of 16 columns in one piece (4096 is a multiple of 16); a row of 4094 does not, nor does a product of two moving
    values or an index loaded from memory."""
    body = ast.parse("cols = col_start + col_base\nouter = cols // 4096\ninner = cols % 4096\n"
                     "wrapped = cols % 4094\nsquare = cols * cols\npicked = tl.load(idx_ptr + cols)\n").body
    moving = {"col_start", "col_base"}

    def offset(text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body

    assert steps_within_groups(offset("4096*row_inner + 131072*outer + 262144*row_outer + inner"), body, moving, 16)
    assert not steps_within_groups(offset("4094*row + wrapped"), body, moving, 16)
    assert not steps_within_groups(offset("square"), body, moving, 16)
    assert not steps_within_groups(offset("picked + 8192*cols"), body, moving, 16)
    assert steps_within_groups(offset("8192*row + cols"), body, moving, 16)


@pytest.fixture(scope="module")
def encoder_backward_h200(tmp_path_factory) -> Path:
    """transformer_encoder's H200 backward graph read as an artifact: a permuted select_backward_add and two
    mix-order layer-norm backwards."""
    return artifact(tmp_path_factory, "transformer_encoder/g1_backward")


@pytest.mark.requires_nvcc
def test_a_mix_order_reduction_takes_its_programs_rows_in_turn(encoder_backward_h200, tmp_path):
    """Inductor's mix-order layer-norm backward splits the rows over programs (16 each) and writes each program's
    column sums to its rows of a workspace. The twin: a block per program, the program's rows one after the other
    (each a persistent row reduction: its two sums through block_reduce), each column's sum in shared memory kept by
    the thread the column belongs to (no barrier needed for it), then stored to the workspace rows Triton writes."""
    twin = twin_of(encoder_backward_h200, "g0_backward/layer_norm_bwd_kernel.py")
    assert "__shared__ float hv_accum0[1024];" in twin.cuda and "__shared__ float hv_accum1[1024];" in twin.cuda
    assert "const int32_t row_start = static_cast<int32_t>(blockIdx.x) * 16;" in twin.cuda
    assert "const int32_t split_size = min(16, (n_rows - row_start));" in twin.cuda
    assert "for (int32_t hv_i = 0; hv_i < split_size; ++hv_i) {" in twin.cuda
    assert "const int32_t rows_1 = row_start + hv_i;" in twin.cuda
    assert "hv_accum0[cols] = 0.0f;" in twin.cuda  # each column's sum starts at zero
    assert "hv_accum0[cols] = (hv_accum0[cols] + mul_6);" in twin.cuda and "hv_accum1[cols] = (hv_accum1[cols] + grad);" in twin.cuda
    workspace = "ws_ptr[(((static_cast<int32_t>(blockIdx.x) + ({} * static_cast<int32_t>(gridDim.x))) * n_cols) + cols)] = hv_accum{}[cols];"
    assert workspace.format(0, 0) in twin.cuda and workspace.format(1, 1) in twin.cuda
    assert twin.cuda.count("= hv::block_reduce(") == 2
    assert "const int64_t hv_programs = (hv_rows + 15) / 16;" in twin.launcher
    assert "<<<static_cast<unsigned int>(hv_programs), hv::row_threads(hv_rnumel)," in twin.launcher
    ptx = ptx_of(twin.cuda, tmp_path)
    assert "st.shared.f32" in ptx and "ld.shared.f32" in ptx and "bar.sync" in ptx
    # the program is read as a number a thread block stands for, never as tl.program_id: it is gone from the .cu
    assert "program_id" not in twin.cuda and "num_programs" not in twin.cuda


@pytest.fixture(scope="module")
def bf16_mlp_h200(tmp_path_factory) -> Path:
    """bf16_mlp's H200 graphs read as artifacts: its RMSNorm forward (rows of 1024 bf16 values) and backward."""
    return {graph: artifact(tmp_path_factory, f"bf16_mlp/{graph}") for graph in ("g0_forward", "g1_backward")}


@pytest.mark.requires_nvcc
def test_a_mix_order_reduction_of_bf16_rows_takes_a_warp_per_row(bf16_mlp_h200, tmp_path):
    """bf16_mlp's mix-order RMSNorm backward (rows of 1024 bf16 values, 16 a program): a block of 4 warps per
    program, warp w taking the program's rows w, w + 4, ... (each a warp-per-row persistent reduction through
    warp_reduce, a lane's 8 neighbouring values through one 16-byte access), each column's sum in the warp's own
    shared-memory row kept by the lane the column belongs to (no barrier until the warps' rows are added; a lane's
    8 neighbouring columns keep their sums 128 apart, so a warp's lanes touch 32 banks), then stored to the
    workspace rows Triton writes."""
    twin = twin_of(bf16_mlp_h200["g1_backward"], "g0_backward/add_cast_mul_sum_kernel.py")
    assert "__shared__ float hv_accum0[4][1024];" in twin.cuda
    assert "for (int32_t hv_i = hv_warp; hv_i < split_size; hv_i += 4) {" in twin.cuda
    assert "const int32_t hv_r = (hv_k / 8) * 256 + 8 * hv_lane + hv_e;" in twin.cuda
    cell = "(((cols % 8) * 128) + (cols / 8))"
    assert f"hv_accum0[hv_warp][{cell}] = 0.0f;" in twin.cuda
    assert f"hv_accum0[hv_warp][{cell}] = (hv_accum0[hv_warp][{cell}] + mul_7);" in twin.cuda
    assert "hv_accum0[0][hv_c] += hv_accum0[hv_w][hv_c];" in twin.cuda  # the warps' sums, in warp order
    assert f"= hv_accum0[0][{cell}];" in twin.cuda
    assert "block_reduce" not in twin.cuda and "hv::warp_reduce(" in twin.cuda
    assert "<<<static_cast<unsigned int>(hv_programs), 32 * hv::WARP_ROWS_PER_BLOCK," in twin.launcher
    ptx = ptx_of(twin.cuda, tmp_path)
    assert "ld.global.v4" in ptx and "st.global.v4" in ptx and "bar.sync" in ptx


@pytest.mark.requires_nvcc
def test_a_dropout_mask_of_one_byte_values_does_not_set_a_pointwise_twins_width(encoder_backward_h200, tmp_path):
    """The dropout backward reads fp32 values and a bool mask: a thread takes 4 elements (16 bytes of fp32, a warp's
    access 512 neighbouring bytes, as Triton's layout gives), not 16 for the sake of 16 mask bytes; the mask is read
    a byte at a time."""
    twin = twin_of(encoder_backward_h200, "g0_backward/native_dropout_backward_kernel.py")
    assert "fast path: 4 elements per thread" in twin.cuda
    assert "hv::load_vector(a_ptr + hv_base, a_ptr_vec);" in twin.cuda
    assert "const bool gt = gt_ptr[((col + (1024 * row_)) + (16384 * mid))];" in twin.cuda
    ptx = ptx_of(twin.cuda, tmp_path)
    assert ptx.count("ld.global.v4.f32") == 1 and ptx.count("st.global.v4") == 1


@pytest.mark.requires_nvcc
def test_a_foreach_kernel_takes_a_block_per_program_and_its_branch_picks_the_sub_kernel(tmp_path):
    """A compiled AdamW step's foreach kernel (H200 capture: four sub-kernels in one launch, 8197 programs of 1024
    elements): a thread block per Triton program, the program's `if pid < num_xblocks_k` branch picks the sub-kernel,
    and the block's 256 threads stride over the program's 1024 elements."""
    source = tmp_path / "adamw_step"
    shutil.copytree(CUDA_FIXTURES / "recorded/adamw_step", source)
    done = harvest("extract", str(source), "-o", str(tmp_path / "out"), "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    twin = twin_of(tmp_path / "out", "g0_inference/foreach_kernel_1.py")
    assert "const int32_t pid = static_cast<int32_t>(blockIdx.x);" in twin.cuda
    assert "const int32_t num_xblocks_1 = (num_xblocks_0 + ((4096 + 1024 - 1) / 1024));" in twin.cuda  # tl.cdiv
    assert "if ((pid < num_xblocks_0)) {" in twin.cuda and twin.cuda.count("} else if ((pid < num_xblocks_") == 3
    assert twin.cuda.count("for (int32_t hv_e = static_cast<int32_t>(threadIdx.x); hv_e < 1024; hv_e += blockDim.x) {") == 4
    assert "const int32_t rows = row_start + hv_e;" in twin.cuda
    assert "int64_t(8197)" in twin.launcher and "<<<static_cast<unsigned int>(hv_programs), 256," in twin.launcher
    assert "4 sub-kernels in one launch" in twin.cuda
    ptx_of(twin.cuda, tmp_path)  # compiles


@pytest.mark.requires_nvcc
def test_grouped_accesses_take_their_vector_in_a_kernel_with_no_access_at_its_own_index(tmp_path, encoder_backward_h200):
    """transformer_encoder's select_backward_add reads three tensors and writes one, all permuted, none at the
    element's own index. Each element takes its value from the group's vector and the store fills the group's vector
    (an H200 run of a first version, whose loads and stores missed their vectors there, read every value twice and
    stored a vector nothing had filled)."""
    out = encoder_backward_h200
    module = next(p for p in (out / "g0_backward").glob("select_backward_add_kernel*.py"))
    twin = twin_of(out, f"g0_backward/{module.name}")
    for name in ("a", "b", "c"):
        assert f"const float {name} = (hv_fast_{name}_ptr ? {name}_ptr_group[hv_e] : " in twin.cuda
    assert "out_ptr_group[hv_e] = add_1;" in twin.cuda
    assert "if (hv_fast_out_ptr) hv::store_vector(out_ptr_at, out_ptr_group);" in twin.cuda
    ptx = ptx_of(twin.cuda, tmp_path)
    assert ptx.count("ld.global.v4") >= 3 and ptx.count("st.global.v4") >= 1


@pytest.mark.requires_nvcc
def test_a_looped_reduction_over_half_floats_takes_8_columns_a_thread(embedding_ce_h200, tmp_path):
    """16 bytes of bf16 are 8 values: a thread takes 8 neighbouring columns a step, keeps 8 copies of its
    accumulators, and combines them by a loop before the block combines its threads."""
    twin = twin_of(embedding_ce_h200, "g0_forward/log_softmax_kernel.py",
                   ('"mm_ptr": Tensor((4096, 8192), (8192, 1), torch.float32)', '"mm_ptr": Tensor((4096, 8192), (8192, 1), torch.bfloat16)'))
    assert "__nv_bfloat16 mm_vec[8];" in twin.cuda
    assert "const int32_t col_start_v = col_start + hv_v + 7 * static_cast<int32_t>(threadIdx.x);" in twin.cuda
    assert "hv::row_threads((hv_rnumel + 7) / 8)" in twin.launcher
    assert "for (int hv_c = 1; hv_c < 8; ++hv_c) {" in twin.cuda
    assert "hv_thread = hv::SoftmaxCombine<false>()(hv_thread, hv::SoftmaxState{value_acc_copies[hv_c], value_acc_1_copies[hv_c]});" in twin.cuda
    ptx = ptx_of(twin.cuda, tmp_path)
    assert ptx.count("ld.global.v4") == 3


def test_a_user_written_program_offset_is_read_in_inductors_shape():
    """Tutorial-style offsets (`pid = tl.program_id(axis=0)`, `block_start = pid * BLOCK_SIZE`, or the offsets in one
    line) become Inductor's `start = tl.program_id(0) * BLOCK` and `offsets = start + tl.arange(0, BLOCK)`."""
    tutorial = ast.parse("pid = tl.program_id(axis=0)\nblock_start = pid * BLOCK_SIZE\n"
                         "offsets = block_start + tl.arange(0, BLOCK_SIZE)\nmask = offsets < n_elements\n").body
    assert [ast.unparse(s) for s in program_offsets_apart(tutorial)] == [
        "block_start = tl.program_id(0) * BLOCK_SIZE", "offsets = block_start + tl.arange(0, BLOCK_SIZE)", "mask = offsets < n_elements"]
    one_line = ast.parse("offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\nx = tl.load(x_ptr + offsets)\n").body
    assert [ast.unparse(s) for s in program_offsets_apart(one_line)] == [
        "offsets_start = tl.program_id(0) * BLOCK", "offsets = offsets_start + tl.arange(0, BLOCK)", "x = tl.load(x_ptr + offsets)"]
    inductor = ast.parse("xoffset = tl.program_id(0) * XBLOCK\nxindex = xoffset + tl.arange(0, XBLOCK)[:]\n").body
    assert [ast.unparse(s) for s in program_offsets_apart(inductor)] == [ast.unparse(s) for s in inductor]


@pytest.mark.requires_nvcc
def test_a_user_written_kernel_gets_a_twin_whose_fast_path_stays_inside_its_own_bound(tmp_path):
    """examples/models/user_kernel.py's scaled_relu (the H200 capture): a twin like any pointwise kernel's, on the
    user's recorded grid (512 programs of BLOCK 1024). That grid's numel is programs x BLOCK, so the 16-byte fast
    path also waits for the kernel's own bound, n: where n is not a multiple of 4, its last chunk goes one element
    at a time, under the mask."""
    source = tmp_path / "user_kernel"
    shutil.copytree(CUDA_FIXTURES / "recorded" / "user_kernel", source)
    out = tmp_path / "out"
    assert harvest("extract", str(source), "-o", str(out), "-q", cwd=ROOT).returncode == 0
    twin = twin_of(out, "g0_inference/scaled_relu_kernel.py")
    assert "const int64_t hv_numel = static_cast<int64_t>(524288);" in twin.cuda
    assert "if (hv_aligned && hv_base + 4 <= hv_numel && hv_base + 4 <= static_cast<int64_t>(n)) {" in twin.cuda
    assert "out_ptr_vec[hv_e] = (hv::maximum(x, 0.0f) * scale);" in twin.cuda
    assert "if (mask) out_ptr[offsets] = (hv::maximum(x, 0.0f) * scale);" in twin.cuda
    assert "scaled_relu_kernel<<<hv::pointwise_blocks(hv_numel, 256, 4), 256," in twin.launcher
    ptx = ptx_of(twin.cuda, tmp_path)
    assert "ld.global.v4.f32" in ptx and "st.global.v4.f32" in ptx


def test_twin_variants_write_the_twins_again_with_a_choice_changed_and_list_those_that_differ(small_twins, tmp_path):
    """scripts/twin_variants.py (the device script's VARIANTS): with no row short enough for a warp
    (warp_row_limit=0), exactly the warp-per-row twins change, to a block per row, and changed.txt lists them for
    scripts/gpu/parts/twins.py --only; a choice TwinChoices does not have is refused, with its name and the choices there are."""
    script = ROOT / "scripts" / "twin_variants.py"
    out = tmp_path / "variants"
    done = subprocess.run([sys.executable, str(script), str(small_twins.parent), str(out),
                           "blockrows:warp_row_limit=0"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    changed = (out / "blockrows" / "changed.txt").read_text().split()
    warp_rows = sorted(f"small_model/{p.relative_to(small_twins)}" for p in small_twins.glob("*/twin/*.cu")
                       if "hv::warp_reduce(" in p.read_text())
    assert changed == warp_rows and warp_rows
    for path in changed:
        text = (out / "blockrows" / path).read_text()
        assert "hv::block_reduce(" in text and "hv::warp_reduce(" not in text
    bad = subprocess.run([sys.executable, str(script), str(small_twins.parent), str(out), "bad:no_such=1"],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 1 and "'no_such' is not a twin choice; the choices are warp_row_limit, " in bad.stderr
    old = subprocess.run([sys.executable, str(script), str(small_twins.parent), str(out), "old:harvest.twin.reduction.WARP_ROW_LIMIT=0"],
                         capture_output=True, text=True, cwd=ROOT)
    assert old.returncode == 1 and "is not NAME:CHOICE=INT[,...]" in old.stderr


def test_twin_choices_are_data_changed_by_name_with_todays_values_as_the_defaults():
    """TwinChoices: the defaults are the twins as timed (the variants still to weigh off); `changed` takes the
    VARIANTS form, an int per choice (0 or 1 for a yes-or-no one), and refuses a name or value it does not have."""
    choices = TwinChoices()
    assert (choices.warp_row_limit, choices.loop_copies, choices.split_block_threads) == (1024, 4, 0)
    assert not (choices.split_warps_ungrouped or choices.split_looped_rows or choices.constant_row_block)
    changed = choices.changed("split_looped_rows=1,loop_copies=2")
    assert changed == TwinChoices(split_looped_rows=True, loop_copies=2) and changed.split_looped_rows is True
    assert choices == TwinChoices()  # (frozen: a changed copy, never the defaults patched)
    for bad, said in [("no_such=1", "'no_such' is not a twin choice"), ("loop_copies=x", "a twin choice's value is an integer"),
                      ("constant_row_block=2", "constant_row_block is 0 or 1"), ("max_chunks=-1", "an integer, 0 or more")]:
        with pytest.raises(UsageError, match=re.escape(said)):
            choices.changed(bad)


@pytest.fixture(scope="module")
def cooperative(tmp_path_factory) -> Path:
    """examples/models/cooperative.py extracted on the CPU path: two cooperative reductions (RSPLIT programs a row)."""
    return extraction_of(EXAMPLES / "models" / "cooperative.py", tmp_path_factory)


def test_a_cooperative_reduction_read_as_a_row_reduction_computes_what_the_run_recorded(cooperative):
    """What the twin translates is the kernel with RSPLIT = 1 (the split's workspace, barrier and peers gone, the
    rows on program axis 0): that kernel, run by the Triton interpreter in place of the extracted one, passes
    --check against the run's record (made with RSPLIT 1 and 2) and the eager reference."""
    from harvest.module.file import read_module_file
    from harvest.twin.cooperative import as_row_reduction, is_cooperative

    for name in ("var_mean_sum_amax_kernel", "mul_abs_mean_kernel"):
        path = cooperative / "g0_inference" / f"{name}.py"
        text = path.read_text(encoding="utf-8")
        module = read_module_file(text, path.name)
        assert is_cooperative(module.constexprs, module.grid)
        body, grid = as_row_reduction(list(module.kernel.body), module.grid)
        names = {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name)}
        assert not names & {"rsplit_id", "rsplit_start", "rsplit_end", "HAS_RSPLIT", "ws", "sem_ptr", "ws_ptr"}, names
        kernel = module.kernel
        def_line = next(line for line in text.splitlines() if line.startswith(f"def {name}("))
        rows_only = "\n".join(["    " + line for s in body for line in ast.unparse(s).splitlines()])
        start = text.index(def_line) + len(def_line) + 1
        end = text.index("# <<< kernel")
        assert kernel.name == name
        edited = text[:start] + rows_only + "\n" + text[end:]
        edited, count = re.subn(r"\n    grid = \(config\[\"RSPLIT\"\], (.*)\)\n", r"\n    grid = (\1)\n", edited)
        assert count == 1 and ast.unparse(grid[0]).replace("'", '"') in edited
        rows_path = path.with_name(f"{name}_rows.py")
        rows_path.write_text(edited, encoding="utf-8")
        done = run_check(rows_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "differs" not in done.stdout


@pytest.mark.requires_nvcc
def test_a_cooperative_reduction_gets_a_twin_that_splits_each_row_over_blocks(cooperative, tmp_path):
    """The twin splits a row over as many blocks as the GPU holds at once beside the other rows' (its own choice,
    not RSPLIT): each block folds its chunk (whole steps of its threads), the reductions ready after the loop publish
    their block partials to the workspace before one grid barrier, each block combines its row's partials in split
    order, and the row's first block stores. The launch is cooperative when the split is more than one; the
    kernel's own workspace and semaphore are not passed."""
    twin = twin_of(cooperative, "g0_inference/var_mean_sum_amax_kernel.py")
    assert "sem_ptr" not in twin.params and "ws_ptr" not in twin.params
    assert "not passed: sem_ptr, ws_ptr" in twin_module_text(twin, "g0_inference", "var_mean_sum_amax_kernel.py",
                                                             ("inout_ptr", "inout_1_ptr", "a_ptr", "weight_ptr", "out_ptr",
                                                              "sem_ptr", "ws_ptr", "n_rows", "n_cols"))
    assert "for (int64_t hv_row = blockIdx.x / hv_splits; hv_row < hv_rows; hv_row += gridDim.x / hv_splits) {" in twin.cuda
    assert "for (int32_t col_start = hv_begin; col_start < hv_end; col_start += 4 * blockDim.x) {" in twin.cuda
    assert twin.cuda.count("hv::split_publish(") == 3 and twin.cuda.count("hv::grid_sync(hv_splits);") == 1
    assert twin.cuda.index("hv::grid_sync(hv_splits);") < twin.cuda.index("hv::split_gather(")
    assert twin.cuda.count("hv::split_gather(") == 3
    assert "if (threadIdx.x == 0 && hv_split == 0 && row_mask) out_ptr[rows] = copy;" in twin.cuda
    assert "#include <cooperative_groups.h>" in twin.cuda
    assert "hv::launch_rows_split(hv_splits > 1, var_mean_sum_amax_kernel, hv::split_blocks(hv_rows, hv_splits), hv_threads," in twin.launcher
    assert "hv::split_workspace(hv_splits, hv_rows * hv_splits * 48)" in twin.launcher  # 3 reductions, 16 bytes a block
    ptx = ptx_of(twin.cuda, tmp_path)
    assert ".entry var_mean_sum_amax_kernel(" in ptx
    # a kernel whose chunks end at the row's end (no clamp of rsplit_end) reads its length from `rnumel`
    mean = twin_of(cooperative, "g0_inference/mul_abs_mean_kernel.py")
    assert "hv_splits) {" in mean.cuda and mean.cuda.count("hv::split_publish(") == 1
    ptx_of(mean.cuda, tmp_path, "mean")


@pytest.mark.requires_nvcc
def test_the_launcher_of_a_split_row_twin_compiles_with_torchs_headers(cooperative, tmp_path):
    """The split-row launcher (occupancy, workspace, a cooperative cudaLaunchKernelEx), the most involved one (built
    and run on an H100 in session 24), guarded here without a GPU: kernel, the harness's launch helpers and the
    launcher, compiled as load_inline puts them together (`nvcc -c` with torch's include paths; the CPU wheel lacks
    one generated CUDA header, stood in for)."""
    import sysconfig

    from torch.utils.cpp_extension import include_paths

    twin = twin_of(cooperative, "g0_inference/var_mean_sum_amax_kernel.py")
    harness = load_template("twin_harness.py.j2").render()
    helpers = re.search(r'LAUNCH_HELPERS = r"""(.*?)"""', harness, re.S).group(1)
    stub = tmp_path / "stub" / "c10" / "cuda" / "impl"
    stub.mkdir(parents=True)
    (stub / "cuda_cmake_macros.h").write_text("#pragma once\n")
    source = tmp_path / "extension.cu"
    # (load_inline puts torch/types.h, cuda.h and cuda_runtime.h first; the launcher's own includes do not pull in
    # torch/extension.h's Python and pybind11 headers, which took this compile from ~30 s to ~70 s here)
    assert "#include <torch/extension.h>" not in helpers + twin.launcher
    source.write_text("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + twin.cuda + helpers + twin.launcher)
    command = [NVCC, "-c", "-std=c++17", "-arch=sm_90", f"-I{tmp_path / 'stub'}", *(f"-I{p}" for p in include_paths()),
               f"-I{sysconfig.get_paths()['include']}", "-DTORCH_EXTENSION_NAME=twin", "-o", str(tmp_path / "extension.o"), str(source)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]


def test_the_gpu_scripts_joined_extension_keeps_headers_outside_the_twins_namespaces(cooperative, tmp_path):
    """scripts/gpu/parts/twins.py builds an extraction's twins as one extension, each kernel in its own namespace. A
    header left inside one (cooperative_groups.h) redefined libcu++'s atomics and the whole build failed on the H100;
    a cooperative launcher names its kernel as a function pointer too, not only before `<<<`. (Compiled with nvcc and
    torch's headers by hand once: 74 s, too long for CI; this checks the text that compile needed.)"""
    out = tmp_path / "cooperative"
    shutil.copytree(cooperative, out)
    assert harvest("twin", str(out), "--no-compile", "-q", cwd=tmp_path).returncode == 0
    script = import_file(ROOT / "scripts" / "gpu" / "parts" / "twins.py", "gpu_twins_script")
    twins = script.twins_of(out, None)
    assert len(twins) == 2
    helpers = script.load(out / "twin_harness.py", "gpu_twins_harness").LAUNCH_HELPERS
    cuda, _, functions = script.joined_sources(twins, helpers)
    assert functions == ["launch_0", "launch_1"]
    first_namespace = cuda.index("namespace twin_0 {")
    assert "#include <cooperative_groups.h>" in cuda[:first_namespace]
    for i, block in enumerate(re.findall(r"namespace twin_\d+ \{\n(.*?)\n\}\n// twin_", cuda, re.S)):
        assert "#include" not in block, i
    for i, twin in enumerate(twins):
        name = re.search(r'extern "C" __global__ void (\w+)\(', twin["cuda"].read_text()).group(1)
        launcher = cuda[cuda.index(f"void launch_{i}(") :]
        launcher = launcher[: launcher.index("\n}") + 2]
        assert f"hv::row_splits(reinterpret_cast<const void*>(&twin_{i}::{name}_{i})" in launcher, launcher
        assert re.search(rf"hv::launch_rows_split\([^,]+, twin_{i}::{name}_{i},", launcher), launcher
        assert not re.search(rf"(?<!::){name}\b", launcher), launcher


@pytest.fixture(scope="module")
def scans(tmp_path_factory) -> Path:
    """examples/models/scans.py extracted on the CPU path: persistent scans (rows of 64 and of 16 floats 64 apart),
    scans beside reductions, and Inductor's looped scan over 4096 columns with its own carry."""
    return extraction_of(EXAMPLES / "models" / "scans.py", tmp_path_factory)


@pytest.mark.requires_nvcc
def test_scans_get_twins_that_scan_their_rows_in_tiles_of_lanes_with_a_carry(scans, tmp_path):
    """A scan's combine helper becomes a lambda at the top of the kernel; a row of 64 is scanned in two tiles of a
    warp's 32 lanes (shuffles up), the second combined with the first's carry; a row taken by a block (16 values 64
    apart: the scan keeps the row's order along the threads) scans tiles of the block's threads; every lane takes
    part, one past the row's end neither folding nor storing."""
    twin = twin_of(scans, "g0_forward/cumsum_sigmoid_cumprod_kernel.py")
    assert "auto hv_combine = [](const float arg0_0, const float arg1_0) -> float {  // _triton_helper_fn_add0" in twin.cuda
    assert "auto hv_combine_1 = [](const float arg0_0, const float arg1_0) -> float {  // _triton_helper_fn_mul1" in twin.cuda
    assert "hv::warp_scan(broadcast, hv_combine, hv_carry_associative_scan, hv_k > 0)" in twin.cuda
    assert "const bool hv_in = hv_r < 64;" in twin.cuda and "if (hv_in && row_mask) " in twin.cuda
    ptx = ptx_of(twin.cuda, tmp_path)
    assert "shfl.sync.idx" in ptx  # (the lane below, read by index: shuffle_up is shuffle_lane)
    outer = twin_of(scans, "g0_forward/logcumsumexp_kernel.py")
    assert "hv::block_scan(broadcast, hv_combine, hv_carry_associative_scan, hv_r0 > 0)" in outer.cuda
    assert "const float tmp8 = log1pf(tmp7);" in outer.cuda  # the combine helper, translated statement by statement
    ptx_of(outer.cuda, tmp_path, "outer")
    both = twin_of(scans, "g1_backward/sigmoid_eq_cumsum_sum_kernel.py")  # scans, an argmax and a sum of scanned values
    assert "if (hv_in) hv_partial = hv::ArgMax()(" in both.cuda and "if (hv_in) hv_partial_1 = hv::Sum()(" in both.cuda
    ptx_of(both.cuda, tmp_path, "both")


@pytest.mark.requires_nvcc
def test_inductors_looped_scan_scans_each_tile_of_the_blocks_threads_and_keeps_its_own_carry(scans, tmp_path):
    """Inductor's looped scan scans each RBLOCK tile alone and carries the tiles before through select_one of the
    tile's last value: the twin's tile is its block's threads (one column a thread a step, every thread in every
    step), select_one the last thread's value, and the kernel's carry stays the kernel's."""
    twin = twin_of(scans, "g0_forward/cumsum_kernel.py")
    assert "hv::block_scan(broadcast, hv_combine, hv_no_carry, false)" in twin.cuda
    assert "const float select_one = hv::block_last(associative_scan);" in twin.cuda
    assert "const_copies[hv_v] = ((roffset > 0) ? add : select_one);" in twin.cuda
    assert "if (hv_in && col_mask) out_ptr[cols] = where;" in twin.cuda
    assert "hv::row_threads((hv_rnumel + 0) / 1)" in twin.launcher
    ptx_of(twin.cuda, tmp_path)
    carry_read = ("tl.store(out_ptr + (tl.broadcast_to(cols, [BLOCK_ROWS, BLOCK_COLS])), where, col_mask)\n",
                  "tl.store(out_ptr + (tl.broadcast_to(cols, [BLOCK_ROWS, BLOCK_COLS])), where, col_mask)\n"
                  "    tl.store(out_ptr + (cols), const, col_mask)\n")
    with pytest.raises(NoTwin, match="the scan's carry const is used after its loop"):
        twin_of(scans, "g0_forward/cumsum_kernel.py", edit=carry_read)
    unmasked = ("a = tl.load(a_ptr + (cols), col_mask,", "a = tl.load(a_ptr + (cols), None,")
    with pytest.raises(NoTwin, match="a looped scan with a load without a mask"):
        twin_of(scans, "g0_forward/cumsum_kernel.py", edit=unmasked)


def test_every_scan_of_the_scans_model_gets_a_twin(scans, tmp_path):
    out = tmp_path / "scans"
    shutil.copytree(scans, out)
    done = harvest("twin", str(out), *([] if NVCC else ["--no-compile"]), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "reduction: 7 of 7 translated" in done.stderr and "pointwise: 2 of 2 translated" in done.stderr, done.stderr


@pytest.fixture(scope="module")
def split_scans(tmp_path_factory) -> Path:
    """The H200 capture of examples/models/scans.py replayed (its raw/, the launch data left out): two split scans,
    a cumsum over one row of 1048576 in 512 programs and a logcumsumexp of 2048 rows, their grids recorded."""
    from conftest import CUDA_FIXTURES

    source = tmp_path_factory.mktemp("split_scans") / "scans"
    shutil.copytree(CUDA_FIXTURES / "recorded" / "scans", source)
    out = source.parent / "out"
    done = harvest("extract", str(source), "-o", str(out), "-q", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.requires_nvcc
def test_a_split_scan_gets_a_twin_that_scans_its_row_split_over_blocks(split_scans, tmp_path):
    """A split scan is read as the row scan it computes (its workspace, reduce and look-back gone) and split again the
    twin's way: with more than one block a row, each block first scans its chunk for the chunk's total, the totals
    meet after a grid barrier, and each block scans its chunk again from the combined totals before it."""
    twin = twin_of(split_scans, "g0_forward/cumsum_kernel.py")
    assert "ws_ptr" not in twin.params
    assert "(void)hv::block_scan(broadcast, hv_combine, hv_carry_associative_scan, col_start > hv_begin);" in twin.cuda
    assert "hv::split_carry(hv_carry_associative_scan, hv_have, hv_begin < hv_end, hv_combine, hv_workspace, 0, hv_split, hv_splits);" in twin.cuda
    assert "hv::block_scan(broadcast, hv_combine, hv_carry_associative_scan, hv_have || col_start > hv_begin)" in twin.cuda
    assert "const float a = ((cols < n_cols) ? a_ptr[cols] : 0.0f);" in twin.cuda  # masked: a tile may pass the row's end
    assert "hv::launch_rows_split(hv_splits > 1, cumsum_kernel," in twin.launcher
    ptx_of(twin.cuda, tmp_path)
    rows = twin_of(split_scans, "g0_forward/logcumsumexp_kernel.py")  # 2048 rows of 256, a column of the input each
    assert "const int64_t hv_rows = int64_t(2048);" in rows.launcher
    ptx_of(rows.cuda, tmp_path, "rows")


@pytest.mark.requires_nvcc
def test_every_looped_row_reduction_can_split_its_rows_over_blocks_as_a_variant(embedding_ce_h200, tmp_path):
    """split_looped_rows=1 (a variant for the device to weigh; off by default): a looped row reduction takes the
    cooperative twin's split, each of its passes over its block's chunk, a grid barrier after each reduction; the
    launcher splits only rows too few to fill the GPU (4096 rows of log_softmax: one block each, as before)."""
    assert "hv_splits" not in twin_of(embedding_ce_h200, "g0_forward/log_softmax_kernel.py").cuda  # off: the twin as timed
    twin = twin_of(embedding_ce_h200, "g0_forward/log_softmax_kernel.py", choices=TwinChoices(split_looped_rows=True))
    assert twin.cuda.count("hv::grid_sync(hv_splits);") == 3 and twin.cuda.count("const int32_t hv_begin") == 3  # a pass and a reduction each
    assert "hv::launch_rows_split(hv_splits > 1, log_softmax_kernel," in twin.launcher
    ptx_of(twin.cuda, tmp_path)


@pytest.mark.requires_nvcc
def test_a_looped_reduction_of_a_constant_row_can_fix_its_block_size_as_a_variant(embedding_ce_h200, tmp_path):
    """constant_row_block=1 (a variant for the device to weigh; off by default): a row of 8192 at 4 columns a
    thread a step takes a block of 512 that is a constant of the kernel, as Triton's block is, so each pass's column
    loop has a known trip count (4) and nvcc unrolls it: the three passes' 16-byte loads are issued 4 at a time."""
    assert "hv_block" not in twin_of(embedding_ce_h200, "g0_forward/log_softmax_kernel.py").cuda  # off: the twin as timed
    twin = twin_of(embedding_ce_h200, "g0_forward/log_softmax_kernel.py", choices=TwinChoices(constant_row_block=True))
    assert "constexpr int32_t hv_block = 512;" in twin.cuda and twin.cuda.count("col_start += 4 * hv_block) {") == 3
    assert "log_softmax_kernel<<<hv::row_blocks(hv_rows), 512, 0," in twin.launcher
    assert ptx_of(twin.cuda, tmp_path).count("ld.global.v4") == 12
