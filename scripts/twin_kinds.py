"""Twin / Triton time per kind, from the twins.json files scripts/gpu/parts/twins.py wrote (issue 25's table):
    python scripts/twin_kinds.py OUT/twins.json [MORE/twins.json ...]
Per kind: twins timed, the median and the worst ratio, and how many are over 1.3x (listed with their ratio)."""

from __future__ import annotations

import json
import statistics
import sys


def main(paths: list[str]) -> int:
    rows = [r for p in paths for r in json.load(open(p)) if r.get("twin_ms") and r.get("triton_ms")]
    kinds: dict[str, list[tuple[float, str]]] = {}
    for row in rows:
        kinds.setdefault(row["kind"], []).append((row["twin_ms"][0] / row["triton_ms"][0], f"{row['extraction']}/{row['kernel']}"))
    print("| kind | twins | twin / Triton median | worst | over 1.3x |")
    print("|---|---|---|---|---|")
    every = []
    for kind, found in sorted(kinds.items()):
        ratios = [r for r, _ in found]
        every += ratios
        worst = max(found)
        print(f"| {kind} | {len(found)} | {statistics.median(ratios):.2f} | {worst[0]:.2f} ({worst[1]}) | {sum(r > 1.3 for r in ratios)} |")
    if every:
        print(f"| all | {len(every)} | {statistics.median(every):.2f} | {max(every):.2f} | {sum(r > 1.3 for r in every)} |")
    for kind, found in sorted(kinds.items()):
        for ratio, name in sorted(found, reverse=True):
            if ratio > 1.3:
                print(f"over 1.3x: {kind} {name} {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
