"""Bad input, each case a test (issue 11, part 1): one `harvest: error: ...` line, a documented exit code, no
traceback without --debug, and nothing already captured lost (raw/ intact where it existed).

CASES is the table of every bad-input case and the test that shows it, including the cases tests/test_cli.py and
the command tests already had; docs/bad-input.md is generated from it (scripts/bad_input_table.py) and
test_the_docs_table_is_generated_from_these_cases keeps the two equal. Each test here checks its error line against
its row, so neither the table nor the message can drift.

No mocks: the CLI runs as a subprocess, targets are real scripts run through Inductor's CPU Triton backend, artifacts
are the recorded fixtures. A disk-full write is a real one (RLIMIT_FSIZE on the harvest process), Ctrl-C a real SIGINT.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import ROOT, harvest, run_check, run_command, tree, tree_env

from harvest.errors import EXIT_CODES

SQUARE_OUTPUT_CODE = ROOT / "tests/fixtures/torch-2.13.0+cpu_triton-3.9.0/square_square/graph_000.py"
TRACE_LOG = ROOT / "tests/fixtures/artifacts/torch_trace/dedicated_log_torch_trace_small_model.log"
CPP_BACKEND = ROOT / "tests/fixtures/artifacts/cpp_backend"  # made on a CPU without harvest: Inductor's C++ kernels

# (case, what the input is, exit code by error kind ("ok" for 0), a fragment of the error line (for "ok": what
# harvest does), the test that shows it)
CASES: list[tuple[str, str, str, str, str]] = [
    # -- issue 2 (the spine), tested in test_cli.py
    ("missing-target", "the target does not exist", "UsageError", "target not found: no_such_script.py", "test_cli.py::test_missing_target"),
    ("not-python", "a text file that is not .py", "UsageError", "not a Python file: notes.txt", "test_cli.py::test_text_file_is_not_a_python_file"),
    ("binary-py", "binary data named .py", "UsageError", "not a Python file: blob.py is binary", "test_cli.py::test_binary_file_named_py_is_not_a_python_file"),
    ("non-utf8-target", "a .py that is not UTF-8 text", "UsageError", "not a Python file: latin.py is binary or not valid text", "test_cli.py::test_undecodable_py_is_not_a_python_file"),
    ("empty-directory", "an empty directory", "UsageError", "is a directory with no output_code.py", "test_cli.py::test_directory_that_is_no_artifact"),
    ("syntax-error", "a syntax error in the target", "TargetError", "syntax error in broken.py line 3", "test_cli.py::test_syntax_error_in_target"),
    ("out-not-writable", "-o under a regular file, or in /proc", "OutputError", "cannot write to output directory", "test_cli.py::test_output_directory_not_writable"),
    ("truncated-output-code", "an output_code.py cut inside a kernel", "ParseError", "truncated", "test_cli.py::test_truncated_output_code"),
    ("corrupt-output-code", "an output_code.py that is not valid Python", "ParseError", "not valid Python", "test_cli.py::test_corrupt_output_code"),
    ("target-raises", "the target raises after compiling (its traceback tail follows)", "TargetError", "target raised ValueError: boom from the target; kept the partial capture in out/raw: 1 graph(s) captured before that", "test_cli.py::test_target_raises_keeps_what_was_captured"),
    ("target-raises-first", "the target raises before compiling", "TargetError", "target raised RuntimeError: first line; nothing was captured", "test_cli.py::test_target_raises_before_compiling_names_the_exception"),
    ("sys-exit-0", "the target calls sys.exit(0)", "ok", "a success: what it compiled is extracted", "test_cli.py::test_target_exit_0_is_success"),
    ("sys-exit-3", "the target calls sys.exit(3)", "TargetError", "target called sys.exit(3)", "test_cli.py::test_target_exit_3_keeps_captured_graphs"),
    ("os-exit", "the target dies with os._exit(7)", "TargetError", "target process died (exit status 7)", "test_cli.py::test_target_that_dies_without_raising_keeps_and_extracts_its_graphs"),
    ("never-compiles", "the target never calls torch.compile", "NoGraphsError", "no Inductor graphs captured from eager.py", "test_cli.py::test_target_never_compiles"),
    ("timeout", "the target runs past --timeout", "TimeoutError", "target ran past --timeout", "test_cli.py::test_timeout_stops_the_target_and_keeps_the_graph"),
    ("timeout-not-positive", "--timeout 0 or -5", "UsageError", "--timeout must be a positive number of seconds", "test_cli.py::test_timeout_must_be_positive"),
    ("foreign-manifest", "-o holds someone else's manifest.json, or one naming files outside", "ok", "extracted; nothing outside -o is touched", "test_cli.py::test_output_directory_with_a_foreign_manifest"),
    ("twin-outside", "harvest twin on a directory outside any extraction", "UsageError", "not inside an extraction", "test_twin.py::test_twin_of_a_path_outside_an_extraction_is_a_usage_error"),
    ("bench-no-gpu", "harvest bench on a machine without a GPU", "NoDeviceError", "timing needs a CUDA device", "test_bench.py::test_bench_without_a_gpu_is_one_line_and_exit_9"),
    # -- issue 11, tested here
    ("empty-target", "an empty target file", "UsageError", "target empty.py is empty: nothing to run", "test_empty_target"),
    ("neither-directory", "a directory that is neither a debug dir nor an extraction", "UsageError", "notes is a directory with no output_code.py and no TORCH_TRACE *.log", "test_directory_that_is_neither_debug_dir_nor_extraction"),
    ("empty-trace-log", "an empty .log", "NoGraphsError", "no Inductor graph in empty.log: it holds no output code Inductor wrote", "test_empty_trace_log"),
    ("trace-log-cut-mid-line", "a TORCH_TRACE log cut in half (mid-line)", "ParseError", "TORCH_TRACE log cut short: half.log ends mid-line", "test_trace_log_cut_in_half"),
    ("trace-log-cut-in-payload", "a TORCH_TRACE log cut inside the backward graph's output code", "ParseError", "TORCH_TRACE log cut short: cut.log has a record whose payload is cut short (inductor_output_code)", "test_trace_log_cut_inside_a_graph"),
    ("unknown-format", "an output_code.py of an unknown (future) format", "ParseError", "unknown output_code format: kernels defined with async_compile.gluon(...)", "test_output_code_of_an_unknown_format"),
    ("call-missing", "an output_code.py whose kernels are valid but whose call() is missing", "ParseError", "no call() function found", "test_output_code_without_call"),
    ("out-other-target", "-o names the extraction of another target", "OutputError", "out holds the extraction of", "test_out_is_the_extraction_of_another_target"),
    ("out-inside-extraction", "-o points inside an extraction", "OutputError", "is inside the extraction", "test_out_inside_an_extraction"),
    ("out-read-only", "-o is a read-only (immutable) directory", "OutputError", "cannot write to output directory ro", "test_read_only_output_directory"),
    ("cooperative-cpu", "cooperative reductions on the CPU path (the interpreter cannot wait at a grid barrier)", "ok", "extracted: the interpreter runs the grid once more per grid barrier, the workspace kept", "test_cooperative_reductions_on_the_cpu_path"),
    ("disk-full", "a write fails mid-extraction (file size limit: disk full)", "OutputError", "could not write 1 of 4 files to out (harness.py: File too large)", "test_write_error_mid_extraction"),
    ("disk-full-during-run", "the launch record cannot be written while the target runs (file size limit)", "ok", "the target runs on; the manifest says the kernel's data was not saved and why", "test_write_error_while_the_target_runs"),
    ("sigint-run", "Ctrl-C (SIGINT) while the target runs", "Interrupted", "interrupted (Ctrl-C) while the target ran: the target was stopped; kept the partial capture in out/raw: 1 graph(s) captured before that", "test_sigint_during_the_target_run"),
    ("sigint-render", "Ctrl-C (SIGINT) while modules are rendered", "Interrupted", "interrupted (Ctrl-C) while writing the extraction; the capture is kept in out/raw", "test_sigint_during_rendering"),
    ("forks-and-spawns", "the target forks and spawns processes that compile", "ok", "the target's own graphs are extracted; progress lines say a forked process's graph, and the graphs of processes it spawned, were not captured", "test_target_that_forks_and_spawns_compiling_processes"),
    ("megabytes-of-output", "the target prints megabytes to stdout and stderr", "ok", "extracted; all of it goes to raw/target.log, none to harvest's own output", "test_target_that_prints_megabytes"),
    ("changes-cwd", "the target changes its working directory", "ok", "extracted, launch records included (harvest's paths are absolute)", "test_target_that_changes_cwd"),
    ("changes-argv", "the target rewrites sys.argv", "ok", "extracted; the manifest keeps the command as given", "test_target_that_changes_argv"),
    ("crafted-kernel-name", "kernel and graph names crafted to escape the output dir (output_code.py)", "ok", "extracted; every file lands inside -o (paths come from graph index and role, never from names in the file)", "test_crafted_names_stay_inside_the_output_dir"),
    ("crafted-capture-json", "raw/capture.json names a graph '../../escape'", "ParseError", "names a graph '../../escape', not one harvest writes", "test_crafted_graph_name_in_capture_json"),
    ("raw-source-deleted", "an extraction replayed after raw/<graph>/output_code.py was deleted", "ParseError", "raw/g0_inference/output_code.py is missing, but ext/raw/capture.json lists it", "test_replay_after_a_raw_source_was_deleted"),
    ("capture-json-not-json", "raw/capture.json that is not JSON", "ParseError", "ext/raw/capture.json is not valid JSON", "test_capture_json_that_is_not_json"),
    ("capture-json-tampered", "raw/capture.json of the wrong shape", "ParseError", "ext/raw/capture.json is not a capture harvest wrote", "test_capture_json_of_the_wrong_shape"),
    ("manifest-not-json", "manifest.json edited into invalid JSON (harvest report)", "ParseError", "manifest.json is not valid JSON", "test_manifest_that_is_not_json"),
    ("manifest-tampered", "manifest.json whose graphs are not a list (report, twin, ptx, bench, diff)", "ParseError", "manifest.json is not a manifest harvest wrote (no list of graphs)", "test_tampered_manifest"),
    ("manifest-module-escapes", "manifest.json naming a module outside the extraction (harvest twin)", "ParseError", "module '../escaped/evil.py' of kernel triton_poi_fused_pow_0 points outside the extraction", "test_manifest_module_outside_the_extraction"),
    ("diff-unrelated", "harvest diff of two unrelated targets", "UsageError", "share no graph: they are extractions of unrelated targets", "test_diff_of_unrelated_targets"),
    ("check-record-deleted", "a module run with --check after its record was deleted", "ok", "no record (../raw/g0_inference/records/", "test_check_after_the_record_was_deleted"),
    ("check-shrink-zero", "a module run with --check --shrink 0 (or fewer)", "UsageError", "--shrink 0: give the number of programs to run, 1 or more", "test_check_shrink_of_no_programs"),
    ("ptx-outside", "harvest ptx on a directory outside any extraction", "UsageError", "holds no manifest.json and neither does its parent", "test_ptx_outside_an_extraction"),
    ("bench-outside", "harvest bench on a directory outside any extraction", "UsageError", "is not in an extraction", "test_bench_outside_an_extraction"),
    ("ptx-not-a-module", "harvest ptx on a .py that is not a kernel module", "UsageError", "has no '# >>> kernel' ... '# <<< kernel' region", "test_ptx_of_a_file_that_is_not_a_kernel_module"),
    ("twin-not-a-module", "harvest twin on a .py in an extraction that is not a kernel module", "UsageError", "no kernel module under", "test_twin_of_a_file_that_is_not_a_kernel_module"),
    ("bench-not-a-module", "harvest bench on a .py in an extraction that is not a kernel module", "UsageError", "no kernel in", "test_bench_of_a_file_that_is_not_a_kernel_module"),
    ("bench-pattern-matches-nothing", "harvest bench -k with a pattern no kernel matches", "UsageError", "no kernel matching 'zzz*' in ext (graphs: g0_inference)", "test_bench_pattern_that_matches_nothing"),
    ("ptx-bad-arch", "harvest ptx --arch that is no GPU architecture", "UsageError", "--arch 'sm_banana' is not a GPU architecture", "test_ptx_of_an_unknown_arch"),
    ("record-cap-not-positive", "--record-cap 0", "UsageError", "--record-cap and --record-total-cap must be positive", "test_record_cap_must_be_positive"),
    ("missing-path", "twin / ptx / bench / report on a path that does not exist", "UsageError", "nope", "test_new_commands_on_a_missing_path"),
    ("empty-path", "an empty string as the target, -o or a command's path (an unset shell variable)", "UsageError", "TARGET is an empty string: give a file or a directory", "test_empty_path_arguments"),
    ("twin-missing-path", "harvest twin on a path that does not exist", "UsageError", "not found: nope; give an extraction directory, one of its graph directories or a kernel module", "test_twin_on_a_missing_path"),
    # -- issue 18, tested here
    ("cpp-kernels-only", "a TORCH_TRACE log, debug dir or output_code.py made on a CPU without harvest (Inductor's C++ kernels)", "NoTritonKernelsError", "holds 2 C++ kernels (cpp_fused__softmax_add_mul_0, cpp_fused_add_cos_mul_sin_0) and no Triton kernel: Inductor compiled it with its C++ CPU backend; for Triton kernels, run the script through `harvest extract`", "test_artifact_of_cpp_kernels"),
    ("cpp-kernels-run", "a script that sets torch._inductor.config.cpu_backend = 'cpp' itself", "NoTritonKernelsError", "compiled 1 C++ kernel", "test_first_hour.py::test_a_script_that_chooses_the_cpp_backend_says_so"),
    ("run-fails-new-out", "a run that fails before capturing anything, into a new -o or the default extracted/<stem>", "TargetError", "nothing was captured", "test_failed_run_leaves_no_empty_directories"),
    ("run-fails-old-out", "a run that fails before capturing anything, into an existing directory or extraction", "TargetError", "nothing was captured", "test_failed_run_leaves_an_existing_directory_as_it_was"),
    # -- issue 22 (harvest run --with), tested in test_run_with.py
    ("run-no-edit", "harvest run --with an extraction none of whose modules is edited", "SwapError", "no kernel module of this extraction is edited", "test_run_with.py::test_no_edit_is_refused"),
    ("run-edit-does-not-compile", "an edited kernel that Triton cannot compile", "SwapError", "the run with edits stopped there, the extraction is unchanged", "test_run_with.py::test_an_edit_that_does_not_compile_is_refused_with_tritons_error"),
    ("run-parameter-unmapped", "an edited module whose launch parameter is none of Inductor's", "SwapError", "launch parameter count is none of Inductor's launch arguments for triton_poi_fused_pow_0", "test_run_with.py::test_a_parameter_that_no_longer_maps_is_refused_naming_it"),
    ("run-kernel-changed", "the model changed since the extraction: Inductor writes another kernel there", "SwapError", "Inductor now writes another kernel there (its source differs from the one extracted)", "test_run_with.py::test_a_kernel_that_inductor_now_writes_differently_is_refused"),
    ("run-other-target", "harvest run with the extraction of another target", "UsageError", "holds the extraction of", "test_run_with.py::test_another_targets_extraction_is_refused"),
    ("run-not-made-here", "harvest run --with an extraction this machine did not make by running the target (from elsewhere)", "UsageError", "was not made on this machine by running a target", "test_run_with.py::test_an_extraction_this_machine_did_not_make_runs_only_with_trust_artifact"),
    ("run-results-differ", "an edit that changes the model's results (the first differing output and kernel named)", "ResultsDiffer", "results differ: ", "test_run_with.py::test_a_wrong_edit_fails_naming_the_kernel_and_the_first_differing_output"),
    # -- issue 26 (torchrun jobs), tested in test_distributed.py
    ("torchrun-rank-raises", "one rank of a torchrun job raises (the others are ended or fail after it)", "TargetError", "the target's rank 1 raised RuntimeError: rank 1 was told to fail (--fail-rank) (", "test_distributed.py::test_a_failing_rank_is_named_and_what_every_rank_captured_is_kept"),
    ("torchrun-rank-hangs", "one rank of a torchrun job runs past --timeout", "TimeoutError", "(rank 1 had not finished; every rank was ended)", "test_distributed.py::test_a_hanging_rank_is_ended_at_the_timeout_and_named"),
    ("torchrun-no-script", "`-- torchrun OPTIONS` with no .py script, or torchrun's -m", "UsageError", "no script to run (a .py file after torchrun's options)", "test_distributed.py::test_bad_torchrun_arguments_are_one_line"),
    ("torchrun-artifact", "--nproc-per-node with an artifact or an extraction", "UsageError", "a torchrun job runs a script", "test_distributed.py::test_an_artifact_cannot_be_a_torchrun_job"),
    ("torchrun-run-with", "harvest run --with a torchrun job's extraction", "UsageError", "is a torchrun job's extraction: `harvest run --with` runs one process", "test_distributed.py::test_harvest_run_refuses_a_torchrun_extraction"),
]
CASE = {case[0]: case for case in CASES}

COMPILE_ONE = """\
import torch
f = torch.compile(lambda x: torch.square(x) + 1)
print("compiled", f(torch.randn(10, 10)).shape, flush=True)
"""


def exit_code(kind: str) -> int:
    return 0 if kind == "ok" else EXIT_CODES[kind]


def expect(case: str, proc: subprocess.CompletedProcess, *, target_traceback: bool = False) -> str:
    """The case's documented exit code and exactly one `harvest: error:` line holding its fragment; no traceback."""
    _, _, kind, fragment, _ = CASE[case]
    assert proc.returncode == exit_code(kind), f"{case}: exit {proc.returncode}, expected {exit_code(kind)} ({kind})\nstderr:\n{proc.stderr[-3000:]}"
    errors = [line for line in proc.stderr.splitlines() if line.startswith("harvest: error: ")]
    if not target_traceback:
        assert "Traceback (most recent call last)" not in proc.stderr, f"{case}: a traceback leaked:\n{proc.stderr[-3000:]}"
    assert "internal error" not in proc.stderr, proc.stderr[-3000:]
    if kind == "ok":
        assert not errors, f"{case}: an error line on success: {errors}"
        return ""
    assert len(errors) == 1, f"{case}: {len(errors)} error lines, expected one:\n{proc.stderr[-3000:]}"
    line = errors[0]
    assert fragment in line, f"{case}: {fragment!r} not in the error line:\n{line}"
    assert len(line) < 500, f"{case}: not one short line: {line}"
    return line


def extract_artifact(artifact: Path, cwd: Path, out: str = "out") -> Path:
    proc = harvest("extract", str(artifact), "-o", out, "-q", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return cwd / out


@pytest.fixture(scope="module")
def square(tmp_path_factory) -> Path:
    """One extraction of the square_square artifact, shared read-only (copy it to change it)."""
    return extract_artifact(SQUARE_OUTPUT_CODE, tmp_path_factory.mktemp("square"))


# ---------------------------------------------------------------- the table and the docs


def test_every_case_names_a_test_that_exists():
    for case, _, kind, _, test in CASES:
        file, _, name = test.rpartition("::")
        source = (ROOT / "tests" / (file or "test_bad_input.py")).read_text()
        assert f"def {name}(" in source, f"{case}: no {test}"
        assert kind == "ok" or kind in EXIT_CODES, f"{case}: {kind} is not a documented exit code"
    here = [name for *_, name in CASES if "::" not in name]
    assert len(here) == len(set(here)), "one test per case"
    assert len(CASES) >= 30


def test_the_docs_table_is_generated_from_these_cases():
    spec = importlib.util.spec_from_file_location("bad_input_table", ROOT / "scripts/bad_input_table.py")
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)  # type: ignore[union-attr]
    assert (ROOT / "docs/bad-input.md").read_text() == table.render(CASES), "run python scripts/bad_input_table.py"


# ---------------------------------------------------------------- targets and artifacts that are not what they seem


def test_empty_target(tmp_path):
    (tmp_path / "empty.py").write_text("")
    expect("empty-target", harvest("extract", "empty.py", "-q", cwd=tmp_path))
    assert not (tmp_path / "extracted/empty/raw").exists()  # refused before a run


def test_empty_path_arguments(tmp_path):
    """"" would be the current directory: harvest must not read (or walk) it as an artifact."""
    expect("empty-path", harvest("extract", "", "-q", cwd=tmp_path))
    for args in (("extract", "x.py", "-o", " "), ("report", ""), ("twin", ""), ("ptx", ""), ("bench", ""), ("diff", "a", "")):
        proc = harvest(*args, cwd=tmp_path)
        assert proc.returncode == EXIT_CODES["UsageError"] and "is an empty string" in proc.stderr, (args, proc.stderr)
    assert list(tmp_path.iterdir()) == []


def test_directory_that_is_neither_debug_dir_nor_extraction(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/readme.md").write_text("# notes\n")
    (tmp_path / "notes/data.json").write_text("{}\n")
    expect("neither-directory", harvest("extract", "notes", "-o", "out", "-q", cwd=tmp_path))
    assert tree(tmp_path / "notes") == {"readme.md": b"# notes\n", "data.json": b"{}\n"}


def test_empty_trace_log(tmp_path):
    (tmp_path / "empty.log").write_text("")
    expect("empty-trace-log", harvest("extract", "empty.log", "-o", "out", "-q", cwd=tmp_path))


def test_trace_log_cut_in_half(tmp_path):
    data = TRACE_LOG.read_bytes()
    (tmp_path / "half.log").write_bytes(data[: len(data) // 2])  # mid-line, after the forward graph
    line = expect("trace-log-cut-mid-line", harvest("extract", "half.log", "-o", "out", "-q", cwd=tmp_path))
    assert "the 1 complete graph(s) before the cut were extracted to out" in line
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    assert [g["name"] for g in manifest["graphs"]] == ["g0_forward"]
    assert len(list((tmp_path / "out/g0_forward").glob("*.py"))) == 4
    assert (tmp_path / "out/raw/g0_forward/output_code.py").exists()


def test_trace_log_cut_inside_a_graph(tmp_path):
    lines = TRACE_LOG.read_text().splitlines(keepends=True)
    second = [i for i, line in enumerate(lines) if "inductor_output_code" in line][1]
    (tmp_path / "cut.log").write_text("".join(lines[: second + 200]))  # whole lines: only the payload's digest tells
    line = expect("trace-log-cut-in-payload", harvest("extract", "cut.log", "-o", "out", "-q", cwd=tmp_path))
    assert "1 complete graph(s)" in line
    assert sorted(p.name for p in (tmp_path / "out/raw").iterdir()) == ["capture.json", "g0_forward"]  # no half graph


def test_output_code_of_an_unknown_format(tmp_path):
    future = SQUARE_OUTPUT_CODE.read_text().replace("async_compile.triton(", "async_compile.gluon(")
    (tmp_path / "output_code.py").write_text(future)
    line = expect("unknown-format", harvest("extract", "output_code.py", "-o", "out", "-q", cwd=tmp_path))
    assert "the capture is kept in out/raw/g0_inference/output_code.py" in line
    assert (tmp_path / "out/raw/g0_inference/output_code.py").read_text() == future


def test_output_code_without_call(tmp_path):
    source = SQUARE_OUTPUT_CODE.read_text()
    start = source.index("def call(")
    end = source.index("\n\n\n", start)
    (tmp_path / "output_code.py").write_text(source[:start] + source[end:])
    line = expect("call-missing", harvest("extract", "output_code.py", "-o", "out", "-q", cwd=tmp_path))
    assert "kept in out/raw/g0_inference/output_code.py" in line
    assert (tmp_path / "out/raw/g0_inference/output_code.py").read_text() == source[:start] + source[end:]


@pytest.mark.parametrize("artifact", ["torch_compile_debug", "dedicated_log_torch_trace_cpp.log",
                                      "torch_compile_debug/run_0/torchinductor/model__0_inference_0.0/output_code.py"],
                         ids=["debug-dir", "trace-log", "output-code"])
def test_artifact_of_cpp_kernels(tmp_path, artifact):
    """Artifacts of the fixture's model.py compiled on a CPU with Inductor's default (C++) backend: say what they hold
    and how to get Triton kernels, exit non-zero, and write no empty extraction (nor a hint to check a kernel)."""
    source = (CPP_BACKEND / artifact).read_text() if artifact.endswith(".py") else ""
    proc = harvest("extract", str(CPP_BACKEND / artifact), "-o", "out", cwd=tmp_path)
    if source:  # one graph of the two
        assert "async_compile.cpp_pybinding(" in source and "async_compile.triton(" not in source
        assert proc.returncode == EXIT_CODES["NoTritonKernelsError"], proc.stderr
        line = proc.stderr.splitlines()[-1]
        assert "holds 1 C++ kernel (cpp_fused__softmax_add_mul_0) and no Triton kernel" in line, line
    else:
        line = expect("cpp-kernels-only", proc)
    assert line.endswith('or set torch._inductor.config.cpu_backend = "triton" before it compiles'), line
    assert "check a kernel" not in proc.stderr and "0 Triton kernels" not in proc.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written: the artifact itself is the capture


def test_failed_run_leaves_no_empty_directories(tmp_path):
    (tmp_path / "fails.py").write_text("for i in range(25):\n    print('step', i)\nraise RuntimeError('before compiling')\n")
    proc = harvest("extract", "fails.py", "-o", "a/b/out", "-q", cwd=tmp_path)
    expect("run-fails-new-out", proc, target_traceback=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fails.py"]  # a/b/out, made by this run for nothing, are gone
    # 25 lines and a traceback are more than the error shows: the whole output stays in the file it names
    heading = next(line for line in proc.stderr.splitlines() if line.startswith("the target's output ("))
    log = Path(re.fullmatch(r"the target's output \(the last 20 of 29 lines; all of them in (.+\.log)\):", heading).group(1))
    assert log.parent == Path(tempfile.gettempdir()) and log.read_text().startswith("step 0\nstep 1\n")
    assert log.read_text().endswith("RuntimeError: before compiling\n")
    log.unlink()

    (tmp_path / "short.py").write_text("raise RuntimeError('at once')\n")
    proc = harvest("extract", "short.py", "-q", cwd=tmp_path)  # the default -o: extracted/short
    expect("run-fails-new-out", proc, target_traceback=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fails.py", "short.py"]  # no extracted/ left behind
    assert "the target's output (4 lines):" in proc.stderr.splitlines()  # shown whole: no log file kept


def test_failed_run_leaves_an_existing_directory_as_it_was(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine/notes.txt").write_text("mine\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "fails.py").write_text("raise RuntimeError('before compiling')\n")
    before = {name: tree(tmp_path / name) for name in ("ext", "mine")}
    for out in ("ext", "mine", "empty"):  # --force: replacing ext's extraction is allowed, and still nothing is replaced
        expect("run-fails-old-out", harvest("extract", "fails.py", "-o", out, "--force", "-q", cwd=tmp_path), target_traceback=True)
    assert {name: tree(tmp_path / name) for name in ("ext", "mine")} == before  # no lone raw/capture.json over ext's
    assert (tmp_path / "empty").is_dir() and not any((tmp_path / "empty").iterdir())  # it was there before: it stays


# ---------------------------------------------------------------- the output directory


def test_out_is_the_extraction_of_another_target(tmp_path, square):
    shutil.copytree(square, tmp_path / "out")
    before = tree(tmp_path / "out")
    (tmp_path / "other.py").write_text(COMPILE_ONE)
    proc = harvest("extract", "other.py", "-o", "out", "-q", cwd=tmp_path)
    line = expect("out-other-target", proc)
    assert "--force" in line and "compiled" not in proc.stdout  # refused before the run
    assert tree(tmp_path / "out") == before


def test_out_inside_an_extraction(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    before = tree(tmp_path / "ext")
    expect("out-inside-extraction", harvest("extract", str(SQUARE_OUTPUT_CODE), "-o", "ext/g0_inference/again", "-q", cwd=tmp_path))
    assert tree(tmp_path / "ext") == before


@pytest.mark.requires_chattr
def test_read_only_output_directory(tmp_path, square):
    # Root ignores permission bits, so the directory is made immutable (chattr +i), which binds root too.
    shutil.copytree(square, tmp_path / "ro")
    before = tree(tmp_path / "ro")
    assert subprocess.run(["chattr", "+i", str(tmp_path / "ro")], capture_output=True).returncode == 0
    try:
        expect("out-read-only", harvest("extract", str(SQUARE_OUTPUT_CODE), "-o", "ro", "--force", "-q", cwd=tmp_path))
    finally:
        subprocess.run(["chattr", "-i", str(tmp_path / "ro")], check=True)
    assert tree(tmp_path / "ro") == before


def test_write_error_mid_extraction(tmp_path):
    """Writes past 24 KiB per file fail (RLIMIT_FSIZE, as on a full disk): the raw capture, both reports (report.html
    is about 16 KiB), the manifest and the 3 KiB kernel module fit, the 30 KiB harness.py does not. Every file written
    is whole, and the manifest says what is missing."""

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (24 << 10, 24 << 10))

    proc = subprocess.run(
        [sys.executable, "-m", "harvest", "extract", str(SQUARE_OUTPUT_CODE), "-o", "out", "-q"],
        cwd=tmp_path, env=tree_env(), capture_output=True, text=True, timeout=300, preexec_fn=limit_file_size,
    )
    expect("disk-full", proc)
    out = tmp_path / "out"
    assert (out / "raw/g0_inference/output_code.py").read_bytes() == SQUARE_OUTPUT_CODE.read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())  # whole: it parses
    assert manifest["not_written"] == {"harness.py": "File too large"}
    assert not (out / "harness.py").exists()
    assert not list(out.rglob("*.tmp")), "a half-written file was left behind"
    assert "square_square_kernel" in (out / "report.md").read_text()
    assert "square_square_kernel" in (out / "report.html").read_text()
    # With room again, the extraction replays from raw/ and writes what was missing.
    again = harvest("extract", "out", "-q", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (out / "harness.py").exists()
    assert "not_written" not in json.loads((out / "manifest.json").read_text())


def test_cooperative_reductions_on_the_cpu_path(tmp_path):
    """Inductor writes cooperative reductions for the CPU backend too; their grid barrier cannot wait under the
    interpreter, which runs one program after another (it once raised a TypeError from deep inside Triton, then
    harvest refused the target). The barrier now does nothing there and the grid runs once more per barrier, the
    workspace kept and the other arguments put back: the target runs and its kernel checks."""
    (tmp_path / "coop.py").write_text(
        "import torch\nimport torch._inductor.config as config\n"
        "config.triton.cooperative_reductions = True\nconfig.triton.force_cooperative_reductions = True\n"
        "f = torch.compile(lambda x: (x * 2).sum() + x.amax())\nprint(float(f(torch.randn(8, 4096))))\n"
    )
    proc = harvest("extract", "coop.py", "-o", "out", cwd=tmp_path)
    expect("cooperative-cpu", proc)
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    (kernel,) = [k for g in manifest["graphs"] for k in g["kernels"]]
    assert kernel["kind"] == "cooperative_reduction" and kernel["module"]
    assert "'RSPLIT': 2" in (tmp_path / "out" / kernel["module"]).read_text()  # two programs met at the barrier
    done = run_check(tmp_path / "out" / kernel["module"])
    assert done.returncode == 0 and "recorded: ok" in done.stdout and "reference: ok" in done.stdout, done.stdout


def test_write_error_while_the_target_runs(tmp_path):
    """A 100x100 kernel's record (80 KB before+after) is over a 64 KiB file limit: harvest's recorder must not be
    what makes the target fail."""

    def limit_file_size():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))

    (tmp_path / "big.py").write_text(COMPILE_ONE.replace("10, 10", "100, 100"))
    proc = subprocess.run(
        [sys.executable, "-m", "harvest", "extract", "big.py", "-o", "out", "-q"],
        cwd=tmp_path, env=tree_env(), capture_output=True, text=True, timeout=300, preexec_fn=limit_file_size,
    )
    expect("disk-full-during-run", proc)
    assert "compiled torch.Size([100, 100])" in (tmp_path / "out/raw/target.log").read_text() and not proc.stdout
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    ((kernel,),) = [g["kernels"] for g in manifest["graphs"]]
    assert kernel["recorded"]["data"] is None and kernel["recorded"]["note"].startswith("data not saved: writing"), kernel["recorded"]
    assert not list((tmp_path / "out/raw").rglob("*.pt"))
    assert (tmp_path / "out" / kernel["module"]).exists()


# ---------------------------------------------------------------- Ctrl-C


def _interrupt_when(command: list[str], cwd: Path, ready) -> subprocess.CompletedProcess:
    """Run harvest, send it one SIGINT (only to harvest, as a terminal's Ctrl-C reaches it) once ready() is true."""
    # SIGINT as a terminal leaves it: a suite started in the background (`bash .ci/run &` in a script) hands its
    # children SIGINT ignored, and Python then installs no KeyboardInterrupt handler at all.
    proc = subprocess.Popen([sys.executable, "-m", "harvest", *command], cwd=cwd, env=tree_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, f"harvest ended before the interrupt: {proc.communicate()}"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_sigint_during_the_target_run(tmp_path):
    pid_file = tmp_path / "target.pid"
    (tmp_path / "slow.py").write_text(
        COMPILE_ONE + f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n"
    )
    proc = _interrupt_when(["extract", "slow.py", "-o", "out", "-q"], tmp_path, lambda: pid_file.exists() and pid_file.read_text())
    expect("sigint-run", proc)
    pid = int(pid_file.read_text())
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the target was ended, not left running
    out = tmp_path / "out"
    assert (out / "raw/g0_inference/output_code.py").exists()
    assert list((out / "raw/g0_inference/records").glob("*.pt"))
    (module,) = (out / "g0_inference").glob("*.py")
    check = run_check(module)
    assert check.returncode == 0 and " ok " in check.stdout, check.stdout + check.stderr
    assert not (out / "raw/.records-staging").exists()


def test_sigint_during_rendering(tmp_path):
    out = tmp_path / "out"
    proc = _interrupt_when(["extract", str(TRACE_LOG), "-o", "out", "-q"], tmp_path, lambda: (out / "manifest.json").exists() or (out / "raw/capture.json").exists())
    line = expect("sigint-render", proc)
    assert "`harvest extract out` renders it again" in line
    raw = tree(out / "raw")
    assert sorted(p for p in raw if p.endswith("output_code.py")) == ["g0_forward/output_code.py", "g1_backward/output_code.py"]
    replay = harvest("extract", "out", "-q", cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    assert len(list(out.glob("g*/*.py"))) == 11
    assert tree(out / "raw") == raw


# ---------------------------------------------------------------- targets that do odd things


@pytest.mark.slow  # three compiles one after the other: ~35 s
def test_target_that_forks_and_spawns_compiling_processes(tmp_path):
    (tmp_path / "forks.py").write_text(
        "import os, subprocess, sys, torch\n"
        "code = \"import torch; f = torch.compile(lambda x: torch.cos(x) * 2); print('spawned', f(torch.randn(8)).shape)\"\n"
        "subprocess.run([sys.executable, '-c', code], check=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    g = torch.compile(lambda x: torch.sin(x) + 3)\n"
        "    print('forked', g(torch.randn(8)).shape, flush=True)\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n" + COMPILE_ONE
    )
    proc = harvest("extract", "forks.py", "-o", "out", cwd=tmp_path)
    expect("forks-and-spawns", proc)
    log = (tmp_path / "out/raw/target.log").read_text()  # the target's children write into its log too
    assert "spawned" in log and "forked" in log and "compiled" in log and not proc.stdout
    assert "a process the target forked" in proc.stderr and "not captured" in proc.stderr
    # the spawned interpreter and the forked child each compiled one graph into the run's cache: both are counted
    assert "2 graph(s) compiled by a process the target started (spawned or forked) were not captured" in proc.stderr
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    assert [g["name"] for g in manifest["graphs"]] == ["g0_inference"]  # the target's own graph, once
    ((kernel,),) = [g["kernels"] for g in manifest["graphs"]]
    assert kernel["fusion"]["op_counts"] == {"add": 1, "pow": 1}, kernel["fusion"]  # not the forked sin, nor the spawned cos
    assert kernel["recorded"]["data"]


ODD_TARGET = """\
import os, sys, torch
sys.stdout.write(("o" * 1023 + "\\n") * 4096)   # 4 MiB on stdout
sys.stderr.write(("e" * 1023 + "\\n") * 4096)   # and on stderr
os.chdir({elsewhere!r})
sys.argv[:] = ["renamed.py", "--not-harvests"]
f = torch.compile(lambda x: torch.square(x) + 1)
print("compiled", f(torch.randn(10, 10)).shape, flush=True)
"""


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory):
    """One run of a target that prints 4 MiB to each stream, changes its working directory and rewrites sys.argv."""
    cwd = tmp_path_factory.mktemp("odd")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (cwd / "odd.py").write_text(ODD_TARGET.format(elsewhere=str(elsewhere)))
    started = time.monotonic()
    proc = harvest("extract", "odd.py", "-o", "out", "-q", "--", "--its-own", "args", cwd=cwd)
    return proc, cwd / "out", elsewhere, time.monotonic() - started


def test_target_that_prints_megabytes(odd_run):
    proc, out, _, seconds = odd_run
    expect("megabytes-of-output", proc)
    log = (out / "raw/target.log").read_text()
    assert log.count("o" * 1023 + "\n") == 4096 and log.count("e" * 1023 + "\n") == 4096  # whole, in the log
    assert log.index("e" * 1023) > log.rindex("o" * 1023)  # in the order the target wrote them
    assert proc.stdout == "" and "eeee" not in proc.stderr  # none of it in harvest's own output
    assert seconds < 120, f"{seconds:.0f} s"
    assert (out / "manifest.json").exists()


def test_target_that_changes_cwd(odd_run):
    proc, out, elsewhere, _ = odd_run
    expect("changes-cwd", proc)
    assert list((out / "raw/g0_inference/records").glob("*.pt")), "the launch record went with the target's cwd"
    assert not any(elsewhere.iterdir()), f"harvest wrote into the target's new cwd: {list(elsewhere.rglob('*'))}"


def test_target_that_changes_argv(odd_run):
    proc, out, _, _ = odd_run
    expect("changes-argv", proc)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"] == ["harvest", "extract", "odd.py", "--", "--its-own", "args"]


def test_check_after_the_record_was_deleted(odd_run, tmp_path):
    _, out, _, _ = odd_run
    shutil.copytree(out, tmp_path / "out")
    for record in (tmp_path / "out/raw").rglob("*.pt"):
        record.unlink()
    (module,) = (tmp_path / "out/g0_inference").glob("*.py")
    check = run_check(module)
    fragment = CASE["check-record-deleted"][3]
    assert check.returncode == 0, check.stdout + check.stderr  # the eager reference still checks the kernel
    assert "Traceback" not in check.stdout + check.stderr
    said = [line for line in check.stdout.splitlines() if fragment in line]
    assert len(said) == 1 and "made-up inputs" in said[0], check.stdout
    assert " ok " in check.stdout


def test_check_shrink_of_no_programs(odd_run):
    """The module's own command line (argparse, exit 2): one line naming the value and what to give, nothing run."""
    _, out, _, _ = odd_run
    (module,) = (out / "g0_inference").glob("*.py")
    check = run_command([sys.executable, str(module), "--check", "--shrink", "0"], module.parent,
                        dict(os.environ, TRITON_INTERPRET="1"), 120)
    assert check.returncode == exit_code("UsageError"), check.stdout + check.stderr
    errors = [line for line in check.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and CASE["check-shrink-zero"][3] in errors[0], check.stderr
    assert "Traceback" not in check.stderr and "running" not in check.stdout


# ---------------------------------------------------------------- crafted and tampered files


def test_crafted_names_stay_inside_the_output_dir(tmp_path):
    source = SQUARE_OUTPUT_CODE.read_text()
    crafted = source.replace("async_compile.triton('triton_poi_fused_pow_0'", "async_compile.triton('../../../escape_0'")
    crafted = crafted.replace("# AOT ID: ['0_inference']", "# AOT ID: ['../../../x/inference']")
    assert crafted.count("escape_0") == 1 and "../x/inference" in crafted
    (tmp_path / "work").mkdir()
    (tmp_path / "work/output_code.py").write_text(crafted)
    for names in ("readable", "inductor"):
        proc = harvest("extract", "output_code.py", "-o", f"out_{names}", "--names", names, "-q", cwd=tmp_path / "work")
        expect("crafted-kernel-name", proc)
    outside = {p for p in tree(tmp_path) if not p.startswith(("work/out_readable/", "work/out_inductor/"))}
    assert outside == {"work/output_code.py"}, outside


def test_crafted_graph_name_in_capture_json(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    record = tmp_path / "ext/raw/capture.json"
    record.write_text(record.read_text().replace('"name": "g0_inference"', '"name": "../../escape"'))
    (tmp_path / "escape").mkdir()
    (tmp_path / "escape/output_code.py").write_text(SQUARE_OUTPUT_CODE.read_text())  # what the name points at
    expect("crafted-capture-json", harvest("extract", "ext/raw", "-o", "again", "-q", cwd=tmp_path))
    assert not (tmp_path / "again/raw/g0_inference").exists()


def test_replay_after_a_raw_source_was_deleted(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    (tmp_path / "ext/raw/g0_inference/output_code.py").unlink()
    before = tree(tmp_path / "ext")
    expect("raw-source-deleted", harvest("extract", "ext", "-q", cwd=tmp_path))
    assert tree(tmp_path / "ext") == before  # the modules written from it are still there


def test_capture_json_that_is_not_json(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    (tmp_path / "ext/raw/capture.json").write_text('{"graphs": [')
    before = tree(tmp_path / "ext")
    expect("capture-json-not-json", harvest("extract", "ext", "-q", cwd=tmp_path))
    assert tree(tmp_path / "ext") == before


def test_capture_json_of_the_wrong_shape(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    (tmp_path / "ext/raw/capture.json").write_text('{"graphs": 3}\n')
    before = tree(tmp_path / "ext")
    expect("capture-json-tampered", harvest("extract", "ext", "-q", cwd=tmp_path))
    assert tree(tmp_path / "ext") == before


def test_manifest_that_is_not_json(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    (tmp_path / "ext/manifest.json").write_text('{"graphs": [')
    raw = tree(tmp_path / "ext/raw")
    expect("manifest-not-json", harvest("report", "ext", cwd=tmp_path))
    assert tree(tmp_path / "ext/raw") == raw


def test_tampered_manifest(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    (tmp_path / "ext/manifest.json").write_text('{"graphs": "by hand"}\n')
    before = tree(tmp_path / "ext")
    for command in (["report", "ext"], ["twin", "ext", "--no-compile"], ["ptx", "ext"], ["bench", "ext"], ["diff", "ext", "ext"]):
        expect("manifest-tampered", harvest(*command, cwd=tmp_path))
    assert tree(tmp_path / "ext") == before
    fixed = harvest("extract", "ext", "-q", cwd=tmp_path)  # what the message says to do
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads((tmp_path / "ext/manifest.json").read_text())["graphs"][0]["name"] == "g0_inference"


def test_manifest_module_outside_the_extraction(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    manifest = json.loads((tmp_path / "ext/manifest.json").read_text())
    kernel = manifest["graphs"][0]["kernels"][0]
    (tmp_path / "escaped").mkdir()
    shutil.copy(tmp_path / "ext" / kernel["module"], tmp_path / "escaped/evil.py")
    kernel["module"] = "../escaped/evil.py"
    (tmp_path / "ext/manifest.json").write_text(json.dumps(manifest))
    for command in (["twin", "ext", "--no-compile"], ["ptx", "ext"], ["report", "ext"]):
        expect("manifest-module-escapes", harvest(*command, cwd=tmp_path))
    assert sorted(tree(tmp_path / "escaped")) == ["evil.py"]  # no twin/ or ptx/ written beside it


def test_diff_of_unrelated_targets(tmp_path, square):
    trace = extract_artifact(TRACE_LOG, tmp_path, "model")
    proc = harvest("diff", str(square), "model", cwd=tmp_path)
    line = expect("diff-unrelated", proc)
    assert "g0_inference" in line and "g0_forward, g1_backward" in line
    assert proc.stdout == ""
    same = harvest("diff", str(square), str(square), cwd=tmp_path)  # one target against itself still diffs
    assert same.returncode == 0 and "Unchanged: 1 kernel " in same.stdout, same.stdout + same.stderr
    assert trace.exists()


# ---------------------------------------------------------------- bad paths for twin, ptx, bench, report


def test_ptx_outside_an_extraction(tmp_path):
    (tmp_path / "somewhere").mkdir()
    expect("ptx-outside", harvest("ptx", "somewhere", cwd=tmp_path))


def test_bench_outside_an_extraction(tmp_path):
    (tmp_path / "somewhere").mkdir()
    expect("bench-outside", harvest("bench", "somewhere", cwd=tmp_path))


def _with_a_plain_module(square: Path, tmp_path: Path) -> Path:
    shutil.copytree(square, tmp_path / "ext")
    (tmp_path / "ext/g0_inference/notes.py").write_text("print('not a kernel module')\n")
    return tmp_path / "ext"


def test_ptx_of_a_file_that_is_not_a_kernel_module(tmp_path, square):
    ext = _with_a_plain_module(square, tmp_path)
    before = tree(ext)
    expect("ptx-not-a-module", harvest("ptx", "ext/g0_inference/notes.py", cwd=tmp_path))
    assert tree(ext) == before


def test_twin_of_a_file_that_is_not_a_kernel_module(tmp_path, square):
    ext = _with_a_plain_module(square, tmp_path)
    before = tree(ext)
    expect("twin-not-a-module", harvest("twin", "ext/g0_inference/notes.py", cwd=tmp_path))
    assert tree(ext) == before


def test_bench_of_a_file_that_is_not_a_kernel_module(tmp_path, square):
    ext = _with_a_plain_module(square, tmp_path)
    before = tree(ext)
    expect("bench-not-a-module", harvest("bench", "ext/g0_inference/notes.py", cwd=tmp_path))
    assert tree(ext) == before


def test_bench_pattern_that_matches_nothing(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    expect("bench-pattern-matches-nothing", harvest("bench", "ext", "-k", "zzz*", cwd=tmp_path))
    assert not (tmp_path / "ext/bench").exists()


def test_ptx_of_an_unknown_arch(tmp_path, square):
    shutil.copytree(square, tmp_path / "ext")
    expect("ptx-bad-arch", harvest("ptx", "ext", "--arch", "sm_banana", cwd=tmp_path))
    assert not (tmp_path / "ext/g0_inference/ptx").exists()


def test_record_cap_must_be_positive(tmp_path):
    (tmp_path / "t.py").write_text(COMPILE_ONE)
    proc = harvest("extract", "t.py", "--record-cap", "0", "-q", cwd=tmp_path)
    expect("record-cap-not-positive", proc)
    assert "compiled" not in proc.stdout and not (tmp_path / "extracted").exists()  # refused before anything ran


@pytest.mark.parametrize("command", ["twin", "ptx", "bench", "report"])
def test_new_commands_on_a_missing_path(tmp_path, command):
    line = expect("missing-path", harvest(command, "nope", cwd=tmp_path))
    assert ";" in line or ":" in line.removeprefix("harvest: error: "), f"says what to do: {line}"


def test_twin_on_a_missing_path(tmp_path):
    expect("twin-missing-path", harvest("twin", "nope", cwd=tmp_path))


def test_cases_parse():
    """CASES is plain data (the docs script reads it without importing pytest's fixtures)."""
    tree_ = ast.parse((ROOT / "tests/test_bad_input.py").read_text())
    (assign,) = [n for n in tree_.body if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "CASES"]
    assert ast.literal_eval(assign.value) == CASES
