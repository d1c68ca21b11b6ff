"""User source lines: Inductor's provenance artifacts (kernel -> FX nodes -> stack traces) read into `SourceLine`s."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from harvest.fusion.common import STACK_TRACES
from harvest.paths import installed_path

# ------------------------------------------------------------------------------------------ provenance


@dataclass(frozen=True)
class SourceLine:
    """One user source line a kernel (or extern call) came from."""

    file: str
    line: int
    function: str
    code: str

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function, "code": self.code}


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\s*$')


def parse_stack_trace(trace: str) -> SourceLine | None:
    """The innermost frame of one stack-trace string (`  File "x.py", line 3, in f\\n    code\\n    ^^^`); a file of an
    installed package is named from the package down (paths.installed_path), so no output names this machine's venv."""
    lines = trace.splitlines()
    found: SourceLine | None = None
    for i, text in enumerate(lines):
        frame = _FRAME.match(text)
        if not frame:
            continue
        code = ""
        if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]):
            code = lines[i + 1].strip()
        found = SourceLine(installed_path(frame["file"]) or frame["file"], int(frame["line"]), frame["function"], code)
    return found


def provenance_artifact(provenance: dict[str, Any], name: str) -> dict[str, Any]:
    """One provenance artifact as a dict; older captures may hold it as JSON or Python-literal text."""
    value = provenance.get(name) if provenance else None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                return {}
    return value if isinstance(value, dict) else {}


def handles_of(table: dict[str, Any], name: str) -> list[str]:
    """Keys of a provenance table that belong to kernel/extern `name` ("name:<debug handle>"), sorted by handle."""
    keys = [k for k in table if isinstance(k, str) and k.rpartition(":")[0] == name]
    return sorted(keys, key=lambda k: (len(k), k))


def source_lines_for(name: str, provenance: dict[str, Any], handles: tuple[str, ...] = ()) -> tuple[SourceLine, ...]:
    """User source lines of a kernel or extern call. With `handles` only those debug handles are read."""
    traces = provenance_artifact(provenance, STACK_TRACES)
    keys = list(handles) if handles else handles_of(traces, name)
    found: dict[tuple[str, int], SourceLine] = {}
    for key in keys:
        for trace in traces.get(key) or ():
            line = parse_stack_trace(str(trace))
            if line is not None:
                found.setdefault((line.file, line.line), line)
    return tuple(found[k] for k in sorted(found))
