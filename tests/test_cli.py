"""The `harvest` command end to end: every bad input of issue 2, --help, and the wheel.

No mocks: the CLI runs as a subprocess (`python -m harvest ...`) with cwd=tmp_path, targets are real scripts that a
real capture child runs through Inductor's CPU Triton backend. Targets are tiny (10x10) so a capture takes seconds.

Each bad input asserts: the documented exit code (read from `harvest --help`'s "exit codes" line), stderr's first
line is ONE `harvest: error: ...` line that says what was wrong, no Python traceback (except the target's own, when
the target raised), and nothing captured was lost.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, harvest, tree_env

FIXTURE_SQUARE = ROOT / "tests/fixtures/torch-2.13.0+cpu_triton-3.9.0/square_square/graph_000.py"

COMPILE_ONE = """\
import torch
f = torch.compile(lambda x: torch.square(x) + 1)
print("compiled", f(torch.randn(10, 10)).shape, flush=True)
"""


@pytest.fixture(scope="session")
def exit_codes() -> dict[str, int]:
    """Exit codes as `harvest --help` documents them: {"UsageError": 2, ...}."""
    proc = subprocess.run([sys.executable, "-m", "harvest", "--help"], env=tree_env(), capture_output=True, text=True, check=True)
    line = next(line for line in proc.stdout.splitlines() if line.startswith("exit codes:"))
    codes = {name: int(code) for code, name in re.findall(r"(\d+) (\w+)", line)}
    assert codes.get("ok") == 0 and codes.get("internal") == 70, line
    return codes


def assert_error(proc: subprocess.CompletedProcess, code: int, *says: str, target_traceback: bool = False) -> str:
    """One `harvest: error:` line first on stderr, exit `code`, no traceback; returns the error line. After a run,
    the tail of the target's output may follow it (after a heading line), and nothing else."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == code, f"exit {proc.returncode}, expected {code}\nstderr:\n{proc.stderr}"
    assert lines and lines[0].startswith("harvest: error: "), f"stderr does not start with the error line:\n{proc.stderr}"
    first = lines[0]
    for word in says:
        assert word in first, f"{word!r} not in the error line: {first}"
    assert len(first) < 400, f"not one short line: {first}"
    tracebacks = proc.stderr.count("Traceback (most recent call last)")
    if target_traceback:
        assert tracebacks == 1, proc.stderr
        assert "harvest/" not in proc.stderr and "runpy" not in proc.stderr, f"harvest's own frames leaked:\n{proc.stderr}"
    else:
        assert tracebacks == 0, f"a Python traceback leaked:\n{proc.stderr}"
        assert len(lines) == 1 or lines[1].startswith("the target's output ("), f"more than one line on stderr:\n{proc.stderr}"
    return first


def files_under(directory: Path) -> set[str]:
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}


# ---------------------------------------------------------------- bad input that never runs the target


def test_missing_target(tmp_path, exit_codes):
    proc = harvest("extract", "no_such_script.py", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["UsageError"], "not found", "no_such_script.py")
    assert not (tmp_path / "extracted").exists()


def test_text_file_is_not_a_python_file(tmp_path, exit_codes):
    (tmp_path / "notes.txt").write_text("import torch\n")
    proc = harvest("extract", "notes.txt", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["UsageError"], "not a Python file", "notes.txt")


def test_binary_file_named_py_is_not_a_python_file(tmp_path, exit_codes):
    (tmp_path / "blob.py").write_bytes(bytes(range(256)) * 4)
    proc = harvest("extract", "blob.py", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["UsageError"], "not a Python file", "blob.py")


def test_undecodable_py_is_not_a_python_file(tmp_path, exit_codes):
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9t\xe9'\n\xff\xfe\n")
    proc = harvest("extract", "latin.py", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["UsageError"], "not a Python file", "latin.py")


def test_directory_that_is_no_artifact(tmp_path, exit_codes):
    (tmp_path / "empty").mkdir()
    proc = harvest("extract", "empty", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["UsageError"], "empty", "no output_code.py")


def test_syntax_error_in_target(tmp_path, exit_codes):
    (tmp_path / "broken.py").write_text("import torch\n\ndef f(x:\n    return x\n")
    proc = harvest("extract", "broken.py", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["TargetError"], "syntax error", "broken.py", "line 3")
    assert not (tmp_path / "extracted" / "broken" / "raw").exists()  # never ran: nothing to capture


@pytest.mark.parametrize("out", ["a_file/out", "/proc/harvest-out"], ids=["under-a-regular-file", "proc"])
def test_output_directory_not_writable(tmp_path, exit_codes, out):
    (tmp_path / "a_file").write_text("a regular file, not a directory\n")
    (tmp_path / "script.py").write_text(COMPILE_ONE)
    started = time.monotonic()
    proc = harvest("extract", "script.py", "-o", out, "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["OutputError"], "cannot write", out)
    assert "compiled" not in proc.stdout  # refused before running the target, not after
    assert time.monotonic() - started < 60


def test_truncated_output_code(tmp_path, exit_codes):
    text = FIXTURE_SQUARE.read_text()
    cut = text.index("'''", text.index("async_compile.triton(")) + 200  # inside the kernel's source string
    (tmp_path / "output_code.py").write_text(text[:cut])
    proc = harvest("extract", "output_code.py", "-o", "out", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["ParseError"], "output_code.py", "truncated")
    assert "compiled" not in proc.stdout


def test_corrupt_output_code(tmp_path, exit_codes):
    text = FIXTURE_SQUARE.read_text().replace("def call(", "def call((", 1)
    (tmp_path / "output_code.py").write_text(text)
    proc = harvest("extract", "output_code.py", "-o", "out", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["ParseError"], "not valid Python", "line ")


def test_debug_shows_the_traceback(tmp_path, exit_codes):
    proc = harvest("--debug", "extract", "no_such_script.py", cwd=tmp_path)
    assert proc.returncode == exit_codes["UsageError"], proc.stderr  # --debug changes what is shown, not the exit code
    assert "Traceback (most recent call last)" in proc.stderr
    assert "UsageError: target not found: no_such_script.py" in proc.stderr


# ---------------------------------------------------------------- bad input from a target that runs


def test_target_raises_keeps_what_was_captured(tmp_path, exit_codes):
    (tmp_path / "raises.py").write_text(COMPILE_ONE + "\n\ndef helper():\n    raise ValueError('boom from the target')\n\n\nhelper()\n")
    proc = harvest("extract", "raises.py", "-o", "out", "-q", cwd=tmp_path)
    first = assert_error(proc, exit_codes["TargetError"], "ValueError: boom from the target", target_traceback=True)
    assert "1 graph" in first
    tail = proc.stderr.split("\n", 1)[1]
    assert 'File "raises.py", line 10, in <module>' in tail and "in helper" in tail, tail  # the target's traceback tail
    assert tail.rstrip().endswith("ValueError: boom from the target")
    files = files_under(tmp_path / "out")
    assert {"raw/capture.json", "raw/g0_inference/output_code.py", "manifest.json"} <= files
    assert [f for f in files if f.startswith("g0_inference/") and f.endswith(".py")], files  # the module was written


def test_target_raises_before_compiling_names_the_exception(tmp_path, exit_codes):
    # A message over several lines: the error line still names the exception, not the message's last line.
    (tmp_path / "raises.py").write_text("raise RuntimeError('first line\\nsecond line')\n")
    proc = harvest("extract", "raises.py", "-o", "out", "-q", cwd=tmp_path)
    first = assert_error(proc, exit_codes["TargetError"], "RuntimeError: first line", "nothing was captured", target_traceback=True)
    assert "second line" not in first
    assert proc.stderr.rstrip().endswith("second line")


@pytest.fixture(scope="module")
def exit_0_run(tmp_path_factory):
    """A target that compiles one graph then calls sys.exit(0); also times a capture on this machine."""
    cwd = tmp_path_factory.mktemp("exit0")
    (cwd / "exits.py").write_text(COMPILE_ONE + "import sys\nsys.exit(0)\nraise AssertionError('unreachable')\n")
    started = time.monotonic()
    proc = harvest("extract", "exits.py", "-o", "out", "-q", cwd=cwd)
    return proc, cwd / "out", time.monotonic() - started


def test_target_exit_0_is_success(exit_0_run):
    proc, out, _ = exit_0_run
    assert proc.returncode == 0, proc.stderr
    assert "harvest: error" not in proc.stderr and "Traceback" not in proc.stderr
    files = files_under(out)
    assert "raw/g0_inference/output_code.py" in files
    assert [f for f in files if f.startswith("g0_inference/") and f.endswith(".py")], files


def test_target_exit_3_keeps_captured_graphs(tmp_path, exit_codes):
    (tmp_path / "exits.py").write_text(COMPILE_ONE + "import sys\nsys.exit(3)\n")
    proc = harvest("extract", "exits.py", "-o", "out", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["TargetError"], "sys.exit(3)", "1 graph")
    files = files_under(tmp_path / "out")
    assert "raw/g0_inference/output_code.py" in files
    assert [f for f in files if f.startswith("g0_inference/") and f.endswith(".py")], files


def test_target_never_compiles(tmp_path, exit_codes):
    (tmp_path / "eager.py").write_text("import torch\nprint('eager', torch.ones(10, 10).sum().item())\n")
    proc = harvest("extract", "eager.py", "-o", "out", "-q", cwd=tmp_path)
    first = assert_error(proc, exit_codes["NoGraphsError"], "no Inductor graphs captured", "eager.py")
    assert "torch.compile" in first  # the hint
    assert proc.stderr.splitlines()[1:] == ["the target's output (1 line):", "eager 100.0"]  # the target did run
    assert proc.stdout == "" and not (tmp_path / "out").exists()  # its output is shown, not passed through; no empty -o


def test_timeout_stops_the_target_and_keeps_the_graph(tmp_path, exit_codes, exit_0_run):
    # The limit must outlast importing torch and one compile: what the same compile took on this machine, and half again.
    limit = 1.5 * exit_0_run[2] + 8
    (tmp_path / "hangs.py").write_text(COMPILE_ONE + "import time\ntime.sleep(3600)\n")
    started = time.monotonic()
    proc = harvest("extract", "hangs.py", "-o", "out", "--timeout", f"{limit:.0f}", "-q", cwd=tmp_path, timeout=limit + 120)
    took = time.monotonic() - started
    assert_error(proc, exit_codes["TimeoutError"], "--timeout", "stopped", "1 graph")
    assert "compiled" in (tmp_path / "out/raw/target.log").read_text() and "compiled" in proc.stderr and not proc.stdout
    assert took < limit + 60, f"took {took:.0f} s for --timeout {limit:.0f}"
    assert (tmp_path / "out/raw/g0_inference/output_code.py").read_text().startswith("# AOT ID")


# ---------------------------------------------------------------- help and packaging


def test_help_teaches(exit_codes):
    top = subprocess.run([sys.executable, "-m", "harvest", "--help"], env=tree_env(), capture_output=True, text=True)
    assert top.returncode == 0
    assert "extract" in top.stdout and "exit codes:" in top.stdout
    sub = subprocess.run([sys.executable, "-m", "harvest", "extract", "--help"], env=tree_env(), capture_output=True, text=True)
    assert sub.returncode == 0
    assert "examples:" in sub.stdout and "harvest extract examples/" in sub.stdout
    assert "--timeout" in sub.stdout and "--force" in sub.stdout and "-o" in sub.stdout
    assert "TRITON_INTERPRET=1" in sub.stdout and "--check" in sub.stdout
    for name, code in exit_codes.items():
        assert f"{code} {name}" in sub.stdout
    assert set(exit_codes) >= {"ok", "UsageError", "TargetError", "NoGraphsError", "TimeoutError", "ParseError", "OutputError"}


def test_report_help_teaches_and_its_exit_codes_hold(exit_codes, tmp_path):
    """`harvest report --help` had one usage line. It says what the command does, how, and which exit codes it
    gives; each of those is what a bad DIR really gets."""
    shown = harvest("report", "--help", cwd=tmp_path)
    assert shown.returncode == 0
    assert "nothing is run" in shown.stdout and "examples:" in shown.stdout and "harvest report extracted/" in shown.stdout
    line = next(line for line in shown.stdout.splitlines() if line.startswith("exit codes:"))
    assert {name: int(code) for code, name in re.findall(r"(\d+) (\w+)", line)} == exit_codes
    assert "2 when DIR holds no manifest.json, 6 when its manifest.json is not one harvest wrote, 7 when a report cannot be written" in shown.stdout
    out = tmp_path / "square_square"
    out.mkdir()
    (out / "manifest.json").write_text((ROOT / "extracted/h200/square_square/manifest.json").read_text())
    done = harvest("report", str(out), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == f"{out / 'report.md'}\n{out / 'report.html'}\n", done.stderr
    first, page = (out / "report.md").read_bytes(), (out / "report.html").read_bytes()
    assert harvest("report", str(out), cwd=tmp_path).returncode == 0
    assert (out / "report.md").read_bytes() == first and (out / "report.html").read_bytes() == page
    only = harvest("report", str(out), "--md", cwd=tmp_path)
    assert only.returncode == 0 and only.stdout == f"{out / 'report.md'}\n"
    assert_error(harvest("report", str(tmp_path), cwd=tmp_path), exit_codes["UsageError"], "no manifest.json")
    (out / "report.md").unlink()
    (out / "report.md").mkdir()  # a directory where report.md goes: it cannot be written
    assert_error(harvest("report", str(out), cwd=tmp_path), exit_codes["OutputError"], "cannot write", "report.md")
    (out / "manifest.json").write_text("{")
    assert_error(harvest("report", str(out), cwd=tmp_path), exit_codes["ParseError"], "is not valid JSON")


def test_no_command_prints_usage():
    proc = subprocess.run([sys.executable, "-m", "harvest"], env=tree_env(), capture_output=True, text=True)
    assert proc.returncode == 2
    assert "usage: harvest" in proc.stdout


def test_wheel_ships_templates_and_works_installed(tmp_path):
    """A non-editable install finds its templates: build the wheel offline, install it into a directory, render."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        (src / name).write_bytes((ROOT / name).read_bytes())
    tracked = subprocess.run(["git", "ls-files", "harvest", "templates"], cwd=ROOT, capture_output=True, text=True, check=True)
    for relative in tracked.stdout.split():
        (src / relative).parent.mkdir(parents=True, exist_ok=True)
        (src / relative).write_bytes((ROOT / relative).read_bytes())
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(wheels), "."],
        cwd=src, capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = wheels.glob("harvest-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"harvest/templates/kernel.py.j2", "harvest/templates/report.md.j2", "harvest/cli/__init__.py"} <= names, sorted(names)

    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    probe = (
        "import harvest, harvest.report as r, importlib.resources as res\n"
        "print(harvest.__file__)\n"
        "print(sorted(p.name for p in res.files('harvest.templates').iterdir() if p.name.endswith('.j2')))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(site))
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    where, templates = run.stdout.splitlines()
    assert where.startswith(str(site)), f"imported {where}, not the installed wheel"
    assert "kernel.py.j2" in templates and "report.md.j2" in templates
    # The installed harvest extracts an artifact end to end (templates found, module rendered).
    proc = subprocess.run(
        [sys.executable, "-m", "harvest", "extract", str(FIXTURE_SQUARE), "-o", "out", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "out" / "g0_inference").glob("*.py"))


def test_output_directory_with_a_foreign_manifest(tmp_path):
    """-o names a directory that already holds someone else's manifest.json: no crash, nothing outside it touched."""
    (tmp_path / "outside.txt").write_text("precious\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "manifest.json").write_text("[1, 2]\n")
    proc = harvest("extract", str(FIXTURE_SQUARE), "-o", "out", "-q", cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr

    digest = hashlib.sha256(b"precious\n").hexdigest()
    manifest = {"generated_files": {"../outside.txt": digest, str(tmp_path / "outside.txt"): digest}}
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "manifest.json").write_text(json.dumps(manifest))
    proc = harvest("extract", str(FIXTURE_SQUARE), "-o", "other", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "outside.txt").read_text() == "precious\n"


def test_target_that_dies_without_raising_keeps_and_extracts_its_graphs(tmp_path, exit_codes):
    (tmp_path / "dies.py").write_text(COMPILE_ONE + "import os\nos._exit(7)\n")
    proc = harvest("extract", "dies.py", "-o", "out", "-q", cwd=tmp_path)
    assert_error(proc, exit_codes["TargetError"], "died", "exit status 7", "1 graph")
    files = files_under(tmp_path / "out")
    assert "raw/g0_inference/output_code.py" in files
    assert [f for f in files if f.startswith("g0_inference/") and f.endswith(".py")], files


@pytest.mark.parametrize("value", ["0", "-5"])
def test_timeout_must_be_positive(tmp_path, exit_codes, value):
    (tmp_path / "t.py").write_text(COMPILE_ONE)
    proc = harvest("extract", "t.py", "--timeout", value, cwd=tmp_path)
    assert_error(proc, exit_codes["UsageError"], "--timeout", "positive")
    assert not (tmp_path / "extracted").exists()  # refused before running anything


def test_debug_is_accepted_after_the_command(tmp_path, exit_codes):
    proc = harvest("extract", "missing.py", "--debug", cwd=tmp_path)
    assert proc.returncode == exit_codes["UsageError"]
    assert "Traceback (most recent call last)" in proc.stderr and "target not found" in proc.stderr
