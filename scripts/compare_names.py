"""Renamed kernel vs Inductor-named kernel: bitwise-identical outputs, and (on a GPU) the same time.

    python scripts/compare_names.py READABLE_DIR INDUCTOR_DIR [--bench] [--json OUT.json]

READABLE_DIR and INDUCTOR_DIR are two extractions of the same capture, one with the default names and one with
`--names inductor` (e.g. `harvest extract extracted/h200/small_model -o /tmp/inductor_names --names inductor` replays the
same raw capture). Each pair of modules gets the same inputs (make_inputs with the same seed draws the same values:
parameters come in the same order), runs its launch(), and every tensor argument afterwards must be equal bit for bit.
On a GPU, --bench times both with triton.testing.do_bench and prints the ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from harvest.imports import import_file


def load(path: Path):
    return import_file(path, f"harvest_compare_{abs(hash(str(path)))}")


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.is_floating_point:  # compare the bits: NaN payloads and -0.0 included
        width = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.contiguous().view(width), b.contiguous().view(width))
    return torch.equal(a, b)


def pairs(readable: Path, inductor: Path):
    left = json.loads((readable / "manifest.json").read_text())
    right = json.loads((inductor / "manifest.json").read_text())
    by_name = {(g["name"], k["name"]): k for g in right["graphs"] for k in g["kernels"]}
    for graph in left["graphs"]:
        for kernel in graph["kernels"]:
            twin = by_name.get((graph["name"], kernel["name"]))
            if kernel["module"] and twin and twin["module"]:
                yield graph["name"], kernel["name"], readable / kernel["module"], inductor / twin["module"]


def compare(readable_path: Path, inductor_path: Path, device: str, bench: bool) -> dict:
    renamed, original = load(readable_path), load(inductor_path)
    args_r = renamed.make_inputs(device, seed=0)
    args_o = original.make_inputs(device, seed=0)
    renamed.launch(**args_r)
    original.launch(**args_o)
    tensors_r = [v for v in args_r.values() if isinstance(v, torch.Tensor)]
    tensors_o = [v for v in args_o.values() if isinstance(v, torch.Tensor)]
    same = len(tensors_r) == len(tensors_o) and all(bitwise_equal(a, b) for a, b in zip(tensors_r, tensors_o))
    row = {"module": str(readable_path), "bitwise_equal": same, "tensors": len(tensors_r)}
    if bench and device == "cuda":
        import triton.testing

        fresh_r, fresh_o = renamed.make_inputs(device, 0), original.make_inputs(device, 0)
        row["renamed_ms"] = triton.testing.do_bench(lambda: renamed.launch(**fresh_r), quantiles=[0.5, 0.2, 0.8])
        row["inductor_ms"] = triton.testing.do_bench(lambda: original.launch(**fresh_o), quantiles=[0.5, 0.2, 0.8])
        row["ratio"] = row["renamed_ms"][0] / row["inductor_ms"][0]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("readable", type=Path)
    parser.add_argument("inductor", type=Path)
    parser.add_argument("--bench", action="store_true", help="time both (GPU only)")
    parser.add_argument("--json", type=Path, help="write the rows here")
    options = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []
    for graph, kernel, left, right in pairs(options.readable, options.inductor):
        row = compare(left, right, device, options.bench)
        row.update(graph=graph, kernel=kernel)
        rows.append(row)
        timing = f"  renamed {row['renamed_ms'][0]:.4f} ms / inductor {row['inductor_ms'][0]:.4f} ms = {row['ratio']:.3f}" if "ratio" in row else ""
        print(f"{'same' if row['bitwise_equal'] else 'DIFFERENT'}  {graph}/{kernel}{timing}", flush=True)
    same = sum(r["bitwise_equal"] for r in rows)
    print(f"{same} of {len(rows)} kernels bitwise-identical on {device}")
    if options.json:
        options.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if rows and same == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
