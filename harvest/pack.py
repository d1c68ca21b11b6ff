"""`harvest pack KERNEL`: one kernel module as a single file for a bug report or a Triton issue.

The module's import of its extraction's harness.py is replaced by the harness pieces it uses, written for this one
kernel (its interpreter shim holds only what this kernel calls): `Tensor` where the import was, the Inductor helpers
the kernel calls (`triton_helpers`, harvest's own) and the rest just above `if __name__ == "__main__":`. The file
then imports only torch and triton, and `--check` / `--bench` work as before.
The run's record, when the module has one, is copied beside it (`<name>.record.pt`) and RECORD points there.

Pure: `pack_module(module_text, harness_text, record_name) -> str`; `pack_command` reads and writes the files. The
module is read as text (harvest.module.file; never imported).
"""

from __future__ import annotations

import ast
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from harvest.errors import ParseError, UsageError
from harvest.module.file import read_module_file
from harvest.module.render import harness_source
from harvest.writer import ensure_writable, write_file, write_through

HARNESS_IMPORT = re.compile(
    r"^(?:import os[^\n]*\nimport sys[^\n]*\n\n)?(?:sys\.dont_write_bytecode = True[^\n]*\n)?sys\.path\.insert\(0, os\.path\.join\(os\.path\.dirname\(os\.path\.abspath\(__file__\)\), \"\.\.\"\)\)\n"
    r"from harness import Tensor, main[^\n]*\n",
    re.M,
)
MAIN = "\nif __name__ == \"__main__\":\n"


def harness_piece(harness_text: str, name: str) -> str:
    """The text between `# >>> harness: NAME` and `# <<< harness: NAME` of a harness.py."""
    start = harness_text.index(f"# >>> harness: {name}\n") + len(f"# >>> harness: {name}\n")
    return harness_text[start : harness_text.index(f"# <<< harness: {name}")].strip() + "\n"


def harness_imports(harness_text: str) -> list[str]:
    """The harness's own imports (its module-level import lines above the first piece), for the packed file."""
    head = harness_text[: harness_text.index("# >>> harness: ")]
    return [line for line in head.splitlines() if line.startswith(("import ", "from "))]


def pack_module(module_text: str, harness_text: str, record_name: str | None, label: str) -> str:
    """The module with the harness pieces inlined and RECORD set to `record_name` (None: no record)."""
    if not HARNESS_IMPORT.search(module_text) or MAIN not in module_text:
        raise ParseError(f"{label}: not a kernel module this harvest writes (no `from harness import ...` line or no __main__); replay its extraction with `harvest extract DIR` to renew it")
    text = HARNESS_IMPORT.sub(lambda _: harness_piece(harness_text, "Tensor"), module_text, count=1)
    before, after = text.split(MAIN, 1)
    pieces = [harness_piece(harness_text, name) for name in ("triton_helpers", "triton_rand", "body") if f"# >>> harness: {name}\n" in harness_text]
    text = before.rstrip("\n") + "\n\n\n" + "\n\n".join(pieces) + "\n" + MAIN + after
    lines = text.splitlines(keepends=True)
    have = {line.rstrip("\n") for line in lines}
    missing = [line + "\n" for line in harness_imports(harness_text) if line not in have]
    library = [line for line in missing if line.split()[1].split(".")[0] in ("torch", "triton")]
    # the standard library's beside the module's first (sorted) block; torch's and triton's after the module's own
    start = next(i for i, line in enumerate(lines) if line.startswith(("import ", "from ")))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("import "))
    lines[start:end] = sorted(lines[start:end] + [line for line in missing if line not in library])
    last = max(i for i, line in enumerate(lines) if line.startswith(("import torch", "import triton", "from triton", "from torch")))
    lines[last + 1 : last + 1] = library
    text = "".join(lines)
    text = re.sub(r"^RECORD = .*$", f"RECORD = {record_name!r}  # the run's data for this launch, beside this file", text, count=1, flags=re.M)
    text = text.replace('"""\n\nimport', '"""\n# Packed by `harvest pack`: the harness pieces it uses are inlined; it needs only torch and triton.\n\nimport', 1)
    compile(text, label, "exec")
    ast.parse(text)
    return text


@dataclass(frozen=True)
class Packed:
    module: Path
    record: Path | None


def pack_command(kernel: Path, out: Path | None = None) -> Packed:
    """Write the packed file (default: `<kernel stem>.packed.py` in the current directory) and its record."""
    if kernel.suffix != ".py" or not kernel.is_file():
        raise UsageError(f"{kernel}: not a kernel module file; give one, e.g. extracted/square_square/g0_inference/square_square_kernel.py")
    text = kernel.read_text(encoding="utf-8")
    out = out or Path(f"{kernel.stem}.packed.py")
    relative = read_module_file(text, str(kernel)).record
    record_source = kernel.parent / relative if relative and (kernel.parent / relative).is_file() else None
    record = out.with_name(out.stem + ".record.pt") if record_source else None
    packed = pack_module(text, harness_source([text]), record.name if record else None, str(kernel))
    ensure_writable(out.parent if str(out.parent) else Path("."))
    write_file(out, packed)
    if record_source and record:
        write_through(record, lambda tmp: shutil.copyfile(record_source, tmp))  # streamed: a record may be GiBs
    return Packed(out, record)
