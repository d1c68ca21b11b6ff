"""Every dtype spelling harvest meets, in one place, mapped to torch's dtype name ("float32", "bfloat16", "bool").

Inductor writes dtypes three ways: FX tensor metadata in comments ("f32[64, 8][8, 1]cuda:0"), Triton signatures
("*fp32", "i64"), and Triton code (`tl.float32`, `.to(tl.int1)`). Pure tables and lookups; no torch import.
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

# Triton signature types (a pointer's element type after the "*")
TRITON_DTYPES = {
    "fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64",
    "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "u32": "uint32", "u64": "uint64",
    "i1": "bool", "u1": "bool", "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2",
}  # fmt: skip

# Short words for names in renamed kernels (`as_f32 = x.to(tl.float32)`), keyed by torch name or tl name
SHORT_NAMES = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "u8", "int1": "bool", "uint32": "u32", "uint64": "u64",
}  # fmt: skip

# Bytes per element, by torch name
ITEMSIZE = {
    "float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
    "uint8": 1, "uint32": 4, "uint64": 8, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}  # fmt: skip


def triton_pointer_dtype(kind: str) -> str | None:
    """"*fp32" -> "float32"; None for a scalar or an element type torch has no dtype for."""
    return TRITON_DTYPES.get(kind[1:]) if kind.startswith("*") else None
