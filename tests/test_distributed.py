"""A torchrun job harvested on every rank (issue 26, the CPU part): gloo, 2 ranks, real DDP and FSDP2 training steps.

No mocks: `harvest extract --nproc-per-node 2` (or `-- torchrun ...`) runs examples/distributed/*.py under torchrun,
each rank through Inductor's CPU Triton backend; every module of every rank is checked with its own --check.
"""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT, assert_same_tree, harvest, kernels, run_check

from harvest.capture.artifacts import load_raw_capture
from harvest.capture.ranks import merge_ranks
from harvest.errors import TargetError, TimeoutError_, UsageError
from harvest.report_ranks import rank_markdown, rank_summary

DDP = EXAMPLES / "distributed" / "ddp_mlp.py"
FSDP2 = EXAMPLES / "distributed" / "fsdp2_mlp.py"


def extract_job(tmp_path_factory, name: str, *args: str) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp(name) / "out"
    timeout = [] if "--timeout" in args else ["--timeout", "300"]  # a hang fails here, with what it captured
    done = harvest("extract", "-o", str(out), *timeout, *args, cwd=ROOT, timeout=900)
    return out, done


def error_line(done: subprocess.CompletedProcess) -> str:
    """harvest's one-line error (progress lines come before it on stderr)."""
    return next(line for line in done.stderr.splitlines() if line.startswith("harvest: error: "))


def manifest_of(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def modules_of(out: Path) -> list[Path]:
    return sorted({out / k["module"] for k in kernels(manifest_of(out)) if k["module"]})


def assert_every_module_checks(out: Path) -> int:
    """Every module --check exits 0 and compares something; returns how many outputs were compared."""
    compared = 0
    for module in modules_of(out):
        done = run_check(module)
        assert done.returncode == 0, f"{module}: {done.stdout}{done.stderr}"
        compared += done.stdout.count(": ok")
    assert compared >= len(modules_of(out))
    return compared


@pytest.fixture(scope="module", autouse=True)
def hanging_job(request, tmp_path_factory):
    """Rank 1 hangs after compiling; harvest ends the job at --timeout 60. Started with the module's first test, in a
    thread: the other tests run while the job waits out its timeout (its test only reads the result). Not started
    when that test is not among those that run."""
    if not any(item.name == "test_a_hanging_rank_is_ended_at_the_timeout_and_named" for item in request.session.items):
        yield None
        return

    def run() -> tuple[Path, subprocess.CompletedProcess, float]:
        started = time.monotonic()
        out, done = extract_job(tmp_path_factory, "ddp-hang", "--timeout", "60", "--nproc-per-node", "2", str(DDP),
                                "--", "--hang-rank", "1")
        return out, done, time.monotonic() - started

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(run)


@pytest.fixture(scope="module")
def same_job(tmp_path_factory):
    out, done = extract_job(tmp_path_factory, "ddp", "--nproc-per-node", "2", str(DDP))
    assert done.returncode == 0, done.stderr
    return out, done


@pytest.fixture(scope="module")
def divergent_job(tmp_path_factory):
    """torchrun's own spelling; rank 1 trains on a larger batch, so every graph differs between the ranks."""
    out, done = extract_job(tmp_path_factory, "ddp-divergent", "--", "torchrun", "--standalone", "--nproc-per-node", "2",
                            str(DDP), "--divergent")
    assert done.returncode == 0, done.stderr
    return out, done


@pytest.fixture(scope="module")
def rank_op_job(tmp_path_factory):
    """Rank 1 scales its output: its forward graph has one op more, its other kernels are rank 0's."""
    out, done = extract_job(tmp_path_factory, "ddp-rank-op", "--nproc-per-node", "2", str(DDP), "--", "--rank-op")
    assert done.returncode == 0, done.stderr
    return out, done


def test_identical_ranks_write_each_kernel_once_and_keep_every_rank_raw(same_job):
    out, done = same_job
    manifest = manifest_of(out)
    assert manifest["ranks"] == [0, 1]
    assert manifest["command"] == ["harvest", "extract", "--", "torchrun", "--standalone", "--nproc-per-node=2", str(DDP)]
    assert [g["name"] for g in manifest["graphs"]] == ["g0_forward", "g1_backward"]
    for graph in manifest["graphs"]:
        assert graph["ranks"] == [0, 1]
        assert graph["raw"] == f"raw/rank0/{graph['name']}/output_code.py"
        assert all(kernel["ranks"] == [0, 1] for kernel in graph["kernels"])
    for rank in (0, 1):  # each rank's own capture: a raw/ of its own, records included
        record = json.loads((out / "raw" / f"rank{rank}" / "capture.json").read_text(encoding="utf-8"))
        assert [g["name"] for g in record["graphs"]] == ["g0_forward", "g1_backward"]
        assert list((out / "raw" / f"rank{rank}" / "g0_forward" / "records").glob("*.pt"))
    assert sorted(p.parent.name for p in out.glob("g*/*.py")) == ["g0_forward"] * 3 + ["g1_backward"] * 4
    assert "rank 0: captured graph 0" in done.stderr and "rank 1: captured graph 0" in done.stderr
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Ranks" in report and "Every rank compiled the same graphs, kernels and configs." in report
    assert 'id="ranks"' in (out / "report.html").read_text(encoding="utf-8")
    assert assert_every_module_checks(out) >= 7


def test_a_torchrun_extraction_replays_to_identical_files(same_job, tmp_path):
    out, _ = same_job
    again = tmp_path / "again"
    done = harvest("extract", str(out), "-o", str(again), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert_same_tree(out, again)


def test_divergent_ranks_are_written_per_rank_and_reported(divergent_job):
    out, _ = divergent_job
    manifest = manifest_of(out)
    assert manifest["command"][:6] == ["harvest", "extract", "--", "torchrun", "--standalone", "--nproc-per-node"]
    names = [g["name"] for g in manifest["graphs"]]
    assert names == ["g0_forward_rank0", "g0_forward_rank1", "g1_backward_rank0", "g1_backward_rank1"]
    assert [g["ranks"] for g in manifest["graphs"]] == [[0], [1], [0], [1]]
    assert manifest["graphs"][1]["raw"] == "raw/rank1/g0_forward/output_code.py"
    grids = {g["name"]: {k["display_name"]: k["recorded"]["grid"] for k in g["kernels"]} for g in manifest["graphs"]}
    assert grids["g0_forward_rank0"] != grids["g0_forward_rank1"]  # 32 rows on rank 1, 16 on rank 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "compile 4/0 (0_forward): compiled differently (rank 0: g0_forward_rank0; rank 1: g0_forward_rank1)" in report
    assert "on every rank, but compiled differently (one module per rank): layer_norm_fwd_kernel" in report
    assert "ranks differ" in (out / "report.html").read_text(encoding="utf-8")
    assert assert_every_module_checks(out) >= 14


def test_harvest_diff_compares_two_ranks(rank_op_job):
    out, _ = rank_op_job
    done = harvest("diff", str(out / "raw" / "rank0"), str(out / "raw" / "rank1"), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "**Triton kernels: 7 → 8 (+1)**" in done.stdout
    assert "`add_mul_kernel` (g0_forward: add, mul;" in done.stdout
    assert "`add_kernel` (g0_forward: add;" in done.stdout


def test_a_kernel_the_same_on_every_rank_is_written_once_in_a_graph_that_differs(rank_op_job):
    out, _ = rank_op_job
    graphs = {g["name"]: {k["display_name"]: k for k in g["kernels"]} for g in manifest_of(out)["graphs"]}
    first, second = graphs["g0_forward_rank0"], graphs["g0_forward_rank1"]
    for name in ("layer_norm_fwd_kernel", "gelu_kernel"):
        assert first[name]["module"] == second[name]["module"] == f"g0_forward_rank0/{name}.py"
        assert first[name]["ranks"] == second[name]["ranks"] == [0, 1]
        assert first[name]["sha256"] == second[name]["sha256"]
        assert not (out / "g0_forward_rank1" / f"{name}.py").exists()
    assert first["add_kernel"]["ranks"] == [0] and second["add_mul_kernel"]["ranks"] == [1]
    assert sorted(p.name for p in (out / "g0_forward_rank1").glob("*.py")) == ["add_mul_kernel.py"]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert ("the same on every rank, written once: layer_norm_fwd_kernel, gelu_kernel; only on rank 0: add_kernel; "
            "only on rank 1: add_mul_kernel") in report
    assert assert_every_module_checks(out) >= 13


def test_a_graph_only_one_rank_compiled_is_named_after_it(same_job):
    """A recompile on rank 1 alone (here: rank 0's capture without its backward graph) is rank 1's."""
    out, _ = same_job
    ranks = {rank: load_raw_capture(out / "raw" / f"rank{rank}") for rank in (0, 1)}
    ranks[0] = replace(ranks[0], graphs=ranks[0].graphs[:1])
    merged = merge_ranks(ranks)
    assert [(g.name, g.ranks, g.raw_dir) for g in merged.graphs] == [
        ("g0_forward", (0, 1), "rank0/g0_forward"), ("g1_backward_rank1", (1,), "rank1/g1_backward")]
    manifest = {"ranks": [0, 1], "graphs": [
        {"name": g.name, "ranks": list(g.ranks), "compile_id": g.compile_id, "aot_id": g.aot_id, "kernels": [], "externs": []}
        for g in merged.graphs]}
    text = rank_markdown(rank_summary(manifest))
    assert "- compile 4/0 (0_backward): g1_backward_rank1 compiled on rank 1 only, not on rank 0" in text
    assert "| 0 | 1 | 0 | 0 | 0 | none |" in text


def test_a_failing_rank_is_named_and_what_every_rank_captured_is_kept(tmp_path_factory):
    out, done = extract_job(tmp_path_factory, "ddp-fail", "--nproc-per-node", "2", str(DDP), "--", "--fail-rank", "1")
    assert done.returncode == TargetError.exit_code, done.stderr
    first = error_line(done)
    assert first.startswith("harvest: error: the target's rank 1 raised RuntimeError: rank 1 was told to fail (--fail-rank) (")
    # rank 0 waits in a barrier: gloo raises there when its peer is gone, or torchrun ends it first
    assert "(rank 0 failed after it)" in first or "(torchrun ended rank 0, which had not finished)" in first
    assert f"kept the partial capture in {out}/raw: 2 graph(s)" in first
    assert [g["ranks"] for g in manifest_of(out)["graphs"]] == [[0, 1], [0, 1]]
    assert (out / "raw" / "rank1" / "capture.json").is_file()
    assert assert_every_module_checks(out) >= 7


def test_fsdp2_fully_shard_on_two_ranks(tmp_path_factory):
    out, done = extract_job(tmp_path_factory, "fsdp2", "--nproc-per-node", "2", str(FSDP2))
    assert done.returncode == 0, done.stderr
    manifest = manifest_of(out)
    assert len(manifest["graphs"]) == 4 and all(g["ranks"] == [0, 1] for g in manifest["graphs"])
    assert "| 0 | 4 | 15 | 0 | 2 | none |" in (out / "report.md").read_text(encoding="utf-8")  # two recompiles (1/1)
    assert assert_every_module_checks(out) >= 15


@pytest.mark.parametrize("args, said", [
    (["--", "torchrun", "--nproc-per-node", "2"], "no script to run (a .py file after torchrun's options)"),
    (["--", "torchrun", "--nproc-per-node", "2", "-m", "x.py"], "torchrun's -m/--no-python"),
    (["--nproc-per-node", "0", str(DDP)], "--nproc-per-node must be at least 1, not 0"),
    (["--nproc-per-node", "2", "--", "torchrun", str(DDP)], "give torchrun's ranks once"),
])
def test_bad_torchrun_arguments_are_one_line(args, said, tmp_path):
    done = harvest("extract", "-o", str(tmp_path / "out"), *args, cwd=ROOT)
    assert done.returncode == UsageError.exit_code, done.stderr
    assert done.stderr.startswith("harvest: error: ") and said in done.stderr.splitlines()[0]
    assert not (tmp_path / "out").exists()


def test_an_artifact_cannot_be_a_torchrun_job(same_job, tmp_path):
    out, _ = same_job
    done = harvest("extract", "-o", str(tmp_path / "again"), "--nproc-per-node", "2", str(out / "raw" / "rank0" / "g0_forward" / "output_code.py"), cwd=ROOT)
    assert done.returncode == UsageError.exit_code, done.stderr
    assert "a torchrun job runs a script" in done.stderr


def test_harvest_run_refuses_a_torchrun_extraction(same_job):
    out, _ = same_job
    done = harvest("run", str(DDP), "--with", str(out), cwd=ROOT)
    assert done.returncode == UsageError.exit_code, done.stderr
    assert "is a torchrun job's extraction: `harvest run --with` runs one process" in error_line(done)


@pytest.mark.requires_nvcc
def test_twin_and_ptx_take_a_shared_module_once_and_note_it_for_every_rank(rank_op_job, tmp_path):
    out, _ = rank_op_job
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    for command in ("twin", "ptx"):
        done = harvest(command, str(copy), cwd=ROOT)
        assert done.returncode == 0, done.stderr
    assert (harvest("twin", str(copy), cwd=ROOT).stderr.count("g0_forward_rank0/layer_norm_fwd_kernel.py: twin")) == 1
    entries = [k for k in kernels(manifest_of(copy)) if k["module"] == "g0_forward_rank0/layer_norm_fwd_kernel.py"]
    assert len(entries) == 2
    assert all(k["twin"]["status"] == "ok" and k["ptx"] for k in entries)


def test_a_collective_in_the_graph_is_shown_and_the_kernel_after_it_has_a_reference(tmp_path_factory):
    """funcol.all_reduce inside the compiled function: Inductor calls all_reduce_ on the buffer, then wait_tensor;
    the kernel after it reads the collective's result, which its reference takes as given."""
    out, done = extract_job(tmp_path_factory, "allreduce", "--nproc-per-node", "2", str(EXAMPLES / "distributed" / "allreduce_in_graph.py"))
    assert done.returncode == 0, done.stderr
    (graph,) = manifest_of(out)["graphs"]
    assert [e["op"] for e in graph["externs"]] == ["torch.ops._c10d_functional.all_reduce_.default",
                                                   "torch.ops._c10d_functional.wait_tensor.default"]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| 0 | 1 | 2 | 0 | 0 | all_reduce_, wait_tensor |" in report
    assert "2 extern calls (all_reduce_, wait_tensor)" in report
    for module in modules_of(out):
        done = run_check(module)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "reference: ok" in done.stdout and "recorded: ok" in done.stdout, done.stdout
    # Were rank 1's graph compiled without the collective (a rank-dependent code path), the section would say so:
    first = {**graph, "name": "g0_inference_rank0", "ranks": [0]}
    second = {**graph, "name": "g0_inference_rank1", "ranks": [1], "externs": [],
              "kernels": [{**k, "module": k["module"].replace("g0_inference/", "g0_inference_rank1/"), "ranks": [1]}
                         for k in graph["kernels"]]}
    text = rank_markdown(rank_summary({"ranks": [0, 1], "graphs": [first, second]}))
    assert "collectives: rank 0 all_reduce_, wait_tensor; rank 1 none" in text
    assert "| 1 | 1 | 2 | 2 | 0 | none |" in text


def test_a_changed_rank_wrapper_is_no_longer_made_here(same_job, tmp_path):
    """bench runs raw/rank0/<graph>/output_code.py of a torchrun job: the trust digest covers the ranks' files."""
    from harvest.trust import made_here, raw_digest

    out, _ = same_job
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    before = raw_digest(copy)
    wrapper = copy / "raw" / "rank0" / "g0_forward" / "output_code.py"
    wrapper.write_text(wrapper.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert raw_digest(copy) != before
    assert made_here(out) and not made_here(copy)


def test_torchrun_arguments_it_refuses_are_one_line(tmp_path):
    done = harvest("extract", "-o", str(tmp_path / "out"), "--", "torchrun", "--no-such-option", "1", str(DDP), cwd=ROOT)
    assert done.returncode == TargetError.exit_code, done.stderr
    assert error_line(done).startswith("harvest: error: torchrun started no rank (its arguments?); nothing was captured")


# Last in the file: its job (the hanging_job fixture) ran beside the tests above.
def test_a_hanging_rank_is_ended_at_the_timeout_and_named(hanging_job):
    out, done, seconds = hanging_job.result()
    assert done.returncode == TimeoutError_.exit_code, done.stderr
    assert seconds < 150
    first = error_line(done)
    assert "target ran past --timeout" in first and "(rank 1 had not finished; every rank was ended)" in first
    assert [g["ranks"] for g in manifest_of(out)["graphs"]] == [[0, 1], [0, 1]]  # rank 1 compiled all before it hung
    left = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True)
    assert left.stdout == "", f"processes of the job still running: {left.stdout}"
