"""Re-make the committed showcases (extracted/h200/*) from their raw H200 captures, exactly as
tests/test_showcase.py rebuilds them: extract from raw/, then `harvest twin` where the showcase has twins (nvcc
needed), then `harvest ptx` for the kernels whose PTX it holds (the same Triton and nvcc versions needed, else it
stops and says so). For a change to what every module carries (templates/kernel.py.j2, harvest/bench/timing.py's pasted section):
no GPU needed, the raw captures stay as they are.

    python scripts/remake_showcases.py            (from the repository root)

It renders with this tree's harvest and templates/ (not an installed harvest's), so run it in a tree holding only
committed changes of others' files: their work in progress would be baked into the showcases.
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harvest.resources  # noqa: E402

harvest.resources.template_dir = lambda: ROOT / "templates"  # this tree's, whatever harvest is installed
from harvest.api import extract  # noqa: E402
from harvest.ptx import ptx_command, toolchain_versions  # noqa: E402
from harvest.twin.command import twin_command  # noqa: E402


def main() -> None:
    for showcase in sorted(p.parent for p in (ROOT / "extracted/h200").glob("*/manifest.json")):
        manifest = json.loads((showcase / "manifest.json").read_text())
        twins = any("twin" in k for g in manifest["graphs"] for k in g["kernels"])
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / showcase.name
            extract(showcase / "raw", out)
            if twins:
                twin_command(out)
            for graph in manifest["graphs"]:
                for kernel in graph["kernels"]:
                    ptx = kernel.get("ptx")
                    if not ptx:
                        continue
                    here = toolchain_versions()
                    if any(ptx["toolchain"].get(t) and ptx["toolchain"][t] != here.get(t) for t in ("triton", "nvcc")):
                        sys.exit(f"{showcase.name}: its PTX was compiled with {ptx['toolchain']}, this machine has {here}; nothing changed")
                    run = ptx_command(out / kernel["module"], ptx["arch"])
                    if run.errors:
                        sys.exit(f"{showcase.name}: harvest ptx failed: {run.errors}; nothing changed")
            for path in list(showcase.iterdir()):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
            for path in out.iterdir():
                (shutil.copytree if path.is_dir() else shutil.copy2)(path, showcase / path.name)
        print(f"{showcase.relative_to(ROOT)}: re-made" + (" (with its twins)" if twins else ""))


if __name__ == "__main__":
    main()
