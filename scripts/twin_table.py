"""The twin / Triton table of docs/twins-h200.md from several device calls, each row from the call that timed the
twin code the extractions have now (scripts/gpu/parts/twins.py's twins.json, one per call):

    python scripts/twin_table.py FINAL CALL_NAME=TWINS_JSON:EXTRACTIONS [...]  > table.json

FINAL and each call's EXTRACTIONS are directories of extractions (one per target, as scripts/gpu/verify.sh twins leaves them
in $X), FINAL's twins written at the code being documented, each call's at the code that call timed (the call's
extractions.tgz with `harvest twin` run on it at that commit). A twin's row comes from the first call (in the order
given) whose kernel .cu and launcher are byte-identical to FINAL's; `--same-config=CALL:KERNEL_PATH` accepts a
launcher that differs from that call's only in text that gives the same launch (said in the docs, per row), and
`--variant=CALL:KERNEL_PATH` takes that call's figures for a twin whose code it timed in another version (the row's
call is then "CALL variant", the difference said in the docs). A twin no call timed is listed with "call": null. Writes JSON rows (extraction, kernel, kind, check, twin_ms, triton_ms,
call) in scripts/gpu/parts/twins.py's order, for scripts/twin_kinds.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def twins_in_order(extraction: Path) -> list[tuple[Path, Path]]:
    """(kernel .cu, twin module) of each twin, in scripts/gpu/parts/twins.py's order (the manifest's graphs and kernels)."""
    manifest = json.loads((extraction / "manifest.json").read_text())
    found = []
    for graph in manifest["graphs"]:
        for kernel in graph["kernels"]:
            twin = kernel.get("twin") or {}
            if twin.get("status") == "ok":
                found.append((extraction / twin["cuda"], extraction / twin["module"]))
    return found


def launcher(module: Path) -> str:
    return re.search(r'LAUNCHER = r"""(.*?)"""', module.read_text(), re.S).group(1)


def main(argv: list[str]) -> int:
    same_config = {tuple(a.split("=", 1)[1].split(":", 1)) for a in argv if a.startswith("--same-config=")}
    variants = {tuple(a.split("=", 1)[1].split(":", 1)) for a in argv if a.startswith("--variant=")}
    argv = [a for a in argv if not a.startswith(("--same-config=", "--variant="))]
    if len(argv) < 2:
        raise SystemExit(__doc__)
    final, calls = Path(argv[0]), []
    for spec in argv[1:]:
        name, _, rest = spec.partition("=")
        path, _, extractions = rest.partition(":")
        if not (name and Path(path).is_file() and Path(extractions).is_dir()):
            raise SystemExit(f"twin_table: {spec!r} is not CALL_NAME=TWINS_JSON:EXTRACTIONS_DIR of a file and a directory")
        calls.append((name, json.loads(Path(path).read_text()), Path(extractions)))
    rows = []
    for extraction in sorted(p for p in final.iterdir() if (p / "manifest.json").is_file()):
        mine = twins_in_order(extraction)
        chosen = None
        for index, (cuda, module) in enumerate(mine):
            relative = cuda.relative_to(final)
            for name, timed, directory in calls:
                theirs = twins_in_order(directory / extraction.name)
                call_rows = [r for r in timed if r["extraction"] == extraction.name]
                if index >= len(theirs) or index >= len(call_rows):
                    continue
                their_cuda, their_module = theirs[index]
                if their_cuda.relative_to(directory) != relative:
                    continue
                variant = (name, str(relative)) in variants
                if not variant and their_cuda.read_bytes() != cuda.read_bytes():
                    continue
                if not variant and launcher(their_module) != launcher(module) and (name, str(relative)) not in same_config:
                    continue
                chosen = {**{k: call_rows[index][k] for k in ("extraction", "kernel", "kind", "check", "twin_ms", "triton_ms")},
                          "call": f"{name} variant" if variant else name, "path": str(relative)}
                break
            else:
                chosen = {"extraction": extraction.name, "kernel": cuda.stem, "path": str(relative), "call": None}
            rows.append(chosen)
    json.dump(rows, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
