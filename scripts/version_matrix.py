"""Which torch versions harvest works with, end to end, on this machine's CPU Triton path (issue 11, part 3).

For each torch version: a fresh venv (torch with the triton it pins, plus harvest's own dependencies), then
`harvest extract` of examples/square_square.py and examples/small_model.py on the CPU path, then every extracted
module's `--check` under TRITON_INTERPRET=1. Prints a markdown table; each version's logs go under --out. Venvs are
deleted after use unless --keep (CUDA wheels take 3-5 GB each); `--python 2.13.0=~/.cache/harvest-venv/bin/python` uses
an existing interpreter instead (never deleted).

--doc replaces the table between the markers in docs/versions.md (the prose around it stays). Results accumulate in
--out/matrix.json, one row per version, so a re-run of some versions updates their rows and the table shows them all.
--fixtures copies each version's corpus (raw/capture.json, raw/<graph>/output_code.py, and expected.json: what the live
run gave) to tests/fixtures/versions/torch-<v>_triton-<v>/<target>/, which tests/test_versions.py replays in CI.
--no-run rebuilds the table and the corpus from an earlier run's --out without installing anything.

    python scripts/version_matrix.py --out /tmp/vm --doc docs/versions.md --fixtures tests/fixtures/versions [VERSION ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VERSIONS = ["2.5.1", "2.6.0", "2.7.1", "2.8.0", "2.9.1", "2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.1"]
TARGETS = ["examples/square_square.py", "examples/small_model.py"]
DEPENDENCIES = ["libcst", "jinja2", "ninja", "rich", "numpy"]
BEGIN, END = "<!-- version-matrix:begin -->", "<!-- version-matrix:end -->"


def run(command: list[str], log: Path, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    started = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        result = subprocess.CompletedProcess(command, 124, exc.stdout or "", (exc.stderr or "") + f"\ntimed out after {timeout:.0f} s")
    with log.open("a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(command)}  ({time.monotonic() - started:.0f} s, rc {result.returncode})\n{result.stdout}\n{result.stderr}\n")
    return result


def first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("harvest: error") or "Error" in line.split(":")[0]:
            return line[:240]
    return lines[-1][:240] if lines else ""


def one_version(version: str, out: Path, keep: bool, python: str | None = None) -> dict:
    venv = out / f"venv-{version}"
    log = out / f"torch-{version}.log"
    log.unlink(missing_ok=True)
    row = {"version": version, "torch": version, "triton": "?", "install": "ok", "targets": {}}
    if python is None and not (venv / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(venv)], log)
        installed = run([str(venv / "bin" / "pip"), "install", "-q", f"torch=={version}", *DEPENDENCIES], log, timeout=1800)
        if installed.returncode != 0:
            row["install"] = first_error(installed.stderr) or f"pip rc {installed.returncode}"
            return row
    python = python or str(venv / "bin" / "python")
    probe = run([python, "-c", "import torch, triton; print(torch.__version__, triton.__version__)"], log)
    if probe.returncode == 0:
        row["torch"], row["triton"] = probe.stdout.split()[:2]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for target in TARGETS:
        name = Path(target).stem
        destination = out / version / name
        shutil.rmtree(destination, ignore_errors=True)
        extracted = run([python, "-m", "harvest", "extract", target, "-o", str(destination), "--device", "cpu", "-q"], log, env)
        cell = {"extract": extracted.returncode, "modules": 0, "passed": 0, "error": ""}
        if extracted.returncode != 0:
            cell["error"] = first_error(extracted.stderr)
        manifest = destination / "manifest.json"
        if manifest.is_file():
            kernels = [k for g in json.loads(manifest.read_text())["graphs"] for k in g["kernels"]]
            cell["kernels"] = len(kernels)
            for kernel in kernels:
                if not kernel.get("module"):
                    continue
                cell["modules"] += 1
                checked = run([python, str(destination / kernel["module"]), "--check", "--device", "cpu"], log,
                              {**env, "TRITON_INTERPRET": "1"}, timeout=600)
                if checked.returncode == 0:
                    cell["passed"] += 1
                elif not cell["error"]:
                    cell["error"] = f"{kernel['module']}: {first_error(checked.stdout + checked.stderr)}"
        row["targets"][name] = cell
    if not keep and python == str(venv / "bin" / "python"):
        shutil.rmtree(venv, ignore_errors=True)
    return row


def table(rows: list[dict]) -> str:
    lines = ["| torch | triton | " + " | ".join(Path(t).stem for t in TARGETS) + " | first problem |",
             "|---|---|" + "---|" * len(TARGETS) + "---|"]
    for row in rows:
        cells, problem = [], row["install"] if row["install"] != "ok" else ""
        for target in TARGETS:
            cell = row["targets"].get(Path(target).stem)
            if cell is None:
                cells.append("-")
                continue
            status = "extracts" if cell["extract"] == 0 else f"exit {cell['extract']}"
            cells.append(f"{status}; {cell['passed']}/{cell['modules']} checks pass" + (f" ({cell.get('kernels', 0)} kernels)" if cell.get("kernels") != cell["modules"] else ""))
            problem = problem or cell["error"]
        lines.append(f"| {row['torch']} | {row['triton']} | " + " | ".join(cells) + f" | {problem.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def corpus_name(row: dict) -> str:
    return f"torch-{row['torch']}_triton-{row['triton']}"


def copy_corpus(row: dict, out: Path, fixtures: Path) -> Path:
    """One version's corpus: what harvest reads to replay each target's extraction (no tensor records), plus
    expected.json with what the live run gave; a version that captured nothing gets a README saying why."""
    version = row.get("version") or row["torch"].split("+")[0]
    destination = fixtures / corpus_name(row)
    shutil.rmtree(destination, ignore_errors=True)
    destination.mkdir(parents=True)
    notes = []
    for target in TARGETS:
        name = Path(target).stem
        cell = row["targets"].get(name, {})
        raw = out / version / name / "raw"
        manifest_path = out / version / name / "manifest.json"
        record = json.loads((raw / "capture.json").read_text()) if (raw / "capture.json").is_file() else {"graphs": []}
        if not record["graphs"]:
            notes.append(f"- {name}: nothing captured; `harvest extract {target} --device cpu` exited {cell.get('extract')}: "
                         f"{cell.get('error') or 'no graph'}")
            continue
        for graph in record["graphs"]:
            (destination / name / "raw" / graph["name"]).mkdir(parents=True)
            shutil.copyfile(raw / graph["name"] / "output_code.py", destination / name / "raw" / graph["name"] / "output_code.py")
        shutil.copyfile(raw / "capture.json", destination / name / "raw" / "capture.json")
        manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {"graphs": []}
        expected = {
            "target": target,
            "torch": row["torch"],
            "triton": row["triton"],
            "extract_exit": cell.get("extract"),
            "error": cell.get("error", ""),
            "checks": {"modules": cell.get("modules", 0), "passed": cell.get("passed", 0)},
            "graphs": {g["name"]: {k["name"]: k.get("standalone_reason") for k in g["kernels"]} for g in manifest["graphs"]},
        }
        (destination / name / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    if notes:
        (destination / "README.md").write_text(
            f"# torch {row['torch']}, triton {row['triton']}: not captured on the CPU Triton path\n\n" + "\n".join(notes) + "\n"
        )
    return destination


def replace_table(doc: Path, text: str) -> None:
    """Put the table between the markers in doc, replacing what was there (never appending a second copy)."""
    old = doc.read_text(encoding="utf-8") if doc.is_file() else ""
    block = f"{BEGIN}\n{text}{END}"
    if BEGIN in old and END in old:
        new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, old, count=1, flags=re.S)
    else:
        new = old + ("\n" if old else "") + block + "\n"
    doc.write_text(new, encoding="utf-8")


def ordered(rows: dict[str, dict]) -> list[dict]:
    known = [v for v in reversed(DEFAULT_VERSIONS) if v in rows]
    return [rows[v] for v in known + sorted(set(rows) - set(known))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="*", default=DEFAULT_VERSIONS)
    parser.add_argument("--out", type=Path, default=Path("/tmp/harvest-versions"))
    parser.add_argument("--doc", type=Path, help="replace the table between the version-matrix markers in this file")
    parser.add_argument("--fixtures", type=Path, help="copy each version's corpus under this directory")
    parser.add_argument("--python", action="append", default=[], metavar="VERSION=PATH",
                        help="use this interpreter for VERSION instead of a fresh venv")
    parser.add_argument("--no-run", action="store_true", help="reuse --out/matrix.json and the extractions under --out")
    parser.add_argument("--keep", action="store_true", help="keep each version's venv")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    pythons = dict(item.split("=", 1) for item in options.python)
    results = options.out / "matrix.json"
    previous = json.loads(results.read_text()) if results.is_file() else []
    rows = {row.get("version") or row["torch"].split("+")[0]: row for row in previous}
    for version in options.versions:
        if not options.no_run:
            print(f"torch {version} ...", flush=True)
            rows[version] = one_version(version, options.out, options.keep, pythons.get(version))
            results.write_text(json.dumps(ordered(rows), indent=2) + "\n")
            print(table([rows[version]]).splitlines()[-1], flush=True)
        if options.fixtures and version in rows:
            rows[version].setdefault("version", version)
            corpus = copy_corpus(rows[version], options.out, options.fixtures)
            size = sum(f.stat().st_size for f in corpus.rglob("*") if f.is_file())
            print(f"corpus {corpus} ({size / 1024:.0f} KiB)", flush=True)
    text = table(ordered(rows))
    print(text)
    if options.doc:
        replace_table(options.doc, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
