"""Issue 25, point 4: each twin slower than its Triton kernel by more than a factor explained from `harvest ptx`.

Reads the per-kernel times of an H200 run (scripts/gpu/parts/twins.py's twins.json, or rows in that form), finds each slow
kernel's module in the run's extractions (brought back without their launch data), runs `harvest ptx` on it (offline,
no GPU: Triton's PTX for sm_90 at the module's recorded config, the twin's from nvcc) and prints a markdown table:
the two sides' instruction counts, registers, global access widths, and what `harvest ptx` says differs most.

    python scripts/explain_twins.py TWINS_JSON EXTRACTIONS_DIR [--over 1.3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def modules_of(extraction: Path) -> dict[str, list[Path]]:
    manifest = json.loads((extraction / "manifest.json").read_text())
    found: dict[str, list[Path]] = {}
    for graph in manifest["graphs"]:
        for kernel in graph["kernels"]:
            if kernel.get("module"):
                found.setdefault(kernel.get("display_name") or kernel["name"], []).append(extraction / kernel["module"])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("twins_json", type=Path)
    parser.add_argument("extractions", type=Path)
    parser.add_argument("--over", type=float, default=1.3)
    args = parser.parse_args()
    rows = json.loads(args.twins_json.read_text())
    print("| extraction | kernel | kind | twin / Triton | Triton: PTX instr., regs, SASS, global loads | "
          "twin: PTX instr., regs, SASS, global loads | what differs most (harvest ptx) |")
    print("|---|---|---|--:|---|---|---|")
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["extraction"], row["kernel"])
        index = seen.get(key, 0)
        seen[key] = index + 1
        ratio = row.get("ratio") or row["twin_ms"][0] / row["triton_ms"][0]
        if ratio <= args.over:
            continue
        modules = modules_of(args.extractions / row["extraction"]).get(row["kernel"], [])
        if index >= len(modules):
            print(f"| {key[0]} | {key[1]} | {row['kind']} | {ratio:.2f} | module not found | | |")
            continue
        module = modules[index]
        done = subprocess.run([sys.executable, "-m", "harvest", "ptx", str(module), "-q"], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"| {key[0]} | {key[1]} | {row['kind']} | {ratio:.2f} | harvest ptx failed: "
                  f"{(done.stderr.strip().splitlines() or ['?'])[-1]} | | |")
            continue
        manifest = json.loads((args.extractions / row["extraction"] / "manifest.json").read_text())
        relative = str(module.relative_to(args.extractions / row["extraction"]))
        summary = next(k["ptx"] for g in manifest["graphs"] for k in g["kernels"] if k.get("module") == relative)
        named = "; ".join(summary.get("differs_most") or [])

        def side(s: dict) -> str:
            return f"{s['instructions']}, {s['registers']}, {s['sass_instructions']}, {s['ld_global'] or '-'}"

        print(f"| {key[0]} | {key[1]} | {row['kind']} | {ratio:.2f} | {side(summary['triton'])} | "
              f"{side(summary['twin'])} | {named} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
