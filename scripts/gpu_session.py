"""Everything that must be verified on a GPU, in one run (through the device tool).

    python3 scripts/gpu_session.py OUT_DIR [--examples square_square small_model ...] [--replay]

For each example: `harvest extract examples/<ex>.py -o extracted/h200/<ex>` on CUDA (or, with --replay, re-render
the committed extracted/h200/<ex> from its raw capture), then `--check` of every kernel module on the GPU, then the renamed vs
Inductor-named comparison (bitwise and do_bench timing, scripts/compare_names.py). Writes OUT_DIR/gpu_summary.json
and OUT_DIR/extracted.tgz (the extractions), prints a summary table.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

EXAMPLES = ["square_compile", "square_square", "pytorch_square", "small_model", "dynamic_shapes"]


def run(command: list[str], timeout: float = 900) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def check_in_process(module_path: Path, bench: bool) -> tuple[bool, str]:
    """Import a kernel module and run its check() (and bench()) here: one torch import for all modules."""
    spec = importlib.util.spec_from_file_location(f"harvest_gpu_{abs(hash(str(module_path)))}", module_path)
    module = importlib.util.module_from_spec(spec)
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output):
            spec.loader.exec_module(module)
            ok = bool(module.check("cuda"))
            if bench:
                module.bench("cuda")
    except Exception as exc:  # a module that does not even run is a failed check, with the reason
        return False, output.getvalue() + f"{type(exc).__name__}: {exc}"
    return ok, output.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--examples", nargs="*", default=EXAMPLES)
    parser.add_argument("--replay", action="store_true", help="re-render <root>/<ex> from its raw capture instead of running")
    parser.add_argument("--no-bench", action="store_true", help="skip timings (checks and bitwise comparisons only)")
    parser.add_argument("--root", type=Path, default=Path("extracted/h200"), help="where the extractions go (default extracted/h200)")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    import torch
    import triton

    summary = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "examples": {},
    }
    print(f"{summary['gpu']}  torch {summary['torch']}  triton {summary['triton']}", flush=True)
    for example in options.examples:
        out_dir = options.root / example
        target = str(out_dir) if options.replay else f"examples/{example}.py"
        code, log, seconds = run([sys.executable, "-m", "harvest", "extract", target, "-o", str(out_dir)])
        print(f"== {example}: extract exit {code} in {seconds:.1f} s", flush=True)
        if code != 0:
            print(log[-3000:])
            summary["examples"][example] = {"extract_exit": code, "log": log[-3000:]}
            continue
        manifest = json.loads((out_dir / "manifest.json").read_text())
        kernels = [k for g in manifest["graphs"] for k in g["kernels"]]
        checks = []
        for kernel in kernels:
            if not kernel["module"]:
                checks.append({"kernel": kernel["name"], "standalone_reason": kernel["standalone_reason"]})
                continue
            module = out_dir / kernel["module"]
            started = time.monotonic()
            ok, log = check_in_process(module, bench=not options.no_bench)
            seconds = time.monotonic() - started
            checks.append({"kernel": kernel["name"], "module": str(module), "check_exit": 0 if ok else 1, "output": log[-1500:]})
            print(f"   {'PASS' if ok else 'FAIL'} {module} ({seconds:.1f} s)", flush=True)
            print("     " + log.strip().replace("\n", "\n     ")[-1500:], flush=True)
        inductor_dir = Path("/tmp/inductor_names") / example
        run([sys.executable, "-m", "harvest", "extract", str(out_dir), "-o", str(inductor_dir), "--names", "inductor", "-q"])
        names_json = options.out / f"names_{example}.json"
        bench_flag = [] if options.no_bench else ["--bench"]
        code, log, _ = run([sys.executable, "scripts/compare_names.py", str(out_dir), str(inductor_dir), *bench_flag, "--json", str(names_json)])
        print(log.strip()[-2500:], flush=True)
        summary["examples"][example] = {
            "graphs": len(manifest["graphs"]),
            "kernels": len(kernels),
            "externs": sum(len(g["externs"]) for g in manifest["graphs"]),
            "checks": checks,
            "checks_passed": sum(1 for c in checks if c.get("check_exit") == 0),
            "names": json.loads(names_json.read_text()) if names_json.exists() else [],
        }
    (options.out / "gpu_summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    with tarfile.open(options.out / "extracted.tgz", "w:gz") as tar:
        for example in options.examples:
            if (options.root / example).exists():
                tar.add(options.root / example, arcname=example)
    print("\nexample          kernels  --check passed  bitwise-same  renamed/inductor time")
    for example, row in summary["examples"].items():
        names = row.get("names", [])
        ratios = [n["ratio"] for n in names if "ratio" in n]
        ratio_text = f"{min(ratios):.3f}..{max(ratios):.3f}" if ratios else "-"
        same = sum(1 for n in names if n["bitwise_equal"])
        print(f"{example:16s} {row.get('kernels', 0):7d}  {row.get('checks_passed', 0):14d}  {same:6d}/{len(names):<5d}  {ratio_text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
