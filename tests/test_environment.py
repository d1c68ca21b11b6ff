"""What neither harvest nor this suite may take from the machine it happens to run on.

- Importing an extraction's modules writes nothing into it, whatever PYTHONDONTWRITEBYTECODE says: every command
  that imports them (run, bench, twin, ptx, pack, report, a module's own --check) is run here with bytecode writing
  on, and the extraction's files are compared before and after.
- A test skips only through one of conftest.py's requirement markers (nvcc, a browser, a GPU ...), which say why;
  no test file skips by itself. `.ci/run` also runs a part of the suite under a scrubbed environment (`env -i`), so
  that a variable of ours cannot hide a defect.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, REQUIREMENTS, ROOT, requirement_met, run_command, tree, tree_env

KERNEL = "g0_inference/square_square_kernel.py"
# What a command may rewrite in an extraction: the listings of what was done to it (run, twin, ptx add theirs).
LISTINGS = {"manifest.json", "report.md", "report.html"}


def bytecode_on_env(**extra: str) -> dict[str, str]:
    env = tree_env(**extra)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
        env.pop(name, None)
    return env


def with_bytecode_on(*args: str, cwd: Path, **extra: str):
    command = [sys.executable, *(["-m", "harvest"] if not args[0].endswith(".py") else []), *args]
    return run_command(command, cwd, bytecode_on_env(**extra), 600)


@pytest.fixture(scope="module")
def square(tmp_path_factory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("bytecode")
    target = where / "square_square.py"
    shutil.copy(EXAMPLES / "square_square.py", target)
    done = with_bytecode_on("extract", str(target), "-o", "x", "-q", cwd=where)
    assert done.returncode == 0, done.stderr
    return target, where / "x"


def bytecode_files(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc")


def test_no_command_writes_bytecode_into_the_extraction(square, tmp_path):
    target, made = square
    x = tmp_path / "x"
    shutil.copytree(made, x)
    assert bytecode_files(x) == []
    commands = [
        ("the module's own --check", (str(x / KERNEL), "--check"), {0}),
        ("harvest run --with", ("run", str(target), "--with", str(x), "-k", "square_square_kernel"), {0}),
        ("harvest twin", ("twin", str(x), *([] if requirement_met("requires_nvcc") else ["--no-compile"])), {0}),
        # the Triton side compiles offline; the twin's needs nvcc (exit 10 where there is none)
        ("harvest ptx", ("ptx", str(x / KERNEL)), {0, 10}),
        # the sweep runs its configs on the module it imported once: two configs show that as well as 64 (65 s)
        ("harvest bench --sweep --check-only", ("bench", str(x), "--sweep", "--sweep-max", "2", "--check-only"), {0}),
        ("harvest pack", ("pack", str(x / KERNEL), "-o", str(tmp_path / "packed.py")), {0}),
        ("harvest report", ("report", str(x)), {0}),
    ]
    for what, args, codes in commands:
        before = tree(x)
        done = with_bytecode_on(*args, cwd=tmp_path, TRITON_INTERPRET="1")
        assert done.returncode in codes, f"{what}: exit {done.returncode}\n{done.stderr[-3000:]}"
        assert bytecode_files(x) == [], f"{what} wrote bytecode into the extraction"
        after = tree(x)
        changed = sorted(p for p in before if p not in LISTINGS and after.get(p) != before[p])
        assert changed == [], f"{what} changed or removed files of the extraction: {changed}"
    assert (x / "runs/1/run.json").is_file() and (x / "g0_inference/twin").is_dir()


def test_the_forked_command_takes_bytecode_writing_from_its_environment(tmp_path):
    """tests/fork_server.py starts commands as a new interpreter would: with PYTHONDONTWRITEBYTECODE unset, an
    imported file gets its __pycache__ (so the test above would see a command that writes one)."""
    (tmp_path / "imported.py").write_text("VALUE = 1\n")
    (tmp_path / "main.py").write_text("import imported\nprint(imported.VALUE)\n")
    done = with_bytecode_on(str(tmp_path / "main.py"), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "1\n", done.stderr
    assert [p.name.split(".")[0] for p in (tmp_path / "__pycache__").iterdir()] == ["imported"]


# Written in pieces so that this file's own source does not match them.
SKIP_CALLS = re.compile(r"\bpytest\.(" + "|".join(["skip" + r"\(", "importor" + "skip", r"mark\.skip" + "if", r"mark\.skip\b", "xfail"]) + ")")


def test_tests_skip_only_through_conftests_requirement_markers():
    offenders = [f"{path.name}:{number}: {line.strip()}"
                 for path in sorted((ROOT / "tests").glob("*.py")) if path.name != "conftest.py"
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if SKIP_CALLS.search(line)]
    assert offenders == [], "skip through a requirement marker of tests/conftest.py (REQUIREMENTS), which says why:\n" + "\n".join(offenders)
    used = {name for path in (ROOT / "tests").glob("*.py") for name in re.findall(r"\b(requires_\w+)", path.read_text(encoding="utf-8"))}
    assert set(REQUIREMENTS) <= used | {"requires_cuda"}, f"requirements no test uses: {set(REQUIREMENTS) - used}"
    assert used <= set(REQUIREMENTS), f"markers that conftest.py does not know (they would never skip): {used - set(REQUIREMENTS)}"


# What env -i lets through or the test process sets itself: a pytest-xdist worker started on a terminal finds the
# terminal's size in COLUMNS and LINES (CI runs on a terminal; a plain shell here does not: `script -qc` shows it).
SCRUBBED_KEEPS = {"PATH", "HOME", "HARVEST_SCRUBBED", "PWD", "SHLVL", "_", "LC_CTYPE", "COLUMNS", "LINES"}


def test_the_ci_script_runs_a_part_of_the_suite_in_a_scrubbed_environment():
    script = (ROOT / ".ci/run").read_text().replace("\\\n", " ")  # (continued lines joined)
    scrubbed = next(line for line in script.splitlines() if line.strip().startswith("env -i"))
    assert "HOME=" in scrubbed and "PATH=/usr/bin:/bin" in scrubbed and "tests/test_environment.py" in scrubbed
    if os.environ.get("HARVEST_SCRUBBED") == "1":  # this run is that part: nothing of ours came through
        ours = ("PYTEST_", "TRITON_", "OPENBLAS_", "HARVEST_STATE", "HARVEST_TEST_")  # (tests/conftest.py's)
        inherited = {name for name in os.environ if not name.startswith(ours)}
        assert inherited <= SCRUBBED_KEEPS, inherited - SCRUBBED_KEEPS
        assert "PYTHONDONTWRITEBYTECODE" not in os.environ and os.environ["PATH"] == "/usr/bin:/bin"
