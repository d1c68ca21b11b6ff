"""Untrusted files stay inert: every command that reads files (extract of an artifact or an extraction, report, diff,
twin, ptx) and a module's --check (its launch record) never runs code from them.

Each file here carries a payload that creates a marker file if anything imports, execs, runs or unpickles it. Every
case asserts both that the marker is absent and that the command did its real job (or refused with a clear message),
so no case passes just because nothing was read. `--run-artifact` is the documented opt-in that does run an artifact
(tests/test_record.py covers it); its help must say so.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CPU_FIXTURES, EXAMPLES, FIXTURES, harvest, kernels, run_check, tree_env

ARTIFACTS = FIXTURES / "artifacts"
SMALL_MODEL_GRAPH = CPU_FIXTURES / "small_model" / "graph_000.py"


def payload(marker: Path) -> str:
    """A module-level line that leaves `marker` behind if the file is ever imported, exec'd or run."""
    return f"\nopen({str(marker)!r}, 'w').close()  # harvest must never run this\n"


def poisoned(source: str, marker: Path) -> str:
    """An output_code module whose import, call() and get_args() each create the marker."""
    line = f"open({str(marker)!r}, 'w').close()"
    source = source.replace("def call(args):\n", f"def call(args):\n    {line}\n", 1)
    source = source.replace("def get_args():\n", f"def get_args():\n    {line}\n", 1)
    return source + payload(marker)


@pytest.fixture
def marker(tmp_path) -> Path:
    path = tmp_path / "MARKER"
    yield path
    assert not path.exists(), "harvest ran code from a file it was only asked to read"


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def _assert_extracted(proc: subprocess.CompletedProcess, out: Path, marker: Path) -> list[dict]:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not marker.exists()
    found = kernels(_manifest(out))
    assert found and all((out / k["module"]).is_file() for k in found if k["module"])
    return found


# ------------------------------------------------------------------------------------------ extract of artifacts


@pytest.fixture
def poisoned_extraction(tmp_path, marker) -> Path:
    """`harvest extract output_code.py` of a poisoned capture: the kernels come out, nothing runs."""
    artifact = tmp_path / "output_code.py"
    artifact.write_text(poisoned(SMALL_MODEL_GRAPH.read_text(), marker))
    proc = harvest("extract", str(artifact), "-o", "out", "-q", cwd=tmp_path)
    found = _assert_extracted(proc, tmp_path / "out", marker)
    assert len(found) >= 3 and all(k["recorded"] is None for k in found)
    assert [p.read_text() for p in (tmp_path / "out" / "raw").glob("*/output_code.py")] == [artifact.read_text()]
    return tmp_path / "out"


def test_extract_of_an_output_code_file_only_reads_it(poisoned_extraction, marker):
    assert not marker.exists()


def test_extract_of_a_debug_dir_only_reads_it(tmp_path, marker):
    debug = tmp_path / "torch_compile_debug"
    shutil.copytree(ARTIFACTS / "torch_compile_debug", debug)
    codes = list(debug.rglob("output_code.py"))
    assert codes
    for code in codes:
        code.write_text(poisoned(code.read_text(), marker))
    proc = harvest("extract", str(debug), "-o", "out", "-q", cwd=tmp_path)
    _assert_extracted(proc, tmp_path / "out", marker)


def test_extract_of_a_torch_trace_log_only_reads_it(tmp_path, marker):
    """The log's inductor_output_code payload is poisoned and its md5 fixed up, so harvest takes the record."""
    source = next((ARTIFACTS / "torch_trace").glob("*.log")).read_text()
    lines, out_lines, changed = source.split("\n"), [], 0
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        body = []
        while index < len(lines) and lines[index].startswith("\t"):
            body.append(lines[index][1:])
            index += 1
        if '"inductor_output_code"' in line and body:
            text = poisoned("\n".join(body), marker).rstrip("\n")
            old = hashlib.md5("\n".join(body).encode()).hexdigest()
            line = line.replace(old, hashlib.md5(text.encode()).hexdigest())
            body, changed = text.split("\n"), changed + 1
        out_lines += [line] + ["\t" + b for b in body]
    assert changed
    log = tmp_path / "dedicated_log_torch_trace_poisoned.log"
    log.write_text("\n".join(out_lines))
    proc = harvest("extract", str(log), "-o", "out", "-q", cwd=tmp_path)
    _assert_extracted(proc, tmp_path / "out", marker)
    assert "cut short" not in proc.stderr  # the payload was taken, not skipped as damaged


def test_replaying_an_extraction_only_reads_its_raw_capture(poisoned_extraction, tmp_path, marker):
    proc = harvest("extract", str(poisoned_extraction), "-o", "replay", "-q", cwd=tmp_path)
    found = _assert_extracted(proc, tmp_path / "replay", marker)
    assert len(found) == len(kernels(_manifest(poisoned_extraction)))


# ------------------------------------------------------------------------------------------ report, diff


def test_report_only_reads_the_manifest(poisoned_extraction, tmp_path, marker):
    report = poisoned_extraction / "report.md"
    report.unlink()
    proc = harvest("report", str(poisoned_extraction), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert report.is_file() and "layer_norm" in report.read_text()


def test_diff_of_two_extractions_only_reads_them(poisoned_extraction, tmp_path, marker):
    artifact = tmp_path / "output_code.py"
    assert harvest("extract", str(artifact), "-o", "other", "-q", cwd=tmp_path).returncode == 0
    proc = harvest("diff", str(poisoned_extraction), "other", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert json.loads(proc.stdout)  # a real comparison came out

    # a side given as an artifact (not an extraction) is extracted by reading it, never run
    proc = harvest("diff", str(artifact), str(poisoned_extraction), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists() and proc.stdout.strip()


# ------------------------------------------------------------------------------------------ twin, ptx


def _poison_module(poisoned_extraction: Path, marker: Path) -> Path:
    """A kernel module with the payload at module level, outside its kernel region (a user could have put it there)."""
    module = next(poisoned_extraction / k["module"] for k in kernels(_manifest(poisoned_extraction)) if "layer_norm" in k["module"])
    module.write_text(module.read_text() + payload(marker))
    return module


def test_twin_reads_the_module_as_text(poisoned_extraction, tmp_path, marker):
    module = _poison_module(poisoned_extraction, marker)
    proc = harvest("twin", str(module), "--no-compile", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    assert (module.parent / "twin" / f"{module.stem}.cu").is_file()


def test_ptx_compiles_only_the_checked_kernel_region(poisoned_extraction, tmp_path, marker):
    module = _poison_module(poisoned_extraction, marker)
    proc = harvest("ptx", str(module), "-q", cwd=tmp_path)
    assert not marker.exists()
    assert proc.returncode == 0, proc.stderr
    assert (module.parent / "ptx" / f"{module.stem}.triton.ptx").is_file()

    # code inside the kernel region (a default argument runs when the def runs) is refused, not run
    text = module.read_text()
    close = text.index("):\n", text.index(f"def {module.stem}("))
    module.write_text(text[:close] + f"=open({str(marker)!r}, 'w')" + text[close:])
    proc = harvest("ptx", str(module), cwd=tmp_path)
    assert not marker.exists()
    assert proc.returncode != 0 and "gives a parameter a default value" in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------------------ launch records


class _Payload:
    """Pickles as a call to open(marker, "w"): any loader that runs pickled code leaves the marker."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_record_replaced_by_a_pickle_with_code_is_refused(tmp_path, marker):
    import torch

    proc = harvest("extract", str(EXAMPLES / "square_square.py"), "-o", "out", "-q", cwd=tmp_path)
    [kernel] = _assert_extracted(proc, tmp_path / "out", marker)
    module = tmp_path / "out" / kernel["module"]
    record = tmp_path / "out" / kernel["recorded"]["data"]
    check = run_check(module)  # the real record is read and used: the loader is on this path
    assert check.returncode == 0 and "(recorded inputs)" in check.stdout, check.stdout + check.stderr

    torch.save({"before": [_Payload(marker)], "after": [None]}, record)
    check = run_check(module)
    assert not marker.exists()
    assert check.returncode != 0
    assert "Traceback" not in check.stderr, check.stderr
    last = check.stderr.strip().splitlines()[-1]
    assert record.name in last and "not a launch record" in last and "io.open" in last, check.stderr

    # the commands that read an extraction copy or ignore record files; they never load them
    for args in (("report", "out"), ("extract", "out", "-o", "replay", "-q")):
        proc = harvest(*args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert not marker.exists()


def test_run_artifact_help_says_it_executes_the_artifact():
    help_text = subprocess.run([sys.executable, "-m", "harvest", "extract", "--help"], capture_output=True, text=True, env=tree_env()).stdout
    option = help_text[help_text.index("  --run-artifact ") :]
    assert "executes the artifact's code" in " ".join(option.split()[:60])
