"""Twins written again with some of the translators' choices changed, to time them against the twins as they are
in the same device call (scripts/gpu/verify.sh twins, VARIANTS=...): one call then weighs several ideas, not one.

    python scripts/twin_variants.py EXTRACTIONS_DIR VARIANTS_DIR "NAME:CHOICE=VALUE[,...]" [...]
    python scripts/twin_variants.py --compare BASE_TWINS_JSON VARIANT_TWINS_JSON    (scripts/gpu/parts/twins.py's, same call)

EXTRACTIONS_DIR holds extractions (one per target) with their twins written at this code. For each variant, each
extraction is copied to VARIANTS_DIR/NAME/ without its twins, and `harvest twin` (twin_command, without nvcc) runs
on the copy with those choices changed: a CHOICE is a field of harvest.twin.choices.TwinChoices, an int (0 or 1 for
a yes-or-no one), as in `splitlooped:split_looped_rows=1` or `blockrows:warp_row_limit=0,loop_copies=2`.
VARIANTS_DIR/NAME/changed.txt lists the twins whose .cu or launcher differ from EXTRACTIONS_DIR's, as
`EXTRACTION/GRAPH/twin/KERNEL.cu` (what scripts/gpu/parts/twins.py --only then checks and times)."""

from __future__ import annotations

import concurrent.futures
import re
import shutil
import subprocess
import sys
from pathlib import Path

SPEC = re.compile(r"(?P<name>[A-Za-z0-9_-]+):(?P<changes>[a-z_][a-z0-9_]*=-?\d+(,[a-z_][a-z0-9_]*=-?\d+)*)$")

# The child: the copy's twins written with the choices changed (the device call's build compiles them). A choice
# that TwinChoices does not have, or a bad value, exits 3 with the choices there are.
CHANGED_TWIN = """
import sys
from pathlib import Path
from harvest.errors import UsageError
from harvest.twin.choices import DEFAULT_CHOICES
from harvest.twin.command import twin_command
try:
    choices = DEFAULT_CHOICES.changed(sys.argv[2])
except UsageError as exc:
    print(exc, file=sys.stderr)
    sys.exit(3)
twin_command(Path(sys.argv[1]), compile_check=False, choices=choices)
"""


def parse(spec: str) -> tuple[str, str]:
    found = SPEC.match(spec)
    if found is None:
        raise SystemExit(f"twin_variants: {spec!r} is not NAME:CHOICE=INT[,...] (a CHOICE is a field of "
                         "harvest.twin.choices.TwinChoices: `splitlooped:split_looped_rows=1`)")
    return found["name"], found["changes"]


def twin_files(extraction: Path) -> dict[str, bytes]:
    """Each twin's .cu and module of an extraction, by path under the extraction's parent."""
    return {str(p.relative_to(extraction.parent)): p.read_bytes() for p in sorted(extraction.glob("*/twin/*"))
            if p.suffix in (".cu", ".py")}


def compare(base_json: str, variant_json: str) -> int:
    """Each twin the variant changed: twin / Triton as it is and with the variant, and the medians of both."""
    import json
    import statistics

    base = {r["path"]: r for r in json.loads(Path(base_json).read_text()) if r.get("twin_ms") and r.get("triton_ms")}
    pairs = []
    print("| twin | kind | check | as it is | variant | variant / as it is (twin ms) |")
    print("|---|---|---|---|---|---|")
    for row in json.loads(Path(variant_json).read_text()):
        mine = base.get(row.get("path"))
        if not (mine and row.get("twin_ms") and row.get("triton_ms")):
            print(f"| {row.get('path')} | {row['kind']} | {row['check']} | - | - | - |")
            continue
        before, after = mine["twin_ms"][0] / mine["triton_ms"][0], row["twin_ms"][0] / row["triton_ms"][0]
        pairs.append((before, after))
        print(f"| {row['path']} | {row['kind']} | {row['check']} | {before:.2f} | {after:.2f} | {row['twin_ms'][0] / mine['twin_ms'][0]:.2f} |")
    if pairs:
        print(f"median twin / Triton: as it is {statistics.median(b for b, _ in pairs):.2f}, "
              f"with the variant {statistics.median(a for _, a in pairs):.2f} ({len(pairs)} twins)")
    return 0


def write_variant(extraction: Path, copy: Path, changes: str) -> subprocess.CompletedProcess:
    """The extraction copied without its twins, and `harvest twin` run on the copy with the choices changed."""
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(extraction, copy, ignore=shutil.ignore_patterns("twin", "build", "__pycache__"))
    return subprocess.run([sys.executable, "-c", CHANGED_TWIN, str(copy), changes], capture_output=True, text=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--compare"] and len(argv) == 3:
        return compare(argv[1], argv[2])
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    base, out = Path(argv[0]), Path(argv[1])
    variants = [parse(spec) for spec in argv[2:]]
    extractions = sorted(p for p in base.iterdir() if (p / "manifest.json").is_file())
    for name, changes in variants:
        changed = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:  # one process an extraction
            written = list(pool.map(lambda e: write_variant(e, out / name / e.name, changes), extractions))  # noqa: B023
        for extraction, done in zip(extractions, written):
            copy = out / name / extraction.name
            if done.returncode != 0:
                print(f"twin_variants: {name}: harvest twin {extraction.name} failed: {done.stderr.strip()[-400:]}", file=sys.stderr)
                return 1
            before, after = twin_files(extraction), twin_files(copy)
            for path in sorted(p for p in after if p.endswith(".cu")):
                module = path[: -len(".cu")] + "_twin.py"
                if before.get(path) != after[path] or before.get(module) != after.get(module):
                    changed.append(path)
        (out / name / "changed.txt").write_text("".join(f"{p}\n" for p in changed))
        print(f"variant {name} ({changes}): {len(changed)} twins differ", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
