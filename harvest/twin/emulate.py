"""A CUDA twin run on the CPU: `<kernel>_twin.py --check --emulate` where there is no GPU.

The twin's .cu, the extraction's launch helpers and its launcher are compiled with g++ against harvest's CUDA
emulation (templates/emulated_cuda: a block's threads as threads, barriers for __syncthreads and warp shuffles, a
forked process per block of a cooperative launch) into a shared library; the launch it exports takes CPU tensors, and
the twin harness's check() compares what it wrote with the record and the eager reference as on a GPU. It needs g++
and the CUDA headers (vector_types.h, cuda_fp16.h: a CUDA toolkit's, or `pip install harvest[cuda]`'s), and gives
no timing. Processes and the compiler are this module's; what it compiles is a twin harvest wrote.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from harvest.errors import HarvestError
from harvest.resources import template_dir

ENTRY = "hv_emulated_launch"
CTYPES = {"torch::Tensor": ctypes.c_void_p, "int64_t": ctypes.c_int64, "double": ctypes.c_double, "bool": ctypes.c_bool}


class EmulationUnavailable(HarvestError):
    """No g++ or no CUDA headers on this machine: the message says which, and what to install."""


def emulation_dir() -> Path:
    return Path(str(template_dir())) / "emulated_cuda"


def cuda_include() -> str:
    """The CUDA headers' directory: CUDA_HOME's, nvcc's own (`nvcc --dryrun`), or the pip wheel's (harvest[cuda])."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "include" / "vector_types.h").is_file():
        return str(Path(home) / "include")
    nvcc = shutil.which("nvcc")
    if nvcc:
        done = subprocess.run([nvcc, "--dryrun", "-c", "-x", "cu", os.devnull], capture_output=True, text=True)
        found = re.search(r'INCLUDES="-I([^"]+)"', done.stdout + done.stderr)
        if found and (Path(found.group(1)) / "vector_types.h").is_file():
            return found.group(1)
    for site in sys.path:
        for include in sorted(glob.glob(os.path.join(site, "nvidia", "cu1[0-9]", "include"))):
            if os.path.isfile(os.path.join(include, "vector_types.h")):
                return include
    raise EmulationUnavailable("no CUDA headers for the emulation (vector_types.h): install a CUDA toolkit or "
                               "`pip install \"harvest[cuda]\"`")


def split_top_level(text: str) -> list[str]:
    """`a, f(b, c), d` -> ["a", "f(b, c)", "d"]."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()]


def emulated_source(cuda: str, launch_helpers: str, launcher: str, declaration: str) -> str:
    """One C++ file: the kernel, the launch helpers, the launcher with its `<<<grid, block, 0, stream>>>` made a call
    of the emulation, and an extern "C" entry with the launcher's parameters (a tensor as its data pointer)."""
    def launch_call(match: re.Match) -> str:
        grid, block = split_top_level(match.group(2))[:2]
        return f"hv_emu::launch(dim3({grid}), dim3({block}), false, {match.group(1)}, "
    launcher = re.sub(r"(\w+)<<<(.*?)>>>\(", launch_call, launcher, flags=re.S)
    found = re.fullmatch(r"void launch\((.*)\);", declaration.strip())
    if found is None:
        raise HarvestError(f"a twin declaration harvest did not write: {declaration!r}")
    entries, passed = [], []
    for param in split_top_level(found.group(1)) if found.group(1) else []:
        ctype, name = param.rsplit(" ", 1)
        if ctype not in CTYPES:
            raise HarvestError(f"a launcher parameter of a type the emulation does not pass: {param!r}")
        entries.append(f"{'void*' if ctype == 'torch::Tensor' else ctype} {name}")
        passed.append(f"torch::Tensor{{{name}}}" if ctype == "torch::Tensor" else name)
    entry = (f'\nstatic std::string hv_emulated_failure;\n'
             f'extern "C" int {ENTRY}({", ".join(entries)}) {{\n'
             f'  try {{ launch({", ".join(passed)}); return 0; }}\n'
             f'  catch (const std::exception& error) {{ hv_emulated_failure = error.what(); return 1; }}\n}}\n'
             'extern "C" const char* hv_emulated_error() { return hv_emulated_failure.c_str(); }\n'
             'extern "C" int hv_emulated_cooperative_launches() { return hv_emu::cooperative_launches; }\n')
    return cuda + launch_helpers + launcher + entry


def build(source: str, build_dir: Path) -> Path:
    """The shared library of an emulated twin, compiled by g++ unless one of the same source and emulation is there."""
    compiler = shutil.which("g++")
    if compiler is None:
        raise EmulationUnavailable("no g++ for the emulation: install a C++ compiler (Debian/Ubuntu: `apt install g++`)")
    build_dir.mkdir(parents=True, exist_ok=True)
    here = emulation_dir()
    headers = sorted(p for p in here.rglob("*.h"))  # (a harvest with another emulation builds its own library)
    digest = hashlib.sha256(source.encode() + b"".join(p.read_bytes() for p in headers)).hexdigest()[:16]
    library = build_dir / f"emulated_{digest}.so"
    if not library.exists():
        path = build_dir / f"emulated_{digest}.cpp"
        path.write_text(source, encoding="utf-8")
        command = [compiler, "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-include", str(here / "emulated.h"),
                   f"-I{here / 'include'}", f"-I{cuda_include()}", "-o", str(library) + ".part", str(path)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise HarvestError(f"g++ could not build the emulated twin ({path}):\n{done.stderr[-6000:]}")
        os.replace(str(library) + ".part", library)
    return library


def emulated_launch(cuda: str, launch_helpers: str, launcher: str, declaration: str, build_dir: Path) -> Callable:
    """The twin's launch on CPU tensors (moved to shared memory first, where a cooperative launch's block processes
    write): call it with the launcher's arguments; launch.cooperative() counts its cooperative launches so far."""
    source = emulated_source(cuda, launch_helpers, launcher, declaration)
    library = ctypes.CDLL(str(build(source, build_dir)))
    entry = re.search(rf'extern "C" int {ENTRY}\((.*?)\) \{{', source).group(1)
    types = [CTYPES["torch::Tensor" if p.startswith("void*") else p.rsplit(" ", 1)[0]] for p in split_top_level(entry)] if entry else []
    function = getattr(library, ENTRY)
    function.argtypes = types
    function.restype = ctypes.c_int
    library.hv_emulated_error.restype = ctypes.c_char_p

    def launch(*args):
        values = []
        for value, ctype in zip(args, types):
            if ctype is ctypes.c_void_p:
                if value.device.type != "cpu":
                    raise HarvestError(f"the emulation runs on CPU tensors, not {value.device}")
                value.share_memory_()
                values.append(value.data_ptr())
            else:
                values.append(value)
        if function(*values) != 0:
            raise HarvestError(f"the emulated launch failed: {library.hv_emulated_error().decode()}")

    launch.cooperative = library.hv_emulated_cooperative_launches
    return launch
