"""Fuzz the renamer: random torch programs -> torch.compile -> every Triton kernel, Inductor's names vs ours, bitwise.

    TRITON_INTERPRET=1 python scripts/rename_fuzz.py --programs 1000 [--seed 0]

Prints each program's figures as it goes and one summary line at the end (also after Ctrl-C, with what ran). The
harness lives with the tests (tests/rename_harness.py); this is its command line.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from rename_harness import check_program, make_program  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=5)
    parser.add_argument("--quiet", action="store_true", help="print failures and the summary only")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")  # Inductor's and numpy's warnings would bury the progress lines
    rng = random.Random(args.seed)
    programs = kernels = mismatches = eager_failures = 0
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="rename_fuzz_") as tmp:
            for index in range(args.programs):
                program = make_program(rng.choice, rng.randint(1, args.max_steps))
                check = check_program(program, Path(tmp))
                programs += 1
                kernels += len(check.kernels)
                bad = [k for k in check.kernels if not k.ok]
                mismatches += len(bad)
                eager_failures += not check.eager_ok
                if bad or not check.eager_ok or not args.quiet:
                    status = "ok" if not bad and check.eager_ok else "FAIL"
                    print(f"[{index + 1}/{args.programs}] {status} {program.dtype} {program.shapes} "
                          f"{' '.join(program.ops)}: {len(check.kernels)} kernels", flush=True)
                for k in bad:
                    print(f"    mismatch {k.kernel} -> {k.renamed}: {k.message}\n{program.source}", flush=True)
                if not check.eager_ok:
                    print(f"    compiled != eager: {check.eager_message}\n{program.source}", flush=True)
    except KeyboardInterrupt:
        print("interrupted; figures so far:", flush=True)
    elapsed = time.perf_counter() - start
    print(f"rename fuzz: {programs} programs, {kernels} kernels, {mismatches} mismatches, "
          f"{eager_failures} compiled-vs-eager failures, {elapsed:.0f} s (seed {args.seed})", flush=True)
    return 1 if mismatches or eager_failures else 0


if __name__ == "__main__":
    sys.exit(main())
