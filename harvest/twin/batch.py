"""Twins compiled together for the compile check. nvcc spends about 0.4 s on a translation unit before it reaches
the first line of a twin (the CUDA runtime's headers, through gcc -E, cicc and ptxas), and a twin itself takes a few
hundredths of that: the six real models' 126 twins took 45 s of nvcc one by one, 5 s in five units. So the check puts twins
that open with the same preprocessor lines (includes, defines, pragmas: their preamble) into one unit, each twin's body in a
namespace of its own, and compiles that once. Only a unit that compiles counts for its twins: when one does not, each
of its twins is compiled alone, as it is written, and an error names that twin's own file and line.

Pure: strings in, strings out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# A kernel's `extern "C"` (one C name, for the launcher) cannot be kept: two twins of one unit may share that name.
# Inside its own namespace the kernel compiles to the same code.
EXTERN_C = re.compile(r'^extern "C" (?=__global__ )', re.M)


@dataclass(frozen=True)
class CompileUnit:
    """Twins compiled as one translation unit: their indexes in the list given, and the unit's source."""

    members: tuple[int, ...]
    source: str


def split_preamble(cuda: str) -> tuple[str, str]:
    """(the preprocessor lines a twin opens with, without the comments and blank lines between them; the rest, from
    its first line of code). Twins whose preprocessor lines are the same compile alike in one unit."""
    lines = cuda.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(("//", "#"))), len(lines))
    return "".join(line for line in lines[:start] if line.lstrip().startswith("#")), "".join(lines[start:])


def compile_units(sources: list[str], parts: int) -> list[CompileUnit]:
    """The twins `sources` as about `parts` units of even size (one per worker), a unit only of twins with the same
    preamble; in the order given, so the same twins always make the same units."""
    split = [split_preamble(source) for source in sources]
    groups: dict[str, list[int]] = {}
    for index, (preamble, _) in enumerate(split):
        groups.setdefault(preamble, []).append(index)
    size = max(1, math.ceil(len(sources) / max(1, parts)))
    units = []
    for preamble, members in groups.items():
        for start in range(0, len(members), size):
            chunk = tuple(members[start:start + size])
            units.append(CompileUnit(chunk, joined_source(preamble, [split[i][1] for i in chunk])))
    return units


def joined_source(preamble: str, bodies: list[str]) -> str:
    """One unit: the shared preamble once, then each body in `namespace harvest_twin_<i>`."""
    parts = [preamble]
    for i, body in enumerate(bodies):
        parts.append(f"\nnamespace harvest_twin_{i} {{\n{EXTERN_C.sub('', body).rstrip()}\n}}  // namespace harvest_twin_{i}\n")
    return "".join(parts)
