"""Which torch versions harvest works with, end to end, on this machine's CPU Triton path (issue 11, part 3).

For each torch version: a fresh venv (torch with the triton it pins, plus harvest's own dependencies), then
`harvest extract` of examples/square_square.py and examples/small_model.py on the CPU path, then every extracted
module's `--check` under TRITON_INTERPRET=1. Prints a markdown table (and writes it to --table); each version's logs
go under --out. Venvs are deleted after use unless --keep (CUDA wheels take 3-5 GB each).

    python scripts/version_matrix.py --out /tmp/vm --table docs/versions.md [VERSION ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VERSIONS = ["2.5.1", "2.6.0", "2.7.1", "2.8.0", "2.9.1", "2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.1"]
TARGETS = ["examples/square_square.py", "examples/small_model.py"]
DEPENDENCIES = ["libcst", "jinja2", "ninja", "rich", "numpy"]


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
            return line[:160]
    return lines[-1][:160] if lines else ""


def one_version(version: str, out: Path, keep: bool) -> dict:
    venv = out / f"venv-{version}"
    log = out / f"torch-{version}.log"
    log.unlink(missing_ok=True)
    row = {"torch": version, "triton": "?", "install": "ok", "targets": {}}
    if not (venv / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(venv)], log)
        installed = run([str(venv / "bin" / "pip"), "install", "-q", f"torch=={version}", *DEPENDENCIES], log, timeout=1800)
        if installed.returncode != 0:
            row["install"] = first_error(installed.stderr) or f"pip rc {installed.returncode}"
            return row
    python = str(venv / "bin" / "python")
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
    if not keep:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("versions", nargs="*", default=DEFAULT_VERSIONS)
    parser.add_argument("--out", type=Path, default=Path("/tmp/harvest-versions"))
    parser.add_argument("--table", type=Path, help="also write the markdown table here")
    parser.add_argument("--keep", action="store_true", help="keep each version's venv")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for version in options.versions:
        print(f"torch {version} ...", flush=True)
        rows.append(one_version(version, options.out, options.keep))
        (options.out / "matrix.json").write_text(json.dumps(rows, indent=2) + "\n")
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print(text)
    if options.table:
        options.table.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
