"""Every dtype spelling harvest meets, in one place, mapped to torch's dtype name ("float32", "bfloat16", "bool").

Inductor writes dtypes three ways: FX tensor metadata in comments ("f32[64, 8][8, 1]cuda:0"), Triton signatures
("*fp32", "i64"), and Triton code (`tl.float32`, `.to(tl.int1)`); a kernel module writes `torch.float32`. Pure
tables and lookups; no torch import.
"""

from __future__ import annotations

# FX metadata, as `# Graph fragment:` comments print it
FX_DTYPES = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "b8": "bool",
    "c32": "complex32", "c64": "complex64", "c128": "complex128",
    "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2", "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2fnuz": "float8_e5m2fnuz", "f8e8m0fnu": "float8_e8m0fnu",
}  # fmt: skip

# Every dtype a Triton pointer can point to: torch name, Triton's signature name, the `tl.` name, bytes per element.
# (Triton's fp8 names: e4m3fn is fp8e4nv, e5m2 fp8e5, and the fnuz variants fp8e4b8 / fp8e5b16.)
POINTER_DTYPES = (
    ("bool", "i1", "int1", 1),
    ("int8", "i8", "int8", 1), ("int16", "i16", "int16", 2), ("int32", "i32", "int32", 4), ("int64", "i64", "int64", 8),
    ("uint8", "u8", "uint8", 1), ("uint16", "u16", "uint16", 2), ("uint32", "u32", "uint32", 4),
    ("uint64", "u64", "uint64", 8),
    ("float16", "fp16", "float16", 2), ("bfloat16", "bf16", "bfloat16", 2), ("float32", "fp32", "float32", 4),
    ("float64", "fp64", "float64", 8),
    ("float8_e4m3fn", "fp8e4nv", "float8e4nv", 1), ("float8_e5m2", "fp8e5", "float8e5", 1),
    ("float8_e4m3fnuz", "fp8e4b8", "float8e4b8", 1), ("float8_e5m2fnuz", "fp8e5b16", "float8e5b16", 1),
)  # fmt: skip

# Triton signature types (a pointer's element type after the "*"); Triton also writes a bool as u1
TRITON_DTYPES = {triton: torch for torch, triton, _, _ in POINTER_DTYPES} | {"u1": "bool"}

# torch name -> the pointer element type Triton's launcher gives a tensor of that dtype
TRITON_POINTEE = {torch: triton for torch, triton, _, _ in POINTER_DTYPES}

# Triton code's dtypes: `tl.float32` -> "float32"
TL_DTYPES = {tl: torch for torch, _, tl, _ in POINTER_DTYPES}

# torch's other names for the same dtypes (`torch.half`, `torch.long`, ...)
TORCH_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "short": "int16", "int": "int32",
                 "long": "int64"}  # fmt: skip

# Short words for names in renamed kernels (`as_f32 = x.to(tl.float32)`), keyed by torch name or tl name
SHORT_NAMES = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "u8", "int1": "bool", "uint32": "u32", "uint64": "u64",
}  # fmt: skip

# Bytes per element, by torch name
ITEMSIZE = {torch: size for torch, _, _, size in POINTER_DTYPES} | {"complex32": 4, "complex64": 8, "complex128": 16,
                                                                    "float8_e8m0fnu": 1}  # fmt: skip


def triton_pointer_dtype(kind: str) -> str | None:
    """"*fp32" -> "float32"; None for a scalar or an element type torch has no dtype for."""
    return TRITON_DTYPES.get(kind[1:]) if kind.startswith("*") else None


def torch_dtype_name(spelling: str) -> str | None:
    """"torch.float32", "float32" or "torch.half" -> the torch name ("float32", "float16"); None when no Triton
    pointer can point to it (complex, unknown)."""
    name = spelling.removeprefix("torch.")
    name = TORCH_ALIASES.get(name, name)
    return name if name in TRITON_POINTEE else None
