#!/usr/bin/env python3
"""Write a GGUF file with random weights at a real model's shapes, in one of llama.cpp's quantization mixes.

    mix_model.py --mix Q4_K_M|Q5_K_M|Q4_0|Q8_0|Q4_1 --shape qwen2.5-0.5b|smollm2-135m --out FILE
                 [--model SMOLLM2_GGUF] [--download] [--seed N]

The file is for loading and speed measurement, not for answers: every tensor has the type, the
shape and the byte size that `llama-quantize` gives that model in that mix, but its blocks are
random (random codes under sane f16 scales, about N(0, 0.02) when dequantized); norms are 1.0,
biases N(0, 0.02) in F32. The tokenizer is SmolLM2's byte-level BPE vocabulary and merges (read
from the SmolLM2 GGUF the project installs), laid out to the model's vocabulary size.

Per-tensor types: llama.cpp's `src/llama-quant.cpp` (`llama_tensor_get_type_impl` and
`tensor_type_fallback`), restricted to these four mixes, a dense (non-MoE) model and no imatrix;
see `tensor_type` below and the README's "mix_model.py" section.
"""

import argparse
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from kquants import _pack_scales_mins  # noqa: E402

import gguf  # noqa: E402
from gguf import GGMLQuantizationType as T  # noqa: E402

WEIGHT_STD = 0.02
SEED = 20250601

# ---------------------------------------------------------------------------------------------
# Shapes


@dataclass(frozen=True)
class Shape:
    name: str
    arch: str
    general_name: str
    basename: str
    size_label: str
    license: str
    hidden: int
    ffn: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    context: int
    rope_base: float
    rms_eps: float
    qkv_bias: bool
    tied: bool
    pre: str


SHAPES = {
    "qwen2.5-0.5b": Shape(
        name="qwen2.5-0.5b", arch="qwen2", general_name="Qwen2.5 0.5B Instruct (random weights)",
        basename="Qwen2.5", size_label="0.5B", license="apache-2.0",
        hidden=896, ffn=4864, layers=24, heads=14, kv_heads=2, vocab=151936, context=32768,
        rope_base=1000000.0, rms_eps=1e-6, qkv_bias=True, tied=True, pre="qwen2"),
    "smollm2-135m": Shape(
        name="smollm2-135m", arch="llama", general_name="SmolLM2 135M Instruct (random weights)",
        basename="SmolLM2", size_label="135M", license="apache-2.0",
        hidden=576, ffn=1536, layers=30, heads=9, kv_heads=3, vocab=49152, context=8192,
        rope_base=100000.0, rms_eps=1e-5, qkv_bias=False, tied=True, pre="smollm"),
}

# ---------------------------------------------------------------------------------------------
# llama.cpp's per-tensor type choice for the four mixes

MIXES = {
    # mix: (default tensor type, general.file_type = llama_ftype)
    "Q4_0": (T.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0),
    "Q4_1": (T.Q4_1, gguf.LlamaFileType.MOSTLY_Q4_1),  # the SmolLM2 file's mix, for --verify-rules
    "Q8_0": (T.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
    "Q4_K_M": (T.Q4_K, gguf.LlamaFileType.MOSTLY_Q4_K_M),
    "Q5_K_M": (T.Q5_K, gguf.LlamaFileType.MOSTLY_Q5_K_M),
}

# tensor_type_fallback: a row length that is not a multiple of the type's block size (256 for
# the K-quants) gets a 32-block type instead; if even 32 does not divide it, F16.
FALLBACK = {T.Q4_K: T.Q5_0, T.Q5_K: T.Q5_1, T.Q6_K: T.Q8_0}


def block_size(qtype):
    return gguf.GGML_QUANT_SIZES[qtype][0]


def use_more_bits(i_layer, n_layers):
    """llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between."""
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


def tensor_type(mix, name, row_length, layer, n_layers, tied):
    """The type llama-quantize gives a 2-D `.weight` tensor (not a norm) in this mix.

    `row_length` is ne[0] (the input width); `layer` is the block index (llama.cpp counts attn_v
    and ffn_down tensors in layer order, so its counters equal the block index in a dense model).
    """
    default, _ = MIXES[mix]
    t = default
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        # The output head (or the token embeddings a tied model uses as its head): Q8_0 when the
        # default type's block does not divide the row, else Q6_K unless the default is Q8_0.
        if row_length % block_size(default) != 0:
            t = T.Q8_0
        elif t != T.Q8_0:
            t = T.Q6_K
    elif name == "token_embd.weight":
        pass  # untied embeddings keep the default type (then the fallback below)
    elif name.endswith("attn_v.weight"):
        if mix in ("Q4_K_M", "Q5_K_M") and use_more_bits(layer, n_layers):
            t = T.Q6_K
    elif name.endswith("ffn_down.weight"):
        if mix in ("Q4_K_M", "Q5_K_M") and use_more_bits(layer, n_layers):
            t = T.Q6_K
    # attn_q, attn_k, attn_output, ffn_gate, ffn_up: the default type in these four mixes.
    if row_length % block_size(t) != 0:
        t = FALLBACK[t]
        if row_length % block_size(t) != 0:
            t = T.F16
    return t


def model_tensors(shape, mix):
    """[(name, rows, cols, type)] in llama-quantize's order (non-block tensors first, then each
    block's tensors by name; names sorted as strings). cols is ne[0], rows ne[1] (1 for vectors)."""
    h, kv = shape.hidden, shape.kv_heads * (shape.hidden // shape.heads)
    top = [("output_norm.weight", 1, h), ("token_embd.weight", shape.vocab, h)]
    if not shape.tied:
        top.append(("output.weight", shape.vocab, h))
    out = []
    for name, rows, cols in sorted(top):
        out.append((name, rows, cols, None))
    for i in range(shape.layers):
        block = [
            ("attn_norm.weight", 1, h), ("ffn_norm.weight", 1, h),
            ("attn_q.weight", h, h), ("attn_k.weight", kv, h), ("attn_v.weight", kv, h),
            ("attn_output.weight", h, h),
            ("ffn_gate.weight", shape.ffn, h), ("ffn_up.weight", shape.ffn, h),
            ("ffn_down.weight", h, shape.ffn),
        ]
        if shape.qkv_bias:
            block += [("attn_q.bias", 1, h), ("attn_k.bias", 1, kv), ("attn_v.bias", 1, kv)]
        for name, rows, cols in sorted(block):
            out.append((f"blk.{i}.{name}", rows, cols, i))
    result = []
    for name, rows, cols, layer in out:
        if rows == 1 or not name.endswith(".weight") or name.endswith("_norm.weight"):
            qtype = T.F32
        else:
            qtype = tensor_type(mix, name, cols, -1 if layer is None else layer, shape.layers, shape.tied)
        result.append((name, rows, cols, qtype))
    return result


# ---------------------------------------------------------------------------------------------
# Random blocks

# Standard deviation of the integer factor each layout multiplies its scale by, for uniform codes.
_UNIFORM_STD = {16: np.sqrt((16 ** 2 - 1) / 12), 32: np.sqrt((32 ** 2 - 1) / 12),
                64: np.sqrt((64 ** 2 - 1) / 12), 255: np.sqrt((255 ** 2 - 1) / 12)}


def _f16_bytes(values):
    return np.asarray(values, dtype=np.float32).astype("<f2").view(np.uint8).reshape(-1, 2)


def _jittered(rng, n, base):
    """Per-block scales around `base` (x0.75..1.25), so blocks differ as real ones do."""
    return base * rng.uniform(0.75, 1.25, size=n)


def random_blocks(qtype, n_blocks, rng, std=WEIGHT_STD):
    """(n_blocks, type_size) uint8: valid blocks whose dequantized weights have about this std,
    mean about 0. Codes are uniform random; scales are chosen so that d * code has that std."""
    size = gguf.GGML_QUANT_SIZES[qtype][1]
    out = np.frombuffer(rng.bytes(n_blocks * size), dtype=np.uint8).reshape(n_blocks, size).copy()
    if qtype == T.Q8_0:  # d f16, qs int8[32]
        codes = out[:, 2:].view(np.int8)
        codes[codes == -128] = -127  # ggml's quantizer writes -127..127
        out[:, 0:2] = _f16_bytes(_jittered(rng, n_blocks, std / _UNIFORM_STD[255]))
    elif qtype == T.Q4_0:  # d, qs[16]: w = d * (q - 8)
        out[:, 0:2] = _f16_bytes(_jittered(rng, n_blocks, std / _UNIFORM_STD[16]))
    elif qtype == T.Q5_0:  # d, qh[4], qs[16]: w = d * (q - 16)
        out[:, 0:2] = _f16_bytes(_jittered(rng, n_blocks, std / _UNIFORM_STD[32]))
    elif qtype in (T.Q4_1, T.Q5_1):  # d, m, ...: w = d * q + m
        levels = 16 if qtype == T.Q4_1 else 32
        d = _jittered(rng, n_blocks, std / _UNIFORM_STD[levels])
        d16 = d.astype(np.float16).astype(np.float32)
        out[:, 0:2] = _f16_bytes(d16)
        out[:, 2:4] = _f16_bytes(-d16 * (levels - 1) / 2)
    elif qtype in (T.Q4_K, T.Q5_K):  # d, dmin, scales[12], (qh[32],) qs[128]
        levels = 16 if qtype == T.Q4_K else 32
        # Eight sub-blocks: 6-bit scale sc in 32..63 and min m = sc, dmin = d * (levels - 1) / 2,
        # so weight = d * sc * (q - (levels - 1) / 2): centred.
        sc = rng.integers(32, 64, size=(n_blocks, 8))
        d = _jittered(rng, n_blocks, std / (_UNIFORM_STD[levels] * 47.5))
        d16 = d.astype(np.float16).astype(np.float32)
        out[:, 0:2] = _f16_bytes(d16)
        out[:, 2:4] = _f16_bytes(d16 * (levels - 1) / 2)
        out[:, 4:16] = _pack_scales_mins(sc, sc)
    elif qtype == T.Q6_K:  # ql[128], qh[64], scales int8[16], d: w = d * sc * (q - 32)
        sc = rng.integers(32, 128, size=(n_blocks, 16)).astype(np.int8)
        out[:, 192:208] = sc.view(np.uint8)
        out[:, 208:210] = _f16_bytes(_jittered(rng, n_blocks, std / (_UNIFORM_STD[64] * 79.5)))
    else:
        raise ValueError(f"no random blocks for {qtype.name}")
    return out


def tensor_data(name, rows, cols, qtype, seed):
    """The tensor's bytes (quantized) or values (F32/F16), from a seed of its own."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if qtype in (T.F32, T.F16):
        if name.endswith("_norm.weight"):
            values = np.ones(cols, dtype=np.float32)
        else:
            values = rng.normal(0.0, WEIGHT_STD, size=(rows, cols) if rows > 1 else cols).astype(np.float32)
        return values.astype(np.float16) if qtype == T.F16 else values
    blck, size = gguf.GGML_QUANT_SIZES[qtype]
    return random_blocks(qtype, rows * cols // blck, rng).reshape(rows, cols // blck * size)


def tensor_nbytes(rows, cols, qtype):
    blck, size = gguf.GGML_QUANT_SIZES[qtype]
    return rows * (cols // blck) * size


# ---------------------------------------------------------------------------------------------
# Tokenizer

QWEN2_SPECIALS = [  # id 151643 on, (text, token type); <tool_call> tags are plain added tokens
    ("<|endoftext|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 3), ("<|object_ref_start|>", 3),
    ("<|object_ref_end|>", 3), ("<|box_start|>", 3), ("<|box_end|>", 3), ("<|quad_start|>", 3),
    ("<|quad_end|>", 3), ("<|vision_start|>", 3), ("<|vision_end|>", 3), ("<|vision_pad|>", 3),
    ("<|image_pad|>", 3), ("<|video_pad|>", 3), ("<tool_call>", 4), ("</tool_call>", 4),
    ("<|fim_prefix|>", 3), ("<|fim_middle|>", 3), ("<|fim_suffix|>", 3), ("<|fim_pad|>", 3),
    ("<|repo_name|>", 3), ("<|file_sep|>", 3),
]
QWEN2_FIRST_SPECIAL = 151643


def qwen_chat_template():
    import json
    sources = json.loads((common.HERE / "chat-template-sources.json").read_text())
    for t in sources["templates"]:
        if t["name"] == "qwen2.5-instruct":
            return t["source"]
    raise SystemExit("chat-template-sources.json has no qwen2.5-instruct template")


def tokenizer_for(shape, smol_path):
    """(kv dict for the writer). SmolLM2's vocabulary as it is for smollm2-135m; for qwen2.5-0.5b
    SmolLM2's normal tokens (ids 17..) at ids 0.., `[PAD<id>]` UNUSED fillers up to 151643, Qwen2.5's
    22 added tokens at their real ids 151643..151664, fillers to 151936 (as llama.cpp's converter
    pads Qwen2.5's embedding rows)."""
    reader = gguf.GGUFReader(str(smol_path))
    tokens = list(reader.fields["tokenizer.ggml.tokens"].contents())
    types = [int(t) for t in reader.fields["tokenizer.ggml.token_type"].contents()]
    merges = list(reader.fields["tokenizer.ggml.merges"].contents())
    smol_template = reader.fields["tokenizer.chat_template"].contents()
    if shape.name == "smollm2-135m":
        assert len(tokens) == shape.vocab
        return dict(tokens=tokens, types=types, merges=merges, bos=1, eos=2, pad=2, unk=0,
                    template=smol_template)
    control = common.CONTROL_TOKEN_COUNT
    assert all(t == 3 for t in types[:control]) and all(t == 1 for t in types[control:])
    regular = tokens[control:]
    assert len(regular) < QWEN2_FIRST_SPECIAL
    out_tokens = regular + [f"[PAD{i}]" for i in range(len(regular), QWEN2_FIRST_SPECIAL)]
    out_types = [1] * len(regular) + [5] * (QWEN2_FIRST_SPECIAL - len(regular))
    for text, ttype in QWEN2_SPECIALS:
        out_tokens.append(text)
        out_types.append(ttype)
    out_tokens += [f"[PAD{i}]" for i in range(len(out_tokens), shape.vocab)]
    out_types += [5] * (shape.vocab - len(out_types))
    assert len(out_tokens) == shape.vocab and len(set(out_tokens)) == shape.vocab
    return dict(tokens=out_tokens, types=out_types, merges=merges, bos=151643, eos=151645, pad=151643,
                unk=None, template=qwen_chat_template())


# ---------------------------------------------------------------------------------------------
# Writing


def write(shape, mix, out_path, smol_path, seed):
    tensors = model_tensors(shape, mix)
    tok = tokenizer_for(shape, smol_path)
    arch = shape.arch
    w = gguf.GGUFWriter(str(out_path), arch)
    w.add_type("model")
    w.add_name(shape.general_name)
    w.add_finetune("Instruct")
    w.add_basename(shape.basename)
    w.add_size_label(shape.size_label)
    w.add_license(shape.license)
    w.add_description(f"random weights at the shapes of {shape.name}, {mix} mix, written by "
                      f"Fixtures/generation/mix_model.py (seed {seed}); for loading and speed only")
    w.add_block_count(shape.layers)
    w.add_context_length(shape.context)
    w.add_embedding_length(shape.hidden)
    w.add_feed_forward_length(shape.ffn)
    w.add_head_count(shape.heads)
    w.add_head_count_kv(shape.kv_heads)
    w.add_rope_freq_base(shape.rope_base)
    w.add_layer_norm_rms_eps(shape.rms_eps)
    if arch == "llama":
        w.add_vocab_size(shape.vocab)
        w.add_rope_dimension_count(shape.hidden // shape.heads)
    w.add_file_type(int(MIXES[mix][1]))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(shape.pre)
    w.add_token_list(tok["tokens"])
    w.add_token_types(tok["types"])
    w.add_token_merges(tok["merges"])
    w.add_bos_token_id(tok["bos"])
    w.add_eos_token_id(tok["eos"])
    if tok["unk"] is not None:
        w.add_unk_token_id(tok["unk"])
    w.add_pad_token_id(tok["pad"])
    w.add_add_bos_token(False)
    w.add_chat_template(tok["template"])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    for name, rows, cols, qtype in tensors:
        shape_np = (rows, cols) if rows > 1 else (cols,)
        w.add_tensor_info(name, shape_np, np.dtype(np.float32), tensor_nbytes(rows, cols, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, rows, cols, qtype in tensors:
        w.write_tensor_data(tensor_data(name, rows, cols, qtype, seed))
    w.close()
    return tensors


def print_table(tensors, shape, mix, file_bytes, seconds):
    print(f"{shape.name} {mix}: {len(tensors)} tensors")
    print(f"{'tensor':32} {'ne0 x ne1':>16} {'type':>5} {'bytes':>12}")
    totals = {}
    for name, rows, cols, qtype in tensors:
        n = tensor_nbytes(rows, cols, qtype)
        count, nbytes = totals.get(qtype.name, (0, 0))
        totals[qtype.name] = (count + 1, nbytes + n)
        print(f"{name:32} {f'{cols} x {rows}':>16} {qtype.name:>5} {n:>12,}")
    print(f"\n{'type':>5} {'tensors':>8} {'bytes':>14}")
    data = 0
    for name, (count, nbytes) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:>5} {count:>8} {nbytes:>14,}")
        data += nbytes
    print(f"{'all':>5} {len(tensors):>8} {data:>14,}")
    if not file_bytes:
        return
    print(f"file {file_bytes:,} bytes (tensor data {data:,}, header/metadata/padding {file_bytes - data:,}); "
          f"written in {seconds:.1f} s")


FILE_TYPE_MIX = {int(ftype): mix for mix, (_, ftype) in MIXES.items()}


def verify_rules(path):
    """Compare tensor_type's choice with the tensor types of a real llama-quantize output."""
    reader = gguf.GGUFReader(str(path))
    ftype = int(reader.fields["general.file_type"].contents())
    if ftype not in FILE_TYPE_MIX:
        sys.exit(f"{path}: general.file_type {ftype} is none of {list(MIXES)}")
    mix = FILE_TYPE_MIX[ftype]
    arch = reader.fields["general.architecture"].contents()
    n_layers = int(reader.fields[f"{arch}.block_count"].contents())
    names = {t.name for t in reader.tensors}
    tied = "output.weight" not in names
    wrong = 0
    for t in reader.tensors:
        cols = int(t.shape[0])
        if len(t.shape) < 2 or not t.name.endswith(".weight") or t.name.endswith("_norm.weight"):
            continue
        layer = int(t.name.split(".")[1]) if t.name.startswith("blk.") else -1
        expected = tensor_type(mix, t.name, cols, layer, n_layers, tied)
        if expected != t.tensor_type:
            wrong += 1
            print(f"{t.name}: file {t.tensor_type.name}, rules {expected.name}")
    print(f"{path}: {mix}, {arch}, {n_layers} layers, tied {tied}: "
          f"{'all quantized tensors as the rules say' if not wrong else f'{wrong} tensors differ'}")
    return wrong


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mix", choices=list(MIXES))
    parser.add_argument("--shape", choices=list(SHAPES))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--types-only", action="store_true", help="print the type table, write nothing")
    common.add_model_arguments(parser)
    parser.add_argument("--verify-rules", type=Path, metavar="GGUF",
                        help="check the type rules against a real llama-quantize file of one of the mixes")
    args = parser.parse_args()
    if args.verify_rules:
        sys.exit(1 if verify_rules(args.verify_rules) else 0)
    if not args.mix or not args.shape or (not args.out and not args.types_only):
        parser.error("--mix, --shape and --out are required")
    shape = SHAPES[args.shape]
    if args.types_only:
        print_table(model_tensors(shape, args.mix), shape, args.mix, 0, 0.0)
        return
    smol = common.resolve_model(args)
    start = time.monotonic()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tensors = write(shape, args.mix, args.out, smol, args.seed)
    print_table(tensors, shape, args.mix, args.out.stat().st_size, time.monotonic() - start)


if __name__ == "__main__":
    main()
