"""Lines per kernel module of extractions, and any block of 6+ lines repeated word for word between two modules of
one extraction outside their kernels (the harness excluded; two kernels of one shape share their prologue lines,
which are their own code): the lean-module figures of docs/benchmarks.md.

    python scripts/module_lines.py EXTRACTION [EXTRACTION ...]

Prints one line per extraction: modules, lines min/median/max, the longest module, repeated blocks; exit code 1 when
a module is over 200 lines or a block repeats.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

BLOCK = 6
LIMIT = 200


def modules(extraction: Path) -> dict[str, list[str]]:
    manifest = json.loads((extraction / "manifest.json").read_text(encoding="utf-8"))
    paths = [k["module"] for g in manifest["graphs"] for k in g["kernels"] if k.get("module")]
    return {p: (extraction / p).read_text(encoding="utf-8").splitlines() for p in paths}


def repeated_blocks(texts: dict[str, list[str]]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(module, earlier module, block) for each block of BLOCK non-blank lines met in two modules."""
    seen: dict[tuple[str, ...], str] = {}
    found = []
    for path, lines in sorted(texts.items()):
        start, end = lines.index(next(line for line in lines if line.startswith("# >>> kernel"))), lines.index("# <<< kernel")
        stripped = [line.strip() for line in lines[:start] + lines[end + 1 :]]
        mine = set()
        for start in range(len(stripped) - BLOCK + 1):
            block = tuple(stripped[start : start + BLOCK])
            if not all(block) or block in mine:
                continue
            mine.add(block)
            first = seen.setdefault(block, path)
            if first != path:
                found.append((path, first, block))
    return found


def main(argv: list[str]) -> int:
    bad = False
    for name in argv:
        extraction = Path(name)
        if not (extraction / "manifest.json").is_file():
            print(f"{extraction.name}: no extraction (no manifest.json)")
            continue
        texts = modules(extraction)
        if not texts:
            print(f"{extraction.name}: no modules")
            continue
        counts = {p: len(lines) for p, lines in texts.items()}
        longest = max(counts, key=counts.get)
        repeats = repeated_blocks(texts)
        print(f"{extraction.name}: {len(counts)} modules, lines min {min(counts.values())} / median "
              f"{statistics.median(counts.values()):g} / max {counts[longest]} ({longest}); "
              f"{len(repeats)} repeated {BLOCK}-line blocks")
        for path, first, block in repeats[:3]:
            print(f"   {path} repeats {first}: {block[0]} ...")
        bad = bad or counts[longest] > LIMIT or bool(repeats)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
