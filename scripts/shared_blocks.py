"""Runs of 6 or more non-blank lines that are the same, word for word, in two kernel modules of one extraction
(issue 19's measure; harness.py and raw/ are not modules). Each run is printed with where it is and what it holds:

- kernel code: fewer than 6 of its lines lie outside the two kernels' regions (their own code, as Inductor wrote it;
  a run may go on past a kernel's last lines into the end marker and CONFIG);
- the same kernel: the two modules hold one kernel text (its name aside), as when Inductor compiles a kernel again in
  another graph, or writes the same code twice under two names; such modules differ only in their data;
- OUTSIDE the kernels: 6 or more lines that harvest wrote are the same in two modules of different kernels.

    python scripts/shared_blocks.py EXTRACTION [EXTRACTION ...]
"""

from __future__ import annotations

import hashlib
import itertools
import re
import sys
from pathlib import Path

RUN = 6


def numbered_lines(path: Path) -> list[tuple[int, str, bool]]:
    """(line number, text, inside the kernel region) of every non-blank line."""
    found, inside = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("# >>> kernel"):
            inside = True
        elif line.startswith("# <<< kernel"):
            inside = False
        if line.strip():
            found.append((number, line.rstrip(), inside and not line.startswith("# >>> kernel")))
    return found


def shared_runs(a: list, b: list) -> list[tuple[int, int, int, bool]]:
    """(length, line in a, line in b, inside both kernels) of every maximal run of RUN+ equal lines."""
    where: dict[str, list[int]] = {}
    for j, (_, text, _) in enumerate(b):
        where.setdefault(text, []).append(j)
    runs = []
    for i, (_, text, _) in enumerate(a):
        for j in where.get(text, []):
            if i and j and a[i - 1][1] == b[j - 1][1]:
                continue  # inside a run already counted from its start
            k = 0
            while i + k < len(a) and j + k < len(b) and a[i + k][1] == b[j + k][1]:
                k += 1
            if k >= RUN:
                written = sum(not (a[i + n][2] and b[j + n][2]) for n in range(k))  # lines harvest wrote
                runs.append((k, a[i][0], b[j][0], written < RUN))
    return runs


def kernel_digest(path: Path) -> str:
    """The kernel region of a module with the kernel's own name taken out: equal for two modules of one kernel."""
    text = path.read_text(encoding="utf-8")
    found = re.search(r"^# >>> kernel (\w+) .*?^# <<< kernel", text, re.M | re.S)
    if not found:
        return str(path)
    code = found.group(0).split("\n", 1)[1]  # the marker line names the graph
    return hashlib.sha256(re.sub(rf"\b{found.group(1)}\b", "KERNEL", code).encode()).hexdigest()


def main(paths: list[str]) -> int:
    for root in map(Path, paths):
        modules = sorted(root.glob("g*/*.py"))
        lines = {m: numbered_lines(m) for m in modules}
        digests = {m: kernel_digest(m) for m in modules}
        inside = same = outside = 0
        for a, b in itertools.combinations(modules, 2):
            for length, line_a, line_b, kernel in shared_runs(lines[a], lines[b]):
                if kernel:
                    inside += 1
                    where = "kernel code"
                elif digests[a] == digests[b]:
                    same += 1
                    where = "outside the kernels, the same kernel"
                else:
                    outside += 1
                    where = "OUTSIDE the kernels"
                print(f"  {length} lines, {where}: {a.relative_to(root)}:{line_a} ~ {b.relative_to(root)}:{line_b}")
        print(f"{root.name}: {len(modules)} modules; runs of {RUN}+ equal lines: {outside} outside the kernels between "
              f"different kernels, {same} between modules of the same kernel, "
              f"{inside} in kernel code")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
