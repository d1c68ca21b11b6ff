"""Extract every fixture graph, recorded capture, showcase and versions/ corpus, and list each written file's sha256.

Used to show that a refactor leaves harvest's output byte-identical: run it before and after, then diff the two
listings. `PYTHONPATH=. python scripts/snapshot_extractions.py OUT_DIR > listing.txt`. Every target is data (read or
replayed, never run), so the listing depends only on harvest's code and the torch it renders with, given the same OUT_DIR.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from harvest.api import extract
from harvest.errors import HarvestError

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def targets() -> list[Path]:
    graphs = sorted(p for p in FIXTURES.glob("torch-*/**/*.py") if "raw" not in p.parts)
    recorded = sorted(p.parent for p in FIXTURES.glob("**/raw/capture.json"))
    artifacts = [FIXTURES / "artifacts" / "torch_compile_debug", *sorted((FIXTURES / "artifacts").glob("torch_trace/*.log"))]
    showcases = sorted(p for p in (ROOT / "extracted" / "h200").iterdir() if (p / "raw").is_dir())
    return graphs + recorded + artifacts + showcases


def main() -> int:
    out_root = Path(sys.argv[1]).resolve()
    os.chdir(ROOT)  # targets by relative path: the capture records the path it was given
    shutil.rmtree(out_root, ignore_errors=True)
    for number, target in enumerate(targets()):
        out = out_root / f"{number:03d}"
        try:
            extract(target.relative_to(ROOT), out)
            status = "ok"
        except HarvestError as exc:
            status = f"{type(exc).__name__}: {str(exc).splitlines()[0]}".replace(str(out), "OUT").replace(str(ROOT), "ROOT")
        print(f"# {target.relative_to(ROOT)}: {status}", flush=True)
        for path in sorted(out.rglob("*")) if out.exists() else []:
            if path.is_file() and "records" not in path.parts and path.name != "target.log":
                print(f"{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}  {path.relative_to(out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
