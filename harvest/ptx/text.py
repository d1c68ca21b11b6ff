"""PTX and SASS as text, for `harvest ptx`: normalised (no comments or debug info, registers and labels renumbered),
diffed, counted by instruction kind; ptxas -v logs read. Pure: strings in, strings and counters out."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass

from harvest.paths import installed_path

# ------------------------------------------------------------------------------------------ normalising

_REGISTER = re.compile(r"%(rd|rs|rq|rb|r|p|fd|f|hh|h)(\d+)\b")
_LABEL = re.compile(r"\$L__\w+")
_PARAM = re.compile(r"\b[A-Za-z_$][\w$]*_param_(\d+)\b")


def _strip_comments_and_debug(text: str) -> list[str]:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    lines: list[str] = []
    section = ""  # "" outside a debug section, "open" after its .section line, "body" inside its braces
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if section == "open" and line.startswith("{"):
            section = "" if "}" in line else "body"
            continue
        if section == "body":
            section = "" if line == "}" else "body"
            continue
        if not line or line.startswith((".file", ".loc", "@@DWARF")):
            continue
        if line.startswith(".section") and ".debug" in line:
            rest = line.split("{", 1)[1] if "{" in line else None
            section = "open" if rest is None else ("" if "}" in rest else "body")
            continue
        section = ""
        lines.append(" ".join(line.split()))
    return lines


def _tidy(line: str) -> str:
    line = re.sub(r"\[\s*([^\]]*?)\s*\+\s*0\s*\]", r"[\1]", line)  # [ %rd1 + 0 ] -> [%rd1]
    line = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", line)
    line = re.sub(r"\{\s*(%[^{}]*?)\s*\}", r"{\1}", line)  # { %r1, %r2 } -> {%r1, %r2}
    line = re.sub(r"^\.version\s+\S+$", ".version", line)
    line = re.sub(r"^\.target\s+(sm_\d+)[af]?\b", r".target \1", line)
    return _PARAM.sub(r"param_\1", line)


_FILE_LINE = re.compile(r'^(\s*\.file\s+\d+\s+")([^"]*)(")', re.M)


def portable_file_paths(ptx: str) -> str:
    """PTX whose `.file` lines name no absolute path of this machine (DESIGN #11).

    Triton writes the path of every Python file it compiled from: the kernel module (as the relative label harvest
    gave it) and, for helpers, the installed triton or torch files (`/home/me/venv/lib/python3.11/site-packages/
    triton/language/standard.py`). Those become `<installed>/triton/language/standard.py`; any other absolute
    path keeps only its file name, as `<abs>/name.py`. The code is unchanged (`.loc` lines refer to files by number).
    """

    def portable(match: re.Match[str]) -> str:
        path = match.group(2)
        if path.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", path):
            path = installed_path(path) or "<abs>/" + re.split(r"[\\/]", path)[-1]
        return match.group(1) + path + match.group(3)

    return _FILE_LINE.sub(portable, ptx)


def normalize_ptx(text: str) -> str:
    """PTX reduced to what the two compilers decided (DESIGN #10).

    Dropped: comments, .file/.loc lines, debug sections, labels nothing jumps to, blank lines. Unified: whitespace,
    `[ %rd1 + 0 ]` addresses, the header (`.version` without its number, `.target sm_90a` -> `sm_90`), parameter
    names (`square_kernel_param_0` -> `param_0`). Registers (per kind: %r, %rd, %p, %f, ...) and labels are
    renumbered in order of first appearance, so equal code reads equal whichever compiler numbered it.
    """
    lines = [_tidy(line) for line in _strip_comments_and_debug(text)]
    used = Counter(label for line in lines for label in _LABEL.findall(line))
    lines = [line for line in lines if not (line.endswith(":") and _LABEL.fullmatch(line[:-1]) and used[line[:-1]] == 1)]
    numbers: dict[str, dict[str, int]] = {}

    def register(match: re.Match[str]) -> str:
        kind = numbers.setdefault(match.group(1), {})
        return f"%{match.group(1)}{kind.setdefault(match.group(2), len(kind) + 1)}"

    labels: dict[str, str] = {}
    out: list[str] = []
    depth = 0
    for line in lines:
        line = _REGISTER.sub(register, line)
        line = _LABEL.sub(lambda m: labels.setdefault(m.group(0), f"$L{len(labels) + 1}"), line)
        if line.startswith(("}", ")")):
            depth = max(depth - 1, 0)
        indent = max(depth - 1, 0) if line.endswith(":") else depth
        out.append("\t" * indent + line)
        if line.endswith(("{", "(")):
            depth += 1
    return "\n".join(out) + "\n"


def ptx_header(text: str) -> dict[str, str]:
    """.version, .target and .address_size of a PTX text (before normalising)."""
    header = {}
    for key in ("version", "target", "address_size"):
        match = re.search(rf"^\s*\.{key}\s+([^\s/]+)", text, re.M)
        header[key] = match.group(1).rstrip(",") if match else "?"
    return header


def entries(text: str) -> list[str]:
    """The kernel entry points a PTX text defines, in order."""
    return re.findall(r"\.entry\s+([\w$]+)", text)


def unified_diff(triton_norm: str, twin_norm: str, triton_name: str, twin_name: str) -> str:
    lines = difflib.unified_diff(triton_norm.splitlines(), twin_norm.splitlines(), triton_name, twin_name, lineterm="", n=3)
    text = "\n".join(lines)
    return text + "\n" if text else ""


def diff_counts(diff: str) -> tuple[int, int]:
    """(lines only in Triton's PTX, lines only in the twin's) of a unified diff."""
    removed = sum(1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
    added = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
    return removed, added


# ------------------------------------------------------------------------------------ instruction mix

# Rows of the instruction-mix table, in order; a row both sides have none of is left out of the table.
MIX_ROWS = (
    "instructions", "ld.global v1", "ld.global v2", "ld.global v4", "ld.global v8", "ld.global.nc", "st.global v1",
    "st.global v2", "st.global v4", "st.global v8", "ld.shared", "st.shared", "ld/st.local", "atom/red",
    "fma f32", "mul f32", "add/sub f32", "fma f16", "mul f16", "add/sub f16", "fma bf16", "mul bf16", "add/sub bf16",
    "fma f64", "mul f64", "add/sub f64", "min/max float", "div float", "int add/sub/mul/mad", "int div/rem",
    "cvt", "ex2", "lg2", "rsqrt", "sqrt", "rcp", "sin", "cos", "tanh", "shfl.sync", "redux.sync",
    "bar.sync / barrier", "fence / membar", "bra", "setp", "selp", "predicated (@p)", "call",
)  # fmt: skip

_FLOAT = {"f32": "f32", "f16": "f16", "f16x2": "f16", "bf16": "bf16", "bf16x2": "bf16", "f64": "f64"}
_SPECIAL = {"ex2", "lg2", "rsqrt", "sqrt", "rcp", "sin", "cos", "tanh"}


def instruction_kinds(opcode: str) -> list[str]:
    """The MIX_ROWS an opcode (`ld.global.nc.v4.b32`, `fma.rn.f32`, ...) counts in."""
    parts = opcode.split(".")
    op, mods = parts[0], set(parts[1:])
    width = next((w for w in ("v2", "v4", "v8") if w in mods), "v1")
    floats = [_FLOAT[m] for m in parts[1:] if m in _FLOAT]
    kinds: list[str] = []
    if op in ("ld", "st") and "global" in mods:
        kinds.append(f"{op}.global {width}")
        if op == "ld" and "nc" in mods:
            kinds.append("ld.global.nc")
    elif op in ("ld", "st") and "shared" in mods:
        kinds.append(f"{op}.shared")
    elif op in ("ld", "st") and "local" in mods:
        kinds.append("ld/st.local")
    elif op in ("atom", "red"):
        kinds.append("atom/red")
    elif op in ("fma", "mad", "mul", "add", "sub") and floats:
        group = {"fma": "fma", "mad": "fma", "mul": "mul"}.get(op, "add/sub")
        kinds.append(f"{group} {floats[0]}")
    elif op in ("mad", "mul", "add", "sub", "mul24", "mad24"):
        kinds.append("int add/sub/mul/mad")
    elif op in ("min", "max") and floats:
        kinds.append("min/max float")
    elif op == "div":
        kinds.append("div float" if floats else "int div/rem")
    elif op == "rem":
        kinds.append("int div/rem")
    elif op == "cvt":
        kinds.append("cvt")
    elif op in _SPECIAL:
        kinds.append(op)
    elif op == "shfl":
        kinds.append("shfl.sync")
    elif op == "redux":
        kinds.append("redux.sync")
    elif op in ("bar", "barrier"):
        kinds.append("bar.sync / barrier")
    elif op in ("fence", "membar"):
        kinds.append("fence / membar")
    elif op in ("bra", "brx", "setp", "selp", "call"):
        kinds.append("bra" if op == "brx" else op)
    return kinds


def instruction_mix(ptx: str) -> Counter[str]:
    """Static instruction counts of a PTX text by MIX_ROWS kind (an instruction inside a loop counts once)."""
    mix: Counter[str] = Counter()
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line.endswith(";") or line.startswith((".", "{", "}")):
            continue
        guard = re.match(r"@!?%\w+\s+", line)
        if guard:
            mix["predicated (@p)"] += 1
            line = line[guard.end() :]
        opcode = line.split(None, 1)[0].rstrip(";")
        mix["instructions"] += 1
        mix.update(instruction_kinds(opcode))
    return mix


# -------------------------------------------------------------------------------------- ptxas and SASS


@dataclass(frozen=True)
class Resources:
    """`ptxas -v` figures of one entry point."""

    registers: int
    spill_stores: int  # bytes
    spill_loads: int  # bytes
    stack: int  # bytes
    shared: int  # bytes of static shared memory

    def as_dict(self) -> dict[str, int]:
        return {"registers": self.registers, "spill_stores": self.spill_stores, "spill_loads": self.spill_loads, "stack": self.stack, "shared": self.shared}


def parse_ptxas_log(text: str) -> dict[str, Resources]:
    """entry -> Resources from `ptxas -v` output (its info lines, for every entry function it compiled)."""
    result: dict[str, Resources] = {}
    current: str | None = None
    frame: dict[str, int] = {}
    for line in text.splitlines():
        entry = re.search(r"Compiling entry function '([^']+)'", line)
        if entry:
            current, frame = entry.group(1), {}
            continue
        props = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if props and current:
            frame = {"stack": int(props.group(1)), "spill_stores": int(props.group(2)), "spill_loads": int(props.group(3))}
            continue
        used = re.search(r"Used (\d+) registers", line)
        if used and current:
            shared = re.search(r"(\d+) bytes smem", line)
            result[current] = Resources(
                registers=int(used.group(1)),
                spill_stores=frame.get("spill_stores", 0),
                spill_loads=frame.get("spill_loads", 0),
                stack=frame.get("stack", 0),
                shared=int(shared.group(1)) if shared else 0,
            )
            current = None
    return result


def sass_instruction_count(sass: str) -> int:
    """SASS instructions in nvdisasm/cuobjdump output, NOPs left out."""
    opcodes = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)
    return sum(1 for op in opcodes if not op.startswith("NOP"))
