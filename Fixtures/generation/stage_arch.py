"""Tiny GGUF models of five more architectures, each with mixed quantization types, and their references.

* tiny-qwen3.gguf: architecture qwen3 (per-head Q/K RMSNorm, no biases, key_length 48 != hidden/heads 32),
  tied output.
* tiny-gemma2.gguf: architecture gemma2 (embedding x sqrt(hidden), (1 + w) norms stored with the 1 added,
  post-attention/post-FFN norms, GELU-tanh gated FFN, attention and final logit soft-capping, sliding window 8
  on even layers), tied output.
* tiny-gemma3.gguf: architecture gemma3 (as gemma2 plus per-head Q/K norms, sliding layers 5 of every 6 with
  their own rope base, no soft-capping), tied output.
* tiny-phi3.gguf: architecture phi3 (fused attn_qkv and fused gate+up in ffn_up, NEOX rope over the first 24 of
  32 head dims, sliding_window 2047 in the metadata), separate output.
* tiny-llama3-rope.gguf: architecture llama with Llama 3.x rope scaling (rope_freqs.weight), permuted Q/K,
  tied output.

The tensors are laid out as llama.cpp's convert_hf_to_gguf.py (conversion/*.py) writes them for the HF
checkpoint the script also builds; the quantized blocks come from gguf.quants (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1)
and kquants.py (Q4_K, Q5_K, Q6_K). The reference model is a transformers model built directly from an HF config
and the dequantized weights (what any reader of the file sees); transformers' own GGUF loader is run as a
cross-check with that config passed in (it does not read several of these keys itself; see README.md).
Same JSON layout as stage_tiny.py's tiny-*.json, plus what each architecture needs in `config`.
"""

import math
import shutil
import tempfile

import numpy as np

from common import (CORPUS, PRE_TOKENIZER_REGEXES, TORCH_THREADS, build_bpe_tokenizer, f32, log, sha256_file,
                    versions, write_cases)
from stage_tiny import (CHATML_TEMPLATE, CONTROL_TOKENS, GREEDY_STEPS, NLL_LENGTH, SEQUENCE_LENGTHS,
                        SEQUENCE_TEXTS, build_vocab, permute_qk, references, tokenizer_checks, unpermute_qk)

MAX_FILE_BYTES = 1_500_000

# ---------------------------------------------------------------------------------------------
# The models

MODELS = {
    "qwen3": {
        "name": "tiny-qwen3", "arch": "qwen3", "pre": "qwen2", "seed": 20240611,
        "hidden": 128, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 48, "ffn": 256, "vocab": 512,
        "context": 256, "rope_base": 1000000.0, "rms_eps": 1e-6, "tied_output": True, "file_type": 7,
        "types": [
            {"q": "Q4_0", "k": "Q5_0", "v": "Q8_0", "o": "F16", "gate": "Q4_1", "up": "Q5_1", "down": "Q4_K"},
            {"q": "Q8_0", "k": "F16", "v": "Q5_1", "o": "Q4_0", "gate": "Q5_0", "up": "Q8_0", "down": "Q6_K"},
        ],
        "embed_type": "Q8_0",
    },
    "gemma2": {
        "name": "tiny-gemma2", "arch": "gemma2", "pre": "llama-bpe", "seed": 20240612,
        "hidden": 128, "layers": 4, "heads": 4, "kv_heads": 2, "head_dim": 48, "ffn": 256, "vocab": 512,
        "context": 256, "rope_base": 10000.0, "rms_eps": 1e-6, "tied_output": True, "file_type": 7,
        "sliding_window": 8, "attn_logit_softcapping": 8.0, "final_logit_softcapping": 10.0,
        "query_pre_attn_scalar": 48,
        "types": [
            {"q": "Q8_0", "k": "Q4_0", "v": "Q5_0", "o": "Q4_1", "gate": "Q5_1", "up": "F16", "down": "Q5_K"},
            {"q": "Q5_0", "k": "Q8_0", "v": "F16", "o": "Q8_0", "gate": "Q4_0", "up": "Q5_1", "down": "Q6_K"},
            {"q": "F16", "k": "Q5_1", "v": "Q4_1", "o": "Q5_0", "gate": "Q8_0", "up": "Q4_0", "down": "Q4_K"},
            {"q": "Q4_1", "k": "Q8_0", "v": "Q8_0", "o": "F16", "gate": "Q5_0", "up": "Q8_0", "down": "Q8_0"},
        ],
        "embed_type": "Q8_0",
    },
    "gemma3": {
        "name": "tiny-gemma3", "arch": "gemma3", "pre": "llama-bpe", "seed": 20240613,
        "hidden": 128, "layers": 7, "heads": 4, "kv_heads": 1, "head_dim": 48, "ffn": 256, "vocab": 512,
        "context": 256, "rope_base": 1000000.0, "rope_base_swa": 10000.0, "rms_eps": 1e-6,
        "tied_output": True, "file_type": 7, "sliding_window": 8, "sliding_window_pattern": 6,
        "query_pre_attn_scalar": 48,
        "types": [
            {"q": "Q8_0", "k": "Q4_0", "v": "Q5_0", "o": "Q4_1", "gate": "Q5_1", "up": "Q4_0", "down": "Q5_K"},
            {"q": "Q5_0", "k": "Q8_0", "v": "Q4_1", "o": "Q8_0", "gate": "Q4_0", "up": "Q5_1", "down": "Q6_K"},
            {"q": "Q4_0", "k": "Q5_1", "v": "Q8_0", "o": "Q5_0", "gate": "Q8_0", "up": "Q4_0", "down": "Q4_K"},
            {"q": "Q4_1", "k": "Q8_0", "v": "Q8_0", "o": "Q4_0", "gate": "Q5_0", "up": "Q4_1", "down": "Q8_0"},
            {"q": "Q5_1", "k": "Q4_0", "v": "Q5_0", "o": "Q8_0", "gate": "Q4_1", "up": "Q5_0", "down": "Q5_K"},
            {"q": "Q8_0", "k": "Q8_0", "v": "Q4_0", "o": "Q5_1", "gate": "Q4_0", "up": "Q8_0", "down": "Q6_K"},
            {"q": "Q4_0", "k": "Q5_0", "v": "Q5_1", "o": "Q4_0", "gate": "Q5_1", "up": "Q4_1", "down": "Q4_K"},
        ],
        "embed_type": "Q8_0",
    },
    "phi3": {
        "name": "tiny-phi3", "arch": "phi3", "pre": "llama-bpe", "seed": 20240614,
        "hidden": 128, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 32, "ffn": 256, "vocab": 512,
        "context": 4096, "original_context": 4096, "rope_base": 10000.0, "rms_eps": 1e-5, "partial_rotary_factor": 0.75,
        "sliding_window": 2047, "tied_output": False, "file_type": 7,
        "types": [
            {"qkv": "Q8_0", "o": "Q4_0", "up": "Q5_0", "down": "Q4_K"},
            {"qkv": "Q5_1", "o": "F16", "up": "Q4_1", "down": "Q6_K"},
        ],
        "embed_type": "Q4_0", "output_type": "Q8_0",
    },
    "llama3": {
        "name": "tiny-llama3-rope", "arch": "llama", "pre": "llama-bpe", "seed": 20240615,
        "hidden": 256, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 64, "ffn": 512, "vocab": 512,
        "context": 256, "rope_base": 500000.0, "rms_eps": 1e-5, "tied_output": True, "file_type": 15,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 64},
        "types": [
            {"q": "Q4_K", "k": "Q8_0", "v": "Q5_0", "o": "Q6_K", "gate": "Q4_0", "up": "Q5_K", "down": "Q5_1"},
            {"q": "Q5_1", "k": "Q4_K", "v": "Q6_K", "o": "Q4_0", "gate": "Q5_K", "up": "Q8_0", "down": "Q4_K"},
        ],
        "embed_type": "Q6_K",
    },
}

ORDER = ["qwen3", "gemma2", "gemma3", "phi3", "llama3"]

# ---------------------------------------------------------------------------------------------
# Quantization


def store(name, arr, qtype):
    """(gguf tensor entry, dequantized float32 array as every reader sees it)."""
    import gguf
    from gguf import quants
    import kquants
    T = gguf.GGMLQuantizationType
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if qtype == "F32":
        return (name, arr, None), arr
    if qtype == "F16":
        h = arr.astype(np.float16)
        return (name, h, None), h.astype(np.float32)
    if qtype in ("Q4_K", "Q5_K", "Q6_K"):
        blocks = kquants.quantize(arr, qtype)
    else:
        blocks = quants.quantize(arr, getattr(T, qtype))
    back = quants.dequantize(blocks, getattr(T, qtype)).astype(np.float32).reshape(arr.shape)
    return (name, blocks, getattr(T, qtype)), back


# ---------------------------------------------------------------------------------------------
# Random weights in the HF layout


def random_weights(rng, m):
    h, f, v, hd = m["hidden"], m["ffn"], m["vocab"], m["head_dim"]
    q_out, kv_out = m["heads"] * hd, m["kv_heads"] * hd
    gemma = m["arch"] in ("gemma2", "gemma3")

    def lin(rows, cols, gain=1.0):
        return (rng.standard_normal((rows, cols)) * gain / np.sqrt(cols)).astype(np.float32)

    def norm(n):
        # the multiplier a reader applies; for gemma the HF weight is this minus 1 (Gemma's RMSNorm uses 1 + w)
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    embed_gain = 0.2 if gemma else (0.35 if m["tied_output"] else 1.0)
    w = {"embed": (embed_gain * rng.standard_normal((v, h))).astype(np.float32), "final_norm": norm(h)}
    if not m["tied_output"]:
        w["lm_head"] = lin(v, h, gain=4.0)
    for i in range(m["layers"]):
        L = {"attn_norm": norm(h), "q": lin(q_out, h, 2.0), "k": lin(kv_out, h, 2.0), "v": lin(kv_out, h),
             "o": lin(h, q_out), "ffn_norm": norm(h), "gate": lin(f, h), "up": lin(f, h), "down": lin(h, f)}
        if m["arch"] in ("qwen3", "gemma3"):
            L["q_norm"] = norm(hd)
            L["k_norm"] = norm(hd)
        if gemma:
            L["post_attn_norm"] = norm(h)
            L["post_ffn_norm"] = norm(h)
        w[f"layer{i}"] = L
    return w


# ---------------------------------------------------------------------------------------------
# GGUF tensors, as convert_hf_to_gguf.py names and lays them out


def llama3_rope_factors(m):
    """convert_hf_to_gguf.py LlamaModel.generate_extra_tensors for rope_type llama3 (float32 frequencies,
    Python floats for the rest), written independently here."""
    import torch
    rs = m["rope_scaling"]
    dim = m["head_dim"]
    freqs = 1.0 / (m["rope_base"] ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], \
        rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / lo, old / hi
    out = []
    for fr in freqs.tolist():
        wavelen = 2 * math.pi / fr
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - lo) / (hi - lo)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def gguf_tensors(m, wts):
    """(tensor entries, HF-layout weights the reader sees after dequantization)."""
    arch, gemma = m["arch"], m["arch"] in ("gemma2", "gemma3")
    t, hf = [], {"layers": []}
    e, hf["embed"] = store("token_embd.weight", wts["embed"], m["embed_type"])
    t.append(e)
    if not m["tied_output"]:
        e, hf["lm_head"] = store("output.weight", wts["lm_head"], m["output_type"])
        t.append(e)
    t.append(("output_norm.weight", wts["final_norm"], None))
    hf["final_norm"] = wts["final_norm"]
    if arch == "llama":
        factors = llama3_rope_factors(m)
        t.append(("rope_freqs.weight", factors, None))
        hf["rope_freqs"] = factors
    for i in range(m["layers"]):
        L, qt, d = wts[f"layer{i}"], m["types"][i], {}
        p = f"blk.{i}."
        t.append((p + "attn_norm.weight", L["attn_norm"], None))
        d["attn_norm"] = L["attn_norm"]
        if arch == "phi3":
            qkv = np.concatenate([L["q"], L["k"], L["v"]], axis=0)
            e, back = store(p + "attn_qkv.weight", qkv, qt["qkv"])
            t.append(e)
            d["qkv"] = back
            e, d["o"] = store(p + "attn_output.weight", L["o"], qt["o"])
            t.append(e)
            t.append((p + "ffn_norm.weight", L["ffn_norm"], None))
            d["ffn_norm"] = L["ffn_norm"]
            e, d["gate_up"] = store(p + "ffn_up.weight", np.concatenate([L["gate"], L["up"]], axis=0), qt["up"])
            t.append(e)
            e, d["down"] = store(p + "ffn_down.weight", L["down"], qt["down"])
            t.append(e)
            hf["layers"].append(d)
            continue
        if arch == "llama":
            e, back = store(p + "attn_q.weight", permute_qk(L["q"], m["heads"]), qt["q"])
            t.append(e)
            d["q"] = unpermute_qk(back, m["heads"])
            e, back = store(p + "attn_k.weight", permute_qk(L["k"], m["kv_heads"]), qt["k"])
            t.append(e)
            d["k"] = unpermute_qk(back, m["kv_heads"])
        else:
            for key, g in (("q", "attn_q"), ("k", "attn_k")):
                e, d[key] = store(p + g + ".weight", L[key], qt[key])
                t.append(e)
        for key, g in (("v", "attn_v"), ("o", "attn_output")):
            e, d[key] = store(p + g + ".weight", L[key], qt[key])
            t.append(e)
        if "q_norm" in L:
            t.append((p + "attn_q_norm.weight", L["q_norm"], None))
            t.append((p + "attn_k_norm.weight", L["k_norm"], None))
            d["q_norm"], d["k_norm"] = L["q_norm"], L["k_norm"]
        if gemma:
            t.append((p + "post_attention_norm.weight", L["post_attn_norm"], None))
            d["post_attn_norm"] = L["post_attn_norm"]
        t.append((p + "ffn_norm.weight", L["ffn_norm"], None))
        d["ffn_norm"] = L["ffn_norm"]
        for key, g in (("gate", "ffn_gate"), ("up", "ffn_up"), ("down", "ffn_down")):
            e, d[key] = store(p + g + ".weight", L[key], qt[key])
            t.append(e)
        if gemma:
            t.append((p + "post_ffw_norm.weight", L["post_ffn_norm"], None))
            d["post_ffn_norm"] = L["post_ffn_norm"]
        hf["layers"].append(d)
    return t, hf


def write_gguf(path, m, tokens, types, merges, special, tensors):
    """Metadata keys as convert_hf_to_gguf.py writes them for the architecture (conversion/base.py
    TextModel.set_gguf_parameters plus the model class's own)."""
    import gguf
    arch = m["arch"]
    w = gguf.GGUFWriter(str(path), arch)
    w.add_type("model")
    w.add_name(m["name"])
    w.add_block_count(m["layers"])
    w.add_context_length(m["context"])
    w.add_embedding_length(m["hidden"])
    w.add_feed_forward_length(m["ffn"])
    w.add_head_count(m["heads"])
    w.add_head_count_kv(m["kv_heads"])
    if arch in ("qwen3", "llama", "gemma3"):
        w.add_rope_freq_base(m["rope_base"])  # gemma2's converter writes none (llama.cpp's default is 10000)
    if arch == "gemma3":
        w.add_rope_freq_base_swa(m["rope_base_swa"])
    w.add_layer_norm_rms_eps(m["rms_eps"])
    if arch in ("qwen3", "gemma2", "gemma3"):
        w.add_key_length(m["head_dim"])
        w.add_value_length(m["head_dim"])
    if arch == "gemma2":
        w.add_attn_logit_softcapping(m["attn_logit_softcapping"])
        w.add_final_logit_softcapping(m["final_logit_softcapping"])
    if arch in ("gemma2", "gemma3", "phi3"):
        w.add_sliding_window(m["sliding_window"])
    if arch == "phi3":
        w.add_rope_scaling_orig_ctx_len(m["original_context"])
        w.add_rope_dimension_count(int(m["partial_rotary_factor"] * m["hidden"]) // m["heads"])
    if arch == "llama":
        w.add_vocab_size(m["vocab"])
        w.add_rope_dimension_count(m["head_dim"])
    w.add_file_type(m["file_type"])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(m["pre"])
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(special["bos"])
    w.add_eos_token_id(special["eos"])
    w.add_pad_token_id(special["pad"])
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML_TEMPLATE)
    for name, arr, raw in tensors:
        if raw is None:
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------------------------------------
# The HF model


def hf_config(m, overrides=None):
    from transformers import Gemma2Config, Gemma3TextConfig, LlamaConfig, Phi3Config, Qwen3Config
    o = dict(overrides or {})
    common = dict(vocab_size=m["vocab"], hidden_size=m["hidden"], intermediate_size=m["ffn"],
                  num_hidden_layers=m["layers"], num_attention_heads=m["heads"],
                  num_key_value_heads=m["kv_heads"], max_position_embeddings=m["context"], rms_norm_eps=m["rms_eps"],
                  tie_word_embeddings=m["tied_output"], attn_implementation="eager", bos_token_id=509,
                  eos_token_id=511, pad_token_id=509)
    arch = m["arch"]
    if arch == "qwen3":
        return Qwen3Config(head_dim=m["head_dim"], hidden_act="silu", attention_bias=False,
                           rope_parameters={"rope_type": "default", "rope_theta": m["rope_base"]}, **common)
    if arch == "gemma2":
        return Gemma2Config(head_dim=m["head_dim"], hidden_activation="gelu_pytorch_tanh",
                            query_pre_attn_scalar=m["query_pre_attn_scalar"], sliding_window=m["sliding_window"],
                            attn_logit_softcapping=o.get("attn_logit_softcapping", m["attn_logit_softcapping"]),
                            final_logit_softcapping=o.get("final_logit_softcapping", m["final_logit_softcapping"]),
                            rope_parameters={"rope_type": "default", "rope_theta": m["rope_base"]}, **common)
    if arch == "gemma3":
        sw = o.get("sliding_window", m["sliding_window"])
        return Gemma3TextConfig(head_dim=m["head_dim"], hidden_activation="gelu_pytorch_tanh",
                                query_pre_attn_scalar=m["query_pre_attn_scalar"], sliding_window=sw,
                                sliding_window_pattern=m["sliding_window_pattern"],
                                final_logit_softcapping=None, attn_logit_softcapping=None,
                                rope_parameters={
                                    "full_attention": {"rope_type": "default", "rope_theta": m["rope_base"]},
                                    "sliding_attention": {"rope_type": "default",
                                                          "rope_theta": o.get("rope_base_swa", m["rope_base_swa"])}},
                                **common)
    if arch == "phi3":
        return Phi3Config(hidden_act="silu", sliding_window=m["sliding_window"],
                          original_max_position_embeddings=m["original_context"],
                          rope_parameters={"rope_type": "default", "rope_theta": m["rope_base"],
                                           "partial_rotary_factor": m["partial_rotary_factor"]},
                          **common)
    rope = {"rope_theta": m["rope_base"], **m["rope_scaling"]}
    if o.get("no_rope_scaling"):
        rope = {"rope_type": "default", "rope_theta": m["rope_base"]}
    return LlamaConfig(head_dim=m["head_dim"], hidden_act="silu", rope_parameters=rope, **common)


def hf_state_dict(m, hf):
    gemma = m["arch"] in ("gemma2", "gemma3")
    nrm = (lambda a: a - np.float32(1.0)) if gemma else (lambda a: a)  # noqa: E731  (exact: Sterbenz)
    sd = {"model.embed_tokens.weight": hf["embed"], "model.norm.weight": nrm(hf["final_norm"])}
    if not m["tied_output"]:
        sd["lm_head.weight"] = hf["lm_head"]
    for i, L in enumerate(hf["layers"]):
        p = f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = nrm(L["attn_norm"])
        sd[p + "self_attn.o_proj.weight"] = L["o"]
        sd[p + "mlp.down_proj.weight"] = L["down"]
        if m["arch"] == "phi3":
            sd[p + "self_attn.qkv_proj.weight"] = L["qkv"]
            sd[p + "mlp.gate_up_proj.weight"] = L["gate_up"]
            sd[p + "post_attention_layernorm.weight"] = L["ffn_norm"]
            continue
        sd.update({p + "self_attn.q_proj.weight": L["q"], p + "self_attn.k_proj.weight": L["k"],
                   p + "self_attn.v_proj.weight": L["v"], p + "mlp.gate_proj.weight": L["gate"],
                   p + "mlp.up_proj.weight": L["up"]})
        if "q_norm" in L:
            sd[p + "self_attn.q_norm.weight"] = nrm(L["q_norm"])
            sd[p + "self_attn.k_norm.weight"] = nrm(L["k_norm"])
        if gemma:
            sd[p + "post_attention_layernorm.weight"] = nrm(L["post_attn_norm"])
            sd[p + "pre_feedforward_layernorm.weight"] = nrm(L["ffn_norm"])
            sd[p + "post_feedforward_layernorm.weight"] = nrm(L["post_ffn_norm"])
        else:
            sd[p + "post_attention_layernorm.weight"] = L["ffn_norm"]
    return sd


def build_hf_model(m, hf, overrides=None):
    import torch
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_config(m, overrides), dtype=torch.float32,
                                             attn_implementation="eager")
    sd = {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in hf_state_dict(m, hf).items()}
    missing, unexpected = model.load_state_dict(sd, strict=False)
    allowed = ("rotary", "lm_head.weight")
    assert not unexpected and all(any(a in k for a in allowed) for k in missing), (missing, unexpected)
    if m["tied_output"]:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    model.eval()
    return model


def gguf_loader_check(m, path, fname, ref_model, sequences):
    """transformers' GGUF loader on the file with the reference's config passed in: does it read the same
    weights and give the same logits?"""
    import torch
    from transformers import AutoModelForCausalLM
    out = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(path, f"{tmp}/{fname}")
            model = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=fname, config=hf_config(m),
                                                         dtype=torch.float32, attn_implementation="eager")
        model.eval()
    except Exception as exc:  # noqa: BLE001 - recorded in the fixture
        out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        return out
    a, b = model.state_dict(), ref_model.state_dict()
    diffs = {k: float((a[k].float() - v.float()).abs().max()) for k, v in b.items() if k in a}
    out["max_abs_weight_diff"] = max(diffs.values())
    out["missing_in_loader"] = sorted(k for k in b if k not in a)
    worst = 0.0
    with torch.no_grad():
        for ids in sequences:
            x = torch.tensor([ids])
            worst = max(worst, float((model(x, use_cache=False).logits - ref_model(x, use_cache=False).logits)
                                     .abs().max()))
    out["max_abs_logit_diff"] = worst
    return out


def effect_of(m, hf, ref_model, sequences, overrides):
    """Largest logit change over the sequences when the feature is switched off (shows that it matters)."""
    import torch
    other = build_hf_model(m, hf, overrides)
    worst = 0.0
    with torch.no_grad():
        for ids in sequences:
            x = torch.tensor([ids])
            worst = max(worst, float((other(x, use_cache=False).logits - ref_model(x, use_cache=False).logits)
                                     .abs().max()))
    return f32(worst)


# ---------------------------------------------------------------------------------------------


def tensor_type_name(arr, raw):
    if raw is not None:
        return raw.name
    return {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32"}[arr.dtype]


def arch_notes(m):
    arch = m["arch"]
    if arch == "qwen3":
        return {"qk_storage": "as in the HF checkpoint, not permuted (llama.cpp uses NEOX rope for qwen3)",
                "qk_norm": "attn_q_norm/attn_k_norm [head_dim] F32: RMSNorm over each head's head_dim values "
                           "(eps = rms_eps), after the projection, before rope"}
    if arch in ("gemma2", "gemma3"):
        n = {"qk_storage": "as in the HF checkpoint, not permuted (NEOX rope)",
             "norm_storage": "every *norm.weight holds 1 + w (convert_hf_to_gguf.py adds 1; transformers' loader "
                             "subtracts it): a reader multiplies by the stored value",
             "embedding_scale": "token_embd rows times sqrt(hidden) (as float32: HF rounds sqrt(hidden) to the "
                                "activation dtype, here float32)",
             "attention_scale": "1/sqrt(query_pre_attn_scalar) = 1/sqrt(head_dim): llama.cpp uses "
                                "1/sqrt(key_length) for every size but the 27B; the GGUF carries no "
                                "query_pre_attn_scalar key",
             "ffn": "down(gelu_tanh(gate(x)) * up(x))",
             "sliding_window_rule": "key position p is visible from query position t on a sliding layer iff "
                                    "0 <= t - p < sliding_window",
             "tied_output": "no output.weight: logits = token_embd . h"}
        if arch == "gemma2":
            n["sliding_layers"] = [i for i in range(m["layers"]) if i % 2 == 0]
            n["softcap"] = ("attention: scores = cap * tanh((q.k * scale) / cap) before the causal/window mask "
                            "and softmax; final: logits = cap * tanh(logits / cap)")
        else:
            n["sliding_layers"] = [i for i in range(m["layers"]) if (i + 1) % m["sliding_window_pattern"] != 0]
            n["rope_bases"] = {"sliding": m["rope_base_swa"], "global": m["rope_base"]}
            n["qk_norm"] = ("attn_q_norm/attn_k_norm [head_dim] hold 1 + w like every gemma norm; applied per "
                            "head after the projection, before rope")
        return n
    if arch == "phi3":
        hd = m["hidden"] // m["heads"]
        return {"qk_storage": "fused attn_qkv [hidden, (heads + 2 kv_heads) * head_dim] (GGUF ne order): rows "
                              f"0..{m['heads'] * hd - 1} Q, then {m['kv_heads'] * hd} K rows, then "
                              f"{m['kv_heads'] * hd} V rows; not permuted (NEOX rope)",
                "ffn": f"ffn_up holds gate rows 0..{m['ffn'] - 1} then up rows {m['ffn']}..{2 * m['ffn'] - 1}; "
                       "down(silu(gate) * up)",
                "rope_dims": int(m["partial_rotary_factor"] * m["hidden"]) // m["heads"],
                "rope_rule": "NEOX rope on the first rope_dims of each head (pairs (i, i + rope_dims/2)); the "
                             "other head dims pass through",
                "sliding_window_note": "2047 as Phi-3-mini-4k-instruct; all sequences here are shorter, so it "
                                       "never masks (llama.cpp ignores phi3 SWA altogether)"}
    return {"qk_storage": "rows permuted per head as llama.cpp convert_hf_to_gguf.py LlamaModel.permute (as in "
                          "tiny-llama-kquants); interleaved (normal) rope",
            "rope_freqs": "rope_freqs.weight [head_dim/2] F32: frequency divisors; theta_i = pos * "
                          "base^(-2i/head_dim) / rope_freqs[i]",
            "tied_output": "no output.weight: logits = token_embd . h"}


def run_one(key, out_dir, vocab_cache):
    m = dict(MODELS[key])
    fname = m["name"] + ".gguf"
    rng = np.random.default_rng(m["seed"])
    if m["pre"] not in vocab_cache:
        vocab_cache[m["pre"]] = build_vocab(m["pre"], m["vocab"])
    tokens, types, merges = vocab_cache[m["pre"]]
    ids_of = {t: i for i, t in enumerate(tokens)}
    special = {"bos": ids_of["<|endoftext|>"], "eos": ids_of["<|im_end|>"], "pad": ids_of["<|endoftext|>"]}
    wts = random_weights(rng, m)
    tensors, hf = gguf_tensors(m, wts)
    path = out_dir / fname
    write_gguf(path, m, tokens, types, merges, special, tensors)
    size = path.stat().st_size
    assert size < MAX_FILE_BYTES, (fname, size)
    log(f"wrote {path} ({size} bytes)")

    tk = build_bpe_tokenizer(tokens, types, merges, m["pre"])
    model = build_hf_model(m, hf)
    corpus = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.rglob("*.md"))[20:24])
    nll_ids = tk.encode(corpus, add_special_tokens=False).ids[:NLL_LENGTH]
    assert len(nll_ids) == NLL_LENGTH
    sequences = []
    for text, length in zip(SEQUENCE_TEXTS, SEQUENCE_LENGTHS):
        ids = tk.encode(text, add_special_tokens=False).ids
        while len(ids) < length:
            ids = ids + tk.encode(" " + text, add_special_tokens=False).ids
        sequences.append(ids[:length])
    refs, _ = references(model, tk, sequences, nll_ids)

    check_seqs = sequences + [nll_ids]
    loader = gguf_loader_check(m, path, fname, model, check_seqs)
    effects = {}
    if key == "gemma2":
        effects["attn_logit_softcapping_off"] = effect_of(m, hf, model, check_seqs, {"attn_logit_softcapping": None})
        effects["final_logit_softcapping_off"] = effect_of(m, hf, model, check_seqs,
                                                           {"final_logit_softcapping": None})
    if key == "gemma3":
        effects["sliding_window_off"] = effect_of(m, hf, model, check_seqs, {"sliding_window": 100000})
        effects["swa_rope_base_as_global"] = effect_of(m, hf, model, check_seqs, {"rope_base_swa": m["rope_base"]})
    if key == "llama3":
        effects["rope_scaling_off"] = effect_of(m, hf, model, check_seqs, {"no_rope_scaling": True})
    if key == "gemma2":
        m2 = dict(m, sliding_window=100000)
        effects["sliding_window_off"] = effect_of(m2, hf, model, check_seqs, {})

    try:
        from transformers import AutoTokenizer
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(path, f"{tmp}/{fname}")
            hf_tok = AutoTokenizer.from_pretrained(tmp, gguf_file=fname)
        checks = tokenizer_checks(tk, hf_tok)
        chat = hf_tok.apply_chat_template([{"role": "user", "content": "Hi there"}], tokenize=False,
                                          add_generation_prompt=True)
    except Exception as exc:  # noqa: BLE001 - recorded in the fixture
        log(f"{fname}: transformers' GGUF tokenizer failed: {exc}")
        checks = [dict(c, ids_transformers_gguf=None) for c in tokenizer_checks(tk, _NullTokenizer())]
        chat = None

    cfg = {k: v for k, v in m.items() if k not in ("types", "seed", "pre", "arch", "embed_type", "output_type",
                                                   "file_type", "tied_output")}
    header = {
        "file": fname,
        "file_bytes": size,
        "sha256": sha256_file(path),
        "generator": versions(),
        "torch_threads": TORCH_THREADS,
        "architecture": m["arch"],
        "config": cfg,
        "head_dim": m["head_dim"],
        "tensor_types": {name: tensor_type_name(arr, raw) for name, arr, raw in tensors},
        "tied_output": m["tied_output"],
        "qk_storage": arch_notes(m)["qk_storage"],
        "arch_notes": arch_notes(m),
        "hf_config": {k: v for k, v in hf_config(m).to_dict().items()
                      if k not in ("transformers_version", "architectures", "dtype", "torch_dtype")},
        "tokenizer": {"model": "gpt2", "pre": m["pre"], "regex": PRE_TOKENIZER_REGEXES[m["pre"]],
                      "vocab_size": len(tokens), "merges": len(merges),
                      "control_tokens": {t: ids_of[t] for t in CONTROL_TOKENS}, "special_ids": special,
                      "add_bos_token": False, "chat_template": CHATML_TEMPLATE,
                      "training": "as tiny-qwen2 (qwen2) / tiny-llama-kquants (llama-bpe): the same 512-token "
                                  "byte-level BPE; real models of this architecture use other tokenizers"},
        "tokenizer_checks": checks,
        "tokenizer_checks_note": ("ids: the GGUF vocabulary and merges with llama.cpp's pre-tokenizer regex (Split "
                                  "isolated + ByteLevel), ignore_merges=" + str(m["pre"] == "llama-bpe").lower()
                                  + "; ids_transformers_gguf: AutoTokenizer on the GGUF (null if it failed)"),
        "chat_template_check": {"messages": [{"role": "user", "content": "Hi there"}], "add_generation_prompt": True,
                                "rendered": chat},
        "transformers_load": "the reference model: AutoModelForCausalLM.from_config(hf_config, dtype=float32, "
                             "attn_implementation='eager') with the dequantized weights of the file loaded as "
                             "its state dict (gemma norms: stored value - 1)",
        "independent_check": {"what": "transformers' GGUF loader: AutoModelForCausalLM.from_pretrained(dir, "
                                      "gguf_file=name, config=hf_config, dtype=float32, attn_implementation="
                                      "'eager'), compared with the reference model on the 4 sequences and the "
                                      "NLL sequence", **loader},
        "feature_effects": {"what": "max |logit difference| over the same 5 sequences when the feature is turned "
                                    "off in the reference model (shows that the fixture exercises it)", **effects},
        "nll": refs["nll"],
        "greedy": f"{GREEDY_STEPS} argmax steps, full forward pass each (no KV cache), not stopped at EOS",
        "all_logits": "sequence 0 only: logits at every position, [position][vocab]",
    }
    header["tokenizer_checks_differ_from_transformers"] = [c["text"] for c in checks
                                                           if c["ids_transformers_gguf"] is not None
                                                           and c["ids"] != c["ids_transformers_gguf"]]
    log(f"{fname}: loader {loader}, effects {effects}, "
        f"min greedy margin {min(min(s['greedy_top2_margins']) for s in refs['sequences'])}")
    write_cases(out_dir / fname.replace(".gguf", ".json"), header, refs["sequences"], key="sequences")


class _NullTokenizer:
    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": []}


def run(out_dir, only=None):
    import torch
    torch.manual_seed(0)
    vocab_cache = {}
    for key in ORDER:
        if only and key not in only:
            continue
        run_one(key, out_dir, vocab_cache)
