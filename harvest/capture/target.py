"""What harvest was given to extract, worked out once: `classify(path) -> Target`.

A target is a script (run in a child process under the capture hooks) or an artifact read without a run: an
Inductor output_code.py, a TORCH_COMPILE_DEBUG directory, a TORCH_TRACE log (or a directory of them), or an earlier
extraction (or its raw/), which is replayed. Every later step asks the Target, never the path again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harvest.capture.artifacts import (
    load_debug_dir,
    load_output_code,
    load_raw_capture,
    load_trace,
    looks_like_output_code,
    raw_capture_dir,
)
from harvest.errors import UsageError
from harvest.model import Capture

SCRIPT = "script"  # a Python script that calls torch.compile: harvest runs it
OUTPUT_CODE = "output_code"  # one Inductor wrapper module (output_code.py)
DEBUG_DIR = "debug_dir"  # a TORCH_COMPILE_DEBUG directory: run_*/torchinductor/<graph>/output_code.py
TRACE = "trace"  # a TORCH_TRACE log file, or a directory of them
EXTRACTION = "extraction"  # an extraction harvest wrote (or its raw/): replayed from raw/capture.json

GIVE = "give a script, an output_code.py, a TORCH_COMPILE_DEBUG dir or a TORCH_TRACE log"


@dataclass(frozen=True)
class Target:
    """A classified target. `raw_dir` is an extraction's raw/ (kind EXTRACTION only)."""

    kind: str
    path: Path
    raw_dir: Path | None = None

    @property
    def is_script(self) -> bool:
        """harvest runs it: its code executes, in a child process."""
        return self.kind == SCRIPT

    @property
    def can_run_artifact(self) -> bool:
        """--run-artifact applies: Inductor's wrapper code, whose graphs harvest may call to record launches."""
        return self.kind in (OUTPUT_CODE, DEBUG_DIR, TRACE)

    def default_out_dir(self) -> Path:
        """extracted/<script stem>; an extraction (or its raw/) is replayed in place."""
        if self.raw_dir is not None:
            return self.raw_dir.parent
        return Path("extracted") / (self.path.stem if self.path.is_file() else self.path.name)

    def replays_into(self, out: Path) -> bool:
        """An extraction replayed in place: its raw/ is the input and stays as it is."""
        return self.raw_dir is not None and out.resolve() in (self.path.resolve(), self.path.resolve().parent)


def classify(path: Path) -> Target:
    """The kind of `path`; one clear UsageError for a path that is none of them."""
    if not path.exists():
        raise UsageError(f"target not found: {path}")
    if path.is_dir():
        raw = raw_capture_dir(path)
        if raw is not None:
            return Target(EXTRACTION, path, raw)
        if any(path.rglob("output_code.py")):
            return Target(DEBUG_DIR, path)
        if any(path.glob("*.log")):
            return Target(TRACE, path)
        raise UsageError(f"{path} is a directory with no output_code.py and no TORCH_TRACE *.log: give a script, an "
                         "output_code.py, a TORCH_COMPILE_DEBUG dir or a TORCH_TRACE dir")
    if path.suffix == ".log":
        return Target(TRACE, path)
    if path.suffix != ".py":
        raise UsageError(f"not a Python file: {path}; {GIVE}")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read target {path}: {exc.strerror or exc}") from exc
    return Target(OUTPUT_CODE if looks_like_output_code(text) else SCRIPT, path)


def read_artifact(target: Target) -> Capture:
    """The capture an artifact holds, read without a run (a script has none: it must run)."""
    if target.kind == EXTRACTION:
        return load_raw_capture(target.raw_dir)  # type: ignore[arg-type]
    if target.kind == DEBUG_DIR:
        return load_debug_dir(target.path)
    if target.kind == TRACE:
        return load_trace(target.path)
    if target.kind == OUTPUT_CODE:
        return load_output_code(target.path)
    raise ValueError(f"{target.path} is a script: run it to capture its graphs")
