"""Which extractions harvest may execute code from: the ones this machine made by running a target.

An extraction holds code: Inductor's wrapper modules under raw/ and the kernel modules. `harvest bench` (Inductor's
kernels timed inside their graph) runs raw/<graph>/output_code.py, and `harvest run --with` imports the kernel
modules into the target's process. An extraction that came from elsewhere (a pull request, a colleague, a bug
report) may hold anything, and a field inside it (the manifest's "mode", say) is only what it claims. So what may run
is decided outside the extraction: when `harvest extract` runs a target, it remembers the digest of the raw capture
it wrote (raw/capture.json and every raw/<graph>/output_code.py) in this user's state directory
($HARVEST_STATE_DIR, else $XDG_STATE_HOME/harvest, else ~/.local/state/harvest). An extraction whose raw capture
has a remembered digest was made here; any other runs code only when the user says so (`--trust-artifact`).

Nothing is written into the extraction itself: its files stay the same bytes on every machine.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

MADE = "made-here"


def state_dir() -> Path:
    """Where harvest keeps what it remembers between runs for this user."""
    if os.environ.get("HARVEST_STATE_DIR"):
        return Path(os.environ["HARVEST_STATE_DIR"])
    if os.environ.get("XDG_STATE_HOME"):
        return Path(os.environ["XDG_STATE_HOME"]) / "harvest"
    return Path.home() / ".local" / "state" / "harvest"


def raw_digest(extraction: Path) -> str | None:
    """The sha256 of an extraction's raw capture: every raw file that can run or says what ran (None without one)."""
    raw = extraction / "raw"
    record = raw / "capture.json"
    if not record.is_file():
        return None
    # a torchrun job's ranks: each rank's own capture and wrapper modules (bench runs them through the manifest)
    files = [record, *sorted(raw.glob("*/output_code.py")), *sorted(raw.glob("rank*/capture.json")),
             *sorted(raw.glob("rank*/*/output_code.py"))]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(raw).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).hexdigest().encode("ascii") + b"\n")
    return digest.hexdigest()


def remember_made_here(extraction: Path) -> bool:
    """Note that this machine made `extraction` by running a target; False when the state directory cannot be
    written (the extraction is still whole: its code then runs only with --trust-artifact)."""
    digest = raw_digest(extraction)
    if digest is None:
        return False
    try:
        folder = state_dir() / MADE
        folder.mkdir(parents=True, exist_ok=True)
        (folder / digest).write_text(str(extraction.resolve()) + "\n", encoding="utf-8")
    except OSError:
        return False
    return True


def made_here(extraction: Path) -> bool:
    """Whether this machine made `extraction` by running a target, its raw capture unchanged since."""
    digest = raw_digest(extraction)
    return digest is not None and (state_dir() / MADE / digest).is_file()


NOT_MADE_HERE = ("was not made on this machine by running a target (it came from elsewhere, or its raw/ changed "
                 "since): harvest does not execute its code")
