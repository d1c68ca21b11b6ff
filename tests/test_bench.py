"""harvest bench on the CPU: no GPU -> one line and exit 9; ncu command text; sweep configs of real kernels; the sweep's
correctness gate under the Triton interpreter; bytes moved; the CSV/JSON rows; the twin's seam; the timing code the
modules carry. The timings themselves need the GPU (scripts/gpu/verify.sh bench; requires_cuda at the end)."""

import collections
import csv
import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import torch
from conftest import EXAMPLES, ROOT, extraction_of, harvest, run_check, tree_env
from rich.console import Console

from harvest.bench.children import run_twin
from harvest.bench.command import BenchResult
from harvest.bench.ncu import ncu_command
from harvest.bench.output import BenchRow, SweepRow, build_row, print_result, write_csv
from harvest.bench.plan import graph_permission, make_plan, select
from harvest.bench.sweep import MAX_BLOCK_ELEMENTS, NUM_WARPS, config_label, plot_sweep, sweep_configs, sweep_space
from harvest.bench.timing import bytes_moved
from harvest.module.file import read_module_file
from harvest.parse import parse_output_code
from harvest.trust import made_here, remember_made_here

SHOWCASES = ROOT / "extracted/h200"
Storage = collections.namedtuple("Storage", "lo hi fill high")


@pytest.fixture(scope="module")
def small_model(tmp_path_factory) -> Path:
    """examples/small_model.py extracted on the CPU path (real Inductor Triton kernels, a record of every launch)."""
    return extraction_of(EXAMPLES / "small_model.py", tmp_path_factory)  # a copy of the session's one extraction


def _space(extraction: Path, module: str):
    manifest = json.loads((extraction / "manifest.json").read_text())
    graph, kernel = next((g, k) for g in manifest["graphs"] for k in g["kernels"] if k["module"] == module)
    parsed = parse_output_code((extraction / graph["raw"]).read_text(), name=graph["name"])
    return sweep_space(parsed.kernel(kernel["name"]), read_module_file((extraction / module).read_text(), module))


# -- no GPU ------------------------------------------------------------------------------------------------------------


def test_bench_without_a_gpu_is_one_line_and_exit_9(tmp_path):
    assert not torch.cuda.is_available(), "this test is about a machine without a GPU"
    extraction = tmp_path / "square_square"
    shutil.copytree(SHOWCASES / "square_square", extraction)
    done = harvest("bench", str(extraction), cwd=tmp_path)
    assert done.returncode == 9
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harvest: error: timing needs a CUDA device"), done.stderr
    assert not (extraction / "bench").exists()  # nothing half-written
    assert "9 NoDeviceError" in harvest("bench", "--help", cwd=tmp_path).stdout


def test_module_bench_needs_a_gpu_and_check_still_works(small_model):
    module = small_model / "g0_forward/add_kernel.py"
    assert run_check(module).returncode == 0
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, str(module), "--check", "--bench"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 9, done.stdout + done.stderr
    assert "recorded: ok" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("--bench needs a CUDA device")
    assert "median" not in done.stdout  # never an interpreter time printed as a GPU time


# -- ncu -----------------------------------------------------------------------------------------------------------------


def test_ncu_command_targets_the_renamed_kernel_and_writes_next_to_the_module(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = tmp_path / "out/g0_inference/square_square_kernel.py"
    assert ncu_command(module, "square_square_kernel") == [
        "ncu", "--set", "full", "--kernel-name", "square_square_kernel", "--launch-count", "1", "--clock-control", "none", "-f",
        "-o", "out/g0_inference/square_square_kernel", "python", "out/g0_inference/square_square_kernel.py", "--check",
    ]


def test_ncu_prints_without_a_gpu_and_run_needs_one(tmp_path):
    extraction = tmp_path / "pytorch_square"
    shutil.copytree(SHOWCASES / "pytorch_square", extraction)
    done = harvest("bench", "pytorch_square/g1_inference", "--ncu", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "ncu --set full --kernel-name mul_kernel --launch-count 1 --clock-control none -f -o pytorch_square/g1_inference/mul_kernel "
        "python pytorch_square/g1_inference/mul_kernel.py --check"
    )
    assert len(harvest("bench", "pytorch_square", "--ncu", cwd=tmp_path).stdout.strip().splitlines()) == 3
    refused = harvest("bench", "pytorch_square/g1_inference", "--ncu", "run", cwd=tmp_path)
    assert refused.returncode == 9 and "CUDA device" in refused.stderr


# -- what PATH selects, what may run -----------------------------------------------------------------------------------


def test_path_selects_an_extraction_a_graph_or_a_module():
    small = SHOWCASES / "small_model"
    assert len(select(small).kernels) == 13
    assert {g["name"] for g, _ in select(small / "g1_backward").kernels} == {"g1_backward"}
    (graph, kernel), = select(small / "g0_forward/softmax_kernel.py").kernels
    assert kernel["display_name"] == "softmax_kernel" and graph["name"] == "g0_forward"
    assert [k["display_name"] for _, k in select(small, "*layer_norm*").kernels] == [
        "layer_norm_fwd_kernel", "layer_norm_bwd_kernel", "layer_norm_bwd_kernel_1"]
    assert len(select(small, "triton_per_fused_native_layer_norm_0").kernels) == 1  # Inductor's name works too


def test_inductor_code_runs_only_for_an_extraction_made_here_or_with_trust_artifact(small_model, tmp_path):
    # The showcase was made on another machine: whatever its manifest says, its output_code.py does not run here.
    copy = tmp_path / "showcase"
    shutil.copytree(SHOWCASES / "small_model", copy)
    showcase = json.loads((copy / "manifest.json").read_text())
    graph = showcase["graphs"][0]
    forged = dict(showcase, mode="cuda")
    assert "not made on this machine" in graph_permission(forged, graph, copy, run_artifact=False)
    assert "--trust-artifact" in graph_permission(forged, graph, copy, run_artifact=False)
    assert graph_permission(forged, graph, copy, run_artifact=True) == ""
    remember_made_here(copy)  # what `harvest extract` does after running a target
    assert graph_permission(forged, graph, copy, run_artifact=False) == ""
    (copy / graph["raw"]).write_text((copy / graph["raw"]).read_text() + "\nprint('changed')\n")
    assert "not made on this machine" in graph_permission(forged, graph, copy, run_artifact=False)  # raw/ changed since
    cpu = json.loads((small_model / "manifest.json").read_text())
    assert made_here(small_model)  # the fixture's extraction ran its target here
    assert "CPU path" in graph_permission(cpu, cpu["graphs"][0], small_model, run_artifact=True)


# -- sweep configs -------------------------------------------------------------------------------------------------------


def _elements(config: dict, blocks) -> int:
    product = 1
    for block in blocks:
        product *= config[block.name]
    return product


def test_sweep_of_a_pointwise_kernel_is_block_size_times_warps():
    space = _space(SHOWCASES / "square_square", "g0_inference/square_square_kernel.py")
    assert [(b.name, b.inductor, b.low, b.high) for b in space.blocks] == [("BLOCK_SIZE", "XBLOCK", 32, 4096)]
    configs = sweep_configs(space)
    assert configs[0] == {"BLOCK_SIZE": 1024, "num_warps": 4, "num_stages": 1}  # Inductor's choice first
    assert {c["BLOCK_SIZE"] for c in configs} == {32, 64, 128, 256, 512, 1024, 2048, 4096}
    assert {c["num_warps"] for c in configs} == set(NUM_WARPS) and {c["num_stages"] for c in configs} == {1}
    assert all(c["BLOCK_SIZE"] >= 32 * c["num_warps"] for c in configs)  # no program smaller than its threads
    assert len(configs) == len({json.dumps(c, sort_keys=True) for c in configs}) == 30


def test_sweep_of_a_persistent_reduction_keeps_the_row_block():
    space = _space(SHOWCASES / "small_model", "g0_forward/layer_norm_fwd_kernel.py")
    assert [b.name for b in space.blocks] == ["BLOCK_ROWS"]  # BLOCK_COLS = 512 is fixed in the body: the whole row
    assert space.fixed_elements == 512 and any("fixed at 512" in note for note in space.notes)
    configs = sweep_configs(space)
    assert configs[0] == {"BLOCK_ROWS": 2, "num_warps": 1, "num_stages": 1}
    assert {c["BLOCK_ROWS"] for c in configs} == {1, 2, 4, 8, 16}  # 16 rows x 512 = 8192 elements at most
    assert all(c["BLOCK_ROWS"] * 512 <= MAX_BLOCK_ELEMENTS for c in configs)


def test_sweep_of_a_looped_reduction_adds_stages_and_stays_within_inductors_limits():
    space = _space(SHOWCASES / "small_model", "g1_backward/layer_norm_bwd_kernel.py")
    assert [(b.name, b.inductor) for b in space.blocks] == [("BLOCK_ROWS", "XBLOCK"), ("BLOCK_COLS", "R0_BLOCK")]
    assert space.num_stages == (1, 2, 3, 4)
    every = sweep_configs(space, limit=10_000)
    assert every[0] == {"BLOCK_COLS": 512, "BLOCK_ROWS": 8, "num_warps": 16, "num_stages": 1}
    assert max(c["BLOCK_COLS"] for c in every) == 512  # the row is 512 long: Inductor's size hint bounds R0_BLOCK
    assert all(_elements(c, space.blocks) <= space.max_elements for c in every)
    assert {c["num_stages"] for c in every} == {1, 2, 3, 4}
    capped = sweep_configs(space, limit=40)
    assert len(capped) == 40 and capped[0] == every[0] and all(c in every for c in capped)
    assert config_label(capped[0], ("BLOCK_ROWS", "BLOCK_COLS")) == "BLOCK_ROWS=8 BLOCK_COLS=512 w16 s1"


def test_sweep_plan_for_a_cpu_extraction(small_model):
    selection = select(small_model)
    plan, skipped = make_plan(selection, sweep=True, sweep_max=64, profile=False, run_artifact=False, check_only=True,
                              out_dir=small_model / "bench")
    assert not skipped and len(plan["kernels"]) == 11
    for job in plan["kernels"]:
        assert job["sweep"] and job["sweep"][0] == _module_config(small_model / Path(job["module"]).relative_to(small_model))
    assert plan["device"] == "cpu" and not any(g["run"] for g in plan["graphs"])  # CPU-path graphs never run on a GPU


def _module_config(path: Path) -> dict:
    return dict(read_module_file(path.read_text(), path.name).config)


# -- the sweep's correctness gate, on the CPU -------------------------------------------------------------------------------


def test_every_swept_config_is_checked_against_the_record_under_the_interpreter(small_model, tmp_path):
    out = tmp_path / "gate"
    done = harvest("bench", str(small_model / "g0_forward"), "-k", "add_kernel", "--sweep", "--check-only", "-o", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"swept configs that match the record: (\d+) of \1\b", done.stdout), done.stdout
    rows = list(csv.DictReader((out / "g0_forward/add_kernel.sweep.csv").open()))
    assert [f.name for f in fields(SweepRow)] == list(rows[0])
    assert rows[0]["inductor_choice"] == "True" and all(r["check"] == "ok" for r in rows)
    assert all(r["median_ms"] == "" for r in rows)  # nothing timed on the CPU
    assert not (out / "bench.csv").exists()


def test_a_config_that_computes_something_else_fails_the_gate(small_model, tmp_path):
    edited = tmp_path / "edited"
    shutil.copytree(small_model, edited, ignore=shutil.ignore_patterns("bench"))
    module = edited / "g0_forward/add_kernel.py"
    source = module.read_text()
    store = re.search(r"tl\.store\((\w+) \+ \((\w+)\), (\w+), (\w+)\)", source)
    assert store, "the add kernel stores one value"
    # A kernel whose result depends on its block size: right only for the config the run used (256).
    module.write_text(source.replace(store.group(0), f"tl.store({store.group(1)} + ({store.group(2)}), {store.group(3)} + (BLOCK_SIZE != 256), {store.group(4)})"))
    done = harvest("bench", str(module), "--sweep", "--check-only", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = list(csv.DictReader((edited / "bench/g0_forward/add_kernel.sweep.csv").open()))
    assert rows[0]["config"].startswith("BLOCK_SIZE=256") and rows[0]["check"] == "ok"
    assert all(r["check"].startswith("MISMATCH") for r in rows[1:] if "BLOCK_SIZE=256 " not in r["config"] + " ")


# -- bytes moved, the timing code modules carry -------------------------------------------------------------------------


def test_bytes_moved_counts_each_view_read_and_written():
    View = collections.namedtuple("View", "shape stride offset dtype")
    storages = [Storage(0, 4000, torch.float32, None), Storage(0, 4000, None, None), Storage(0, 40, torch.float32, None)]
    tensors = {
        "a_ptr": View((10, 100), (100, 1), 0, torch.float32),  # read: 4000 bytes
        "out_ptr": View((10, 100), (100, 1), 0, torch.float32),  # written only: 4000 bytes
        "bias_ptr": View((10, 10), (0, 1), 0, torch.float32),  # broadcast over rows: 10 values, 40 bytes
    }
    storage_of = {"a_ptr": 0, "out_ptr": 1, "bias_ptr": 2}
    assert bytes_moved(tensors, storage_of, storages, ["out_ptr"]) == 4000 + 4000 + 40
    in_place = {"x_ptr": View((1000,), (1,), 0, torch.float32)}
    assert bytes_moved(in_place, {"x_ptr": 0}, storages, ["x_ptr"]) == 8000  # read and written: twice
    same_twice = {"a": View((1000,), (1,), 0, torch.float32), "b": View((1000,), (1,), 0, torch.float32)}
    assert bytes_moved(same_twice, {"a": 0, "b": 0}, storages, []) == 4000
    half = {"h": View((1000,), (1,), 0, torch.float16)}
    assert bytes_moved(half, {"h": 0}, storages, []) == 2000
    strided = {"s": View((10, 10), (100, 1), 0, torch.float32)}  # 10 rows of 10 out of 100: 100 values
    assert bytes_moved(strided, {"s": 0}, storages, []) == 400


def test_square_square_moves_800_mb():
    kernel = _kernel_module(SHOWCASES / "square_square/g0_inference/square_square_kernel.py")
    assert kernel.bytes_moved() == 2 * 10000 * 10000 * 4


def _kernel_module(path: Path):
    """A generated module bound to its extraction's harness (harness.Kernel), imported as harvest bench does: it is
    our own output, and importing it only defines the kernel."""
    from harvest.bench.child import load_kernel_module

    return load_kernel_module(str(path), f"module_under_test_{path.stem}")


def _module_namespace(path: Path) -> dict:
    """A generated module's globals, run as a library (it is our own output: the kernel is only defined)."""
    namespace = {"__name__": "module_under_test", "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def test_every_module_times_with_harvests_own_lines(small_model):
    """Every extraction's harness.py carries harvest/bench/timing.py's timing section, and every module imports its main."""
    text = (ROOT / "harvest/bench/timing.py").read_text()
    section = text[text.index("# >>> timing") : text.index("# <<< timing")]
    harnesses = [small_model / "harness.py"] + list(SHOWCASES.glob("*/harness.py"))
    assert len(harnesses) == 6
    for harness in harnesses:
        assert section in harness.read_text(), harness
    modules = [p for p in small_model.glob("g*/*.py")] + list(SHOWCASES.glob("*/g*/*_kernel*.py"))
    assert len(modules) > 20
    for module in modules:
        assert "\nfrom harness import Tensor, main" in module.read_text(), module


# -- rows, CSV, JSON, plot, twin ----------------------------------------------------------------------------------------------


def _results_for(kernel: str) -> tuple[dict, dict]:
    timing = {"median_ms": 0.2, "p20_ms": 0.19, "p80_ms": 0.21, "reps": 500, "first_call_ms": 410.0, "method": "CUDA events"}
    entry = {
        "bench": {"inputs": "recorded", "bytes_moved": 800_000_000,
                  "timings": {"kernel": dict(timing, gbps=4000.0, pct_copy=98.0), "eager": dict(timing, median_ms=0.4)}},
        "extracted_device": {"median_ms": 0.195, "p20_ms": 0.19, "p80_ms": 0.2, "samples": 20},
        "inductor_alone": dict(timing, median_ms=0.201),
        "eager_aten": ["aten::pow"],
        "errors": {},
    }
    graph = {"kernels": {kernel: {"device": {"median_ms": 0.194, "p20_ms": 0.193, "p80_ms": 0.196, "samples": 20},
                                  "config": {"kwargs": {"XBLOCK": 1024}, "num_warps": 4, "num_stages": 1},
                                  "recorded_config": {"kwargs": {"XBLOCK": 1024}, "num_warps": 4, "num_stages": 1},
                                  "pinned": True,
                                  "device_as_it_runs": {"median_ms": 0.18, "p20_ms": 0.179, "p80_ms": 0.181, "samples": 20}}}}
    return entry, graph


def test_rows_are_written_as_csv_and_json_in_field_order(tmp_path):
    manifest = json.loads((SHOWCASES / "square_square/manifest.json").read_text())
    graph = manifest["graphs"][0]
    kernel = graph["kernels"][0]
    entry, graph_result = _results_for(kernel["name"])
    row = build_row(graph, kernel, entry, graph_result, {"median_ms": 0.25, "p20_ms": 0.24, "p80_ms": 0.26}, 4080.0,
                    '{"BLOCK_SIZE": 1024}')
    assert row.extracted_over_in_graph == pytest.approx(0.195 / 0.194)
    assert row.eager_over_extracted == pytest.approx(2.0) and row.twin_ms == 0.25
    assert row.eager_ops == "aten::pow" and row.aten_ops == "aten.pow" and row.note == ""
    assert row.in_graph_as_it_runs_ms == 0.18 and row.in_graph_config_pinned is True
    write_csv(tmp_path / "bench.csv", [row, row])
    lines = (tmp_path / "bench.csv").read_text().splitlines()
    assert lines[0].split(",")[:6] == ["graph", "module", "kernel", "inductor_kernel", "kind", "aten_ops"]
    assert next(csv.reader([lines[0]])) == [f.name for f in fields(BenchRow)]
    values = dict(zip(next(csv.reader([lines[0]])), next(csv.reader([lines[1]]))))
    assert values["extracted_ms"] == "0.2" and values["twin_ms"] == "0.25" and values["in_graph_config_pinned"] == "True"
    assert values["inductor_alone_device_ms"] == ""  # not measured: empty, never 0
    first = (tmp_path / "bench.csv").read_bytes()
    write_csv(tmp_path / "bench.csv", [row, row])
    assert (tmp_path / "bench.csv").read_bytes() == first  # deterministic


def test_a_row_says_why_a_figure_is_missing():
    manifest = json.loads((SHOWCASES / "square_square/manifest.json").read_text())
    graph, kernel = manifest["graphs"][0], manifest["graphs"][0]["kernels"][0]
    entry, _ = _results_for(kernel["name"])
    entry["errors"] = {"Inductor's kernel alone": "RuntimeError: boom"}
    row = build_row(graph, kernel, entry, {"skipped": "an artifact extraction: ... --run-artifact"}, {"error": "--bench exited 1: x"}, None, "")
    assert row.in_graph_ms is None and row.extracted_over_in_graph is None
    assert "Inductor's kernel alone: RuntimeError: boom" in row.note and "--run-artifact" in row.note and "twin: --bench exited 1" in row.note


def _small_model_bench_result() -> BenchResult:
    """A BenchResult as `harvest bench extracted/small_model --sweep` builds it: a row per kernel of the showcase's
    manifest (figures as the bench child reports them), one sweep."""
    manifest = json.loads((SHOWCASES / "small_model/manifest.json").read_text())
    rows = []
    for graph in manifest["graphs"]:
        for kernel in graph["kernels"]:
            entry, graph_result = _results_for(kernel["name"])
            twin = {"median_ms": 0.25, "p20_ms": 0.24, "p80_ms": 0.26}
            rows.append(build_row(graph, kernel, entry, graph_result, twin, 4080.0, '{"XBLOCK": 1024}'))
    sweep = [SweepRow("g0_forward", "softmax_kernel", f"BLOCK_ROWS={rows_} w{warps} s1", f"BLOCK_ROWS={rows_}", warps, 1,
                      rows_ == 2 and warps == 1, "ok", 0.01 * rows_ + warps / 1e3, 0.0098 * rows_, 0.0102 * rows_, 2100.0, 51.5)
             for rows_ in (1, 2, 4) for warps in (1, 2)]
    return BenchResult(out_dir=Path("bench"), rows=rows, sweeps={"g0_forward/softmax_kernel": sweep},
                       env={"gpu": "NVIDIA H200"}, copy_gbps=4080.0)


def _printed(result: BenchResult, width: int, terminal: bool) -> str:
    out = io.StringIO()
    print_result(Console(file=out, width=width, force_terminal=terminal, color_system=None, highlight=False, soft_wrap=True), result)
    return out.getvalue()


def test_the_bench_table_never_folds_a_cell_in_a_pipe_or_a_narrow_terminal():
    """On the H200, piped or in 80 columns, rich folded every cell into 3-character slivers (`│ g0_f │ aten │`).
    Where the table does not fit (or stdout is no terminal) each kernel gets a block instead, its figures under the
    table's column names; a terminal wide enough gets the table, every name whole."""
    result = _small_model_bench_result()
    names = [f"{row.graph}/{row.kernel}" for row in result.rows]
    assert len(names) == 13 and "g1_backward/layer_norm_bwd_kernel_1" in names
    for width, terminal in ((80, True), (200, True), (80, False)):
        text, sweep = _printed(result, width, terminal).split("sweep of g0_forward/softmax_kernel")
        assert "│" not in text and "┃" not in text and "…" not in text, (width, terminal)
        lines = text.splitlines()
        assert [line for line in lines if line.split(":")[0] in names] == [f"{name}: aten::pow" for name in names]
        figures = [line for line in lines if line.startswith("  ")]
        assert len(figures) == 5 * len(names) and max(len(line) for line in figures) <= 80
        assert figures[:5] == [
            "  MB                      800.0                   first call ms  410",
            "  extracted ms (p20-p80)  0.2000 (0.1900-0.2100)  GB/s (% copy)  4000 (98%)",
            "  in graph ms             0.1940 (0.1930-0.1960)  ext/graph      1.005",
            "  eager ms                0.4000 (0.1900-0.2100)  eager/ext      2.000",
            "  Inductor alone ms       0.2010                  twin ms        0.2500",
        ]
        if width == 200:  # the sweep's table fits there: drawn, nothing cut
            assert "│ BLOCK_ROWS=2 w1 s1  <- Inductor's choice │ ok    │ 0.0210 (0.0196-0.0204) │ 2100 │ 52%    │" in sweep
            continue
        sweep = sweep.splitlines()
        assert sweep[1].split() == ["config", "check", "median", "ms", "(p20-p80)", "GB/s", "%", "copy"]
        assert sweep[4] == "BLOCK_ROWS=2 w1 s1  <- Inductor's choice  ok     0.0210 (0.0196-0.0204)  2100  52%"
    assert _printed(result, 80, False) == _printed(result, 80, False)  # deterministic
    wide = _printed(result, 260, True)
    assert "┃ kernel " in wide and "…" not in wide
    table_names = [line.split("│")[1].strip() for line in wide.splitlines() if line.startswith("│")]
    assert table_names[:13] == names  # one line per kernel, each name whole
    assert "│ 0.2000 (0.1900-0.2100) │" in wide


def test_sweep_plot_is_a_png(tmp_path):
    rows = []
    for block in (256, 512, 1024, 2048):
        for warps in (2, 4, 8):
            median = 0.2 + abs(block - 1024) / 1e4 + warps / 1e3
            rows.append(SweepRow("g0_inference", "square_square_kernel", f"BLOCK_SIZE={block} w{warps} s1", f"BLOCK_SIZE={block}",
                                 warps, 1, block == 1024 and warps == 4, "ok", median, median * 0.98, median * 1.02))
    rows.append(SweepRow("g0_inference", "square_square_kernel", "BLOCK_SIZE=64 w1 s1", "BLOCK_SIZE=64", 1, 1, False, "MISMATCH: x"))
    made = plot_sweep(rows, "square_square", (0.39, 0.38, 0.40), tmp_path / "sweep.png", ("BLOCK_SIZE",))
    assert made == tmp_path / "sweep.png" and made.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    two_blocks = [SweepRow("g", "k", f"R={r} C={c} w4 s{s}", f"R={r} C={c}", 4, s, r == 1, "ok", 0.1 * r + c / 1e3 + s / 1e4, 0.09, 0.2)
                  for r in (1, 2) for c in (64, 128) for s in (1, 2)]
    assert plot_sweep(two_blocks, "looped", None, tmp_path / "two.png", ("R", "C")).exists()


TWIN = """
import argparse, json
parser = argparse.ArgumentParser()
parser.add_argument("--bench", action="store_true")
parser.add_argument("--json")
options = parser.parse_args()
result = {"schema": "harvest.bench/1", "kernel": "square_twin", "timings": {"twin": {"median_ms": 0.3, "p20_ms": 0.29, "p80_ms": 0.31}}}
json.dump(result, open(options.json, "w"))
"""


def test_the_twin_joins_through_its_bench_json(tmp_path):
    twin = tmp_path / "square_square_kernel_twin.py"
    twin.write_text(TWIN)
    assert run_twin(twin) == {"median_ms": 0.3, "p20_ms": 0.29, "p80_ms": 0.31}
    twin.write_text("import sys\nsys.exit('no CUDA here')\n")
    assert run_twin(twin)["error"] == "--bench exited 1: no CUDA here"


# -- on the GPU ----------------------------------------------------------------------------------------------------------


@pytest.mark.requires_cuda
def test_bench_on_a_gpu_times_every_column(tmp_path):
    env = tree_env()
    env.pop("TRITON_INTERPRET", None)
    out = tmp_path / "square_square"
    run = lambda *args: subprocess.run([sys.executable, "-m", "harvest", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run("extract", str(EXAMPLES / "square_square.py"), "-o", str(out), "--device", "cuda", "-q").returncode == 0
    done = run("bench", str(out))
    assert done.returncode == 0, done.stderr
    row = json.loads((out / "bench/bench.json").read_text())["rows"][0]
    for column in ("extracted_ms", "in_graph_ms", "inductor_alone_ms", "eager_ms", "copy_gbps", "bytes_moved"):
        assert row[column], column
    assert 0.9 < row["extracted_over_in_graph"] < 1.1
    assert row["extracted_pct_copy"] > 80


def test_the_twin_templates_own_json_joins_too(tmp_path):
    twin = tmp_path / "k_twin.py"
    twin.write_text("import json, sys\njson.dump({'kernel': 'k', 'twin_ms': [0.3, 0.29, 0.31], 'triton_ms': [0.2, 0.19, 0.21]}, open(sys.argv[-1], 'w'))\n")
    figures = run_twin(twin)
    assert (figures["median_ms"], figures["p20_ms"], figures["p80_ms"]) == (0.3, 0.29, 0.31)
    assert "own --bench" in figures["note"]


@pytest.mark.parametrize("module, dispatched, not_dispatched", [
    ("g0_inference/square_kernel.py", "aten::pow", "aten::mul"),  # torch.square(a)
    ("g1_inference/mul_kernel.py", "aten::mul", "aten::pow"),  # a * a
    ("g2_inference/pow_kernel.py", "aten::pow", "aten::mul"),  # a ** 2
])
def test_profile_of_the_eager_reference_shows_the_seeds_finding(module, dispatched, not_dispatched):
    """--profile's eager table: torch.square and a ** 2 dispatch aten::pow, a * a aten::mul (profiled here on the CPU,
    on a small input; on a GPU the same ops launch the kernels the table sorts by device time)."""
    # In a process of its own, as harvest bench profiles: the profiler records every thread's ops, and a test run has
    # others (an earlier in-process extraction's workers) that may dispatch aten::pow or aten::mul meanwhile.
    script = (
        "import json, sys, torch\n"
        "from harvest.bench.child import load_kernel_module, op_table\n"
        "kernel = load_kernel_module(sys.argv[1], 'module_under_test')\n"
        "table, ops = op_table(lambda: kernel.reference(torch.randn(64, 64)))\n"
        "print(json.dumps({'table': table, 'ops': ops}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(SHOWCASES / "pytorch_square" / module)], env=tree_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert dispatched in result["ops"] and not_dispatched not in result["ops"], result["ops"]
    assert dispatched in result["table"]


def test_a_reference_that_computes_nothing_is_not_timed_as_eager(tmp_path, monkeypatch):
    """A reference that computes none of the kernel's outputs (conv_bn's batch-norm kernels once had one: their
    buffers had no node in the FX fragment). Timing it would time an empty call (1.3 us on the H200, first seen as
    'eager 0.0013 ms'); it is refused with the reason instead. The GPU is what is mocked here: the timer, the L2
    buffer, the copy bandwidth; and, for the second module, a reference that returns nothing, as that one did."""
    artifact = ROOT / "tests/fixtures/torch-2.11.0+cu130_triton-3.6.0/models/conv_bn/g0_forward.py"
    done = harvest("extract", str(artifact), "-o", str(tmp_path / "x"), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = {}
    for stem, empty in (("add_kernel", False), ("batch_norm_fwd_kernel_1", True)):
        module = _kernel_module(tmp_path / "x/g0_forward" / f"{stem}.py")
        harness = module.main.__globals__
        timed = []
        monkeypatch.setitem(harness, "time_gpu", lambda fn, flush, timed=timed: timed.append(fn) or {"median_ms": 1.0})
        monkeypatch.setitem(harness, "l2_flush_buffer", lambda device: None)
        monkeypatch.setitem(harness, "bench_result", lambda kernel, device, inputs, moved, timings, copy_gbps, *matmul: timings)
        monkeypatch.setitem(module.namespace, "launch", lambda **kwargs: None)
        if empty:
            outputs = list(module.OUTPUTS)
            nothing = functools.wraps(module.reference)(lambda *args, **kwargs: {})  # (its parameters kept)
            monkeypatch.setitem(module.namespace, "reference", nothing)
            monkeypatch.setitem(module.namespace, "UNCHECKED", {o: "no node in the FX fragment" for o in outputs})
        results[stem] = (module.bench("cpu", copy_gbps=4000.0, inputs=(module.make_inputs("cpu"), "made-up")), len(timed), module)
    timings, calls, module = results["batch_norm_fwd_kernel_1"]
    assert calls == 1 and timings["kernel"] == {"median_ms": 1.0}
    assert timings["eager"]["error"].startswith("no eager reference: it computes none of the kernel's outputs ("), timings
    timings, calls, module = results["add_kernel"]
    assert calls == 2 and timings["eager"] == {"median_ms": 1.0}, timings  # a reference with outputs is timed


def test_in_the_graph_l2_is_flushed_right_before_each_timed_kernel_and_put_back_after():
    """The graph's kernels are compared with the extracted one from the same cold L2: each named kernel's launcher
    flushes first inside the block; outside it the class's own run is back. (A plain object stands for Inductor's
    autotuner and a counter for the L2 buffer: the GPU is what is mocked.)"""
    from types import SimpleNamespace

    from harvest.bench.child import flushed_before_each_kernel

    class Tuner:
        def run(self, *args, **kwargs):
            events.append(("run", args))

    class Flush:
        def zero_(self):
            events.append(("flush",))

    events: list = []
    module = SimpleNamespace(k0=Tuner(), k1=Tuner(), other=Tuner())
    with flushed_before_each_kernel(module, ["k0", "k1", "missing"], Flush()):
        module.k0.run(1)
        module.other.run(2)
        module.k1.run(3)
    module.k0.run(4)
    assert events == [("flush",), ("run", (1,)), ("run", (2,)), ("flush",), ("run", (3,)), ("run", (4,))]
    assert "run" not in vars(module.k0) and "run" not in vars(module.k1)


def test_modules_of_two_extractions_in_one_process_each_get_their_own_harness():
    """harvest bench and scripts/gpu/parts/twins.py load modules of several extractions in one process: a module must not
    be bound to the harness.py another extraction imported first (on the H200 a conv_bn kernel once got the small
    model's harness, whose triton_helpers had no welford)."""
    first = _kernel_module(SHOWCASES / "small_model/g0_forward/softmax_kernel.py")
    second = _kernel_module(SHOWCASES / "square_square/g0_inference/square_square_kernel.py")
    third = _kernel_module(SHOWCASES / "small_model/g1_backward/add_kernel.py")
    harness_of = lambda kernel: Path(kernel.main.__globals__["__file__"]).resolve().parent  # noqa: E731
    assert harness_of(first) == harness_of(third) == (SHOWCASES / "small_model").resolve()
    assert harness_of(second) == (SHOWCASES / "square_square").resolve()
    assert hasattr(first.namespace["triton_helpers"], "max2")


def test_a_template_sweep_gives_each_config_its_tflops_and_the_table_a_column_for_it():
    """A matmul template's sweep rows carry TFLOP/s (2*M*N*K over each config's median) and its table shows them.
    (The timings are given: the GPU is what is left out.)"""
    import io

    from rich.console import Console

    from harvest.bench.output import sweep_rows

    job = {"graph": "g0_forward", "display_name": "addmm_kernel", "sweep_blocks": ["BLOCK_M", "BLOCK_N", "BLOCK_K"]}
    config = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}
    entries = [{"config": config, "check": "ok", "timing": {"median_ms": 0.0140, "p20_ms": 0.0137, "p80_ms": 0.0147}},
               {"config": dict(config, num_warps=8), "check": "ok", "timing": {"median_ms": 0.0138}}]
    entry = {"bench": {"bytes_moved": 12587008, "flops": 2 * 2048 * 2048 * 512}}
    rows = sweep_rows(job, entries, 4200.0, entry)
    assert [round(r.tflops, 1) for r in rows] == [306.8, 311.2]
    out = io.StringIO()
    result = BenchResult(out_dir=Path("."), sweeps={"g0_forward/addmm_kernel": rows})
    print_result(Console(file=out, width=200), result)
    assert "TFLOP/s" in out.getvalue() and "306.8" in out.getvalue()
