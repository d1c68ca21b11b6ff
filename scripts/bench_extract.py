"""Wall time of `harvest extract` against running the same script with torch.compile and a fresh cache.

    python scripts/bench_extract.py [--repeats 5] [--examples square_square small_model ...]

Per example, median and spread (min..max) of `--repeats` runs of:
  plain    python examples/<ex>.py, fresh TORCHINDUCTOR_CACHE_DIR/TRITON_CACHE_DIR (Inductor's default backend)
  triton   the same, through Inductor's CPU Triton backend + interpreter (what harvest runs without a GPU)
  extract  harvest extract examples/<ex>.py -o <tmp> -q (capture + parse + rename + render + report)
and the ratios extract/plain and extract/triton. Prints a markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRITON_PATH_RUNNER = """
import os, runpy, sys
os.environ["TRITON_INTERPRET"] = "1"
from harvest.capture.bootstrap import setup_cpu_triton
setup_cpu_triton(90)
import torch._inductor.config as config
config.force_disable_caches = True
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def timed(command: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - started


def fresh_env(tmp: str) -> dict:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env.update(TORCHINDUCTOR_CACHE_DIR=f"{tmp}/inductor", TRITON_CACHE_DIR=f"{tmp}/triton", PYTHONPATH=str(ROOT))
    return env


def measure(command: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            times.append(timed([part.replace("{tmp}", tmp) for part in command], fresh_env(tmp)))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--examples", nargs="*", default=["square_compile", "square_square", "small_model", "dynamic_shapes"])
    options = parser.parse_args()
    rows = []
    for example in options.examples:
        script = f"examples/{example}.py"
        plain = measure([sys.executable, script], options.repeats)
        triton_path = measure([sys.executable, "-c", TRITON_PATH_RUNNER, script], options.repeats)
        extract = measure([sys.executable, "-m", "harvest", "extract", script, "-o", "{tmp}/out", "-q"], options.repeats)
        rows.append((example, plain, triton_path, extract))
        print(f"{example}: plain {statistics.median(plain):.2f} s, triton {statistics.median(triton_path):.2f} s, extract {statistics.median(extract):.2f} s", file=sys.stderr, flush=True)

    def cell(times: list[float]) -> str:
        return f"{statistics.median(times):.2f} s ({min(times):.2f}..{max(times):.2f})"

    print("| example | plain script, fresh cache | same, CPU Triton path | harvest extract | extract / plain | extract / Triton path |")
    print("|---|---|---|---|---|---|")
    for example, plain, triton_path, extract in rows:
        ratio_plain = statistics.median(extract) / statistics.median(plain)
        ratio_triton = statistics.median(extract) / statistics.median(triton_path)
        print(f"| {example} | {cell(plain)} | {cell(triton_path)} | {cell(extract)} | {ratio_plain:.2f}x | {ratio_triton:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
