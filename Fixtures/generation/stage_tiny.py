"""Two tiny GGUF models written with the gguf package, and their transformers references.

* tiny-qwen2.gguf: architecture qwen2 (Q/K/V biases), random F32/F16 weights, a small byte-level
  BPE tokenizer with pre-tokenizer qwen2 and a ChatML chat template; Q/K stored as in the HF
  checkpoint (llama.cpp's converter does not permute qwen2).
* tiny-llama-kquants.gguf: architecture llama, hidden 256, projections in Q4_K/Q5_K/Q6_K,
  embedding Q8_0, separate output Q6_K, norms F32; Q/K rows permuted as llama.cpp's
  convert_hf_to_gguf.py does for llama; pre-tokenizer llama-bpe.

For each: tiny-*.json with the file's SHA-256, its config, the tokenizer's vocabulary checks, and
what transformers' model (AutoModelForCausalLM.from_pretrained(dir, gguf_file=...), float32, eager
attention) computes: last-position logits for 4 id sequences, all positions' logits for one of them,
16-token greedy continuations and per-token NLL over a 128-token sequence.
"""

import json
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from common import (CORPUS, PRE_TOKENIZER_REGEXES, TORCH_THREADS, build_bpe_tokenizer, f32, f32_list, log,
                    sha256_file, versions, write_cases)

CHATML_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
                   "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' "
                   "}}{% endif %}")
CONTROL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
GREEDY_STEPS = 16
NLL_LENGTH = 128

SEQUENCE_TEXTS = [
    "Hello, Swift!",
    "let numbers = [1, 2, 3]\nprint(numbers.count)",
    "<|im_start|>user\nWhat is an optional in Swift?<|im_end|>\n<|im_start|>assistant\n",
    "Arrays keep their elements in order. Sets do not, but they make membership tests fast, "
    "and dictionaries map keys to values.",
]
SEQUENCE_LENGTHS = [5, 12, 24, 40]


def byte_alphabet():
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    return bytes_to_unicode()


def train_bpe(text, regex, merges_wanted):
    """A deterministic byte-level BPE: words from the pre-tokenizer regex, then the most frequent
    adjacent pair is merged, ties broken by the smaller (left, right) pair, until merges_wanted."""
    import regex as re_u  # the `regex` package knows \\p{L}; it comes with transformers
    alphabet = byte_alphabet()
    words = Counter()
    for piece in re_u.findall(regex, text):
        words[tuple(alphabet[b] for b in piece.encode("utf-8"))] += 1
    words = {w: c for w, c in words.items()}
    merges = []
    for _ in range(merges_wanted):
        pairs = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        merges.append(best)
        joined = best[0] + best[1]
        new_words = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(joined)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new_words[tuple(out)] = new_words.get(tuple(out), 0) + c
        words = new_words
    return merges


def build_vocab(pre, vocab_size):
    """tokens (256 byte symbols in byte order, the merged tokens in merge order, then the control
    tokens), token types, merges ("a b" strings)."""
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.rglob("*.md"))[:12])
    regexes = PRE_TOKENIZER_REGEXES[pre]
    assert len(regexes) == 1
    merges = train_bpe(text, regexes[0], vocab_size - 256 - len(CONTROL_TOKENS))
    alphabet = byte_alphabet()
    tokens = [alphabet[b] for b in range(256)]
    seen = set(tokens)
    for a, b in merges:
        assert a + b not in seen, (a, b)
        tokens.append(a + b)
        seen.add(a + b)
    tokens += CONTROL_TOKENS
    types = [1] * (len(tokens) - len(CONTROL_TOKENS)) + [3] * len(CONTROL_TOKENS)
    assert len(tokens) == vocab_size, len(tokens)
    return tokens, types, [f"{a} {b}" for a, b in merges]


# ---------------------------------------------------------------------------------------------
# Weights


def permute_qk(w, n_head):
    """llama.cpp convert_hf_to_gguf.py's LlamaModel.permute for one of q_proj (n_head = heads) or
    k_proj (n_head = kv heads): within each head, the rows [first half, second half] are interleaved
    so that pairs (i, i + head_dim/2) become adjacent rows (2i, 2i + 1)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def random_weights(rng, cfg, bias):
    h, f, v = cfg["hidden"], cfg["ffn"], cfg["vocab"]
    hd = h // cfg["heads"]
    q_out, kv_out = cfg["heads"] * hd, cfg["kv_heads"] * hd

    def lin(rows, cols, gain=1.0):
        return (rng.standard_normal((rows, cols)) * gain / np.sqrt(cols)).astype(np.float32)

    def norm():
        return (1.0 + 0.1 * rng.standard_normal(h)).astype(np.float32)

    w = {"embed": rng.standard_normal((v, h)).astype(np.float32), "final_norm": norm(),
         "lm_head": lin(v, h, gain=cfg["head_gain"])}
    for i in range(cfg["layers"]):
        layer = {"attn_norm": norm(), "q": lin(q_out, h, 2.0), "k": lin(kv_out, h, 2.0), "v": lin(kv_out, h),
                 "o": lin(h, q_out), "ffn_norm": norm(), "gate": lin(f, h), "up": lin(f, h), "down": lin(h, f)}
        if bias:
            layer["q_bias"] = (0.1 * rng.standard_normal(q_out)).astype(np.float32)
            layer["k_bias"] = (0.1 * rng.standard_normal(kv_out)).astype(np.float32)
            layer["v_bias"] = (0.1 * rng.standard_normal(kv_out)).astype(np.float32)
        w[f"layer{i}"] = layer
    return w


# ---------------------------------------------------------------------------------------------
# GGUF writing


def write_gguf(path, arch, cfg, tokens, types, merges, pre, tensors, special_ids, file_type):
    """tensors: list of (name, array, raw_dtype or None)."""
    import gguf
    hd = cfg["hidden"] // cfg["heads"]
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(cfg["name"])
    w.add_file_type(file_type)
    w.add_context_length(cfg["context"])
    w.add_embedding_length(cfg["hidden"])
    w.add_block_count(cfg["layers"])
    w.add_feed_forward_length(cfg["ffn"])
    w.add_head_count(cfg["heads"])
    w.add_head_count_kv(cfg["kv_heads"])
    w.add_rope_freq_base(cfg["rope_base"])
    w.add_layer_norm_rms_eps(cfg["rms_eps"])
    w.add_rope_dimension_count(hd)
    if arch == "llama":
        w.add_vocab_size(cfg["vocab"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(special_ids["bos"])
    w.add_eos_token_id(special_ids["eos"])
    w.add_pad_token_id(special_ids["pad"])
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


def qwen2_tensors(wts, cfg):
    """Names and storage types; Q/K as in the HF checkpoint (no permutation)."""
    t = [("token_embd.weight", wts["embed"].astype(np.float16), None),
         ("output_norm.weight", wts["final_norm"], None),
         ("output.weight", wts["lm_head"], None)]
    for i in range(cfg["layers"]):
        L = wts[f"layer{i}"]
        t += [(f"blk.{i}.attn_norm.weight", L["attn_norm"], None),
              (f"blk.{i}.attn_q.weight", L["q"].astype(np.float16), None),
              (f"blk.{i}.attn_q.bias", L["q_bias"], None),
              (f"blk.{i}.attn_k.weight", L["k"].astype(np.float16), None),
              (f"blk.{i}.attn_k.bias", L["k_bias"], None),
              (f"blk.{i}.attn_v.weight", L["v"], None),
              (f"blk.{i}.attn_v.bias", L["v_bias"], None),
              (f"blk.{i}.attn_output.weight", L["o"].astype(np.float16), None),
              (f"blk.{i}.ffn_norm.weight", L["ffn_norm"], None),
              (f"blk.{i}.ffn_gate.weight", L["gate"].astype(np.float16), None),
              (f"blk.{i}.ffn_up.weight", L["up"], None),
              (f"blk.{i}.ffn_down.weight", L["down"].astype(np.float16), None)]
    return t


LLAMA_QTYPES = [
    # per layer: q, k, v, o, gate, up, down
    {"q": "Q4_K", "k": "Q5_K", "v": "Q6_K", "o": "Q5_K", "gate": "Q4_K", "up": "Q5_K", "down": "Q6_K"},
    {"q": "Q5_K", "k": "Q4_K", "v": "Q5_K", "o": "Q6_K", "gate": "Q6_K", "up": "Q4_K", "down": "Q5_K"},
]
LLAMA_OUTPUT_QTYPE = "Q6_K"


def llama_tensors(wts, cfg):
    """Quantized tensors for the llama file, and the dequantized HF-layout weights they stand for."""
    import gguf
    from gguf import quants
    import kquants
    T = gguf.GGMLQuantizationType
    deq = {"layers": []}

    def kq(name, arr, qtype):
        blocks = kquants.quantize(arr, qtype)
        back = quants.dequantize(blocks, getattr(T, qtype)).astype(np.float32)
        return (name, blocks, getattr(T, qtype)), back

    emb_blocks = quants.quantize(wts["embed"], T.Q8_0)
    deq["embed"] = quants.dequantize(emb_blocks, T.Q8_0).astype(np.float32)
    t = [("token_embd.weight", emb_blocks, T.Q8_0), ("output_norm.weight", wts["final_norm"], None)]
    deq["final_norm"] = wts["final_norm"]
    entry, deq["lm_head"] = kq("output.weight", wts["lm_head"], LLAMA_OUTPUT_QTYPE)
    t.append(entry)
    for i in range(cfg["layers"]):
        L, qt = wts[f"layer{i}"], LLAMA_QTYPES[i]
        d = {"attn_norm": L["attn_norm"], "ffn_norm": L["ffn_norm"]}
        t.append((f"blk.{i}.attn_norm.weight", L["attn_norm"], None))
        e, back = kq(f"blk.{i}.attn_q.weight", permute_qk(L["q"], cfg["heads"]), qt["q"])
        t.append(e)
        d["q"] = unpermute_qk(back, cfg["heads"])
        e, back = kq(f"blk.{i}.attn_k.weight", permute_qk(L["k"], cfg["kv_heads"]), qt["k"])
        t.append(e)
        d["k"] = unpermute_qk(back, cfg["kv_heads"])
        for key, gname in (("v", "attn_v"), ("o", "attn_output"), ("gate", "ffn_gate"), ("up", "ffn_up"),
                           ("down", "ffn_down")):
            e, d[key] = kq(f"blk.{i}.{gname}.weight", L[key], qt[key])
            t.append(e)
        t.append((f"blk.{i}.ffn_norm.weight", L["ffn_norm"], None))
        deq["layers"].append(d)
    return t, deq


def unpermute_qk(w, n_head):
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


# ---------------------------------------------------------------------------------------------
# References


def independent_model(arch, cfg, wts, deq=None):
    """A transformers model built directly from the HF-layout weights, without the GGUF loader."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
    common = dict(vocab_size=cfg["vocab"], hidden_size=cfg["hidden"], intermediate_size=cfg["ffn"],
                  num_hidden_layers=cfg["layers"], num_attention_heads=cfg["heads"],
                  num_key_value_heads=cfg["kv_heads"], max_position_embeddings=cfg["context"],
                  rms_norm_eps=cfg["rms_eps"], tie_word_embeddings=False, hidden_act="silu",
                  attn_implementation="eager")
    if arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(rope_parameters={"rope_type": "default", "rope_theta": cfg["rope_base"]},
                                             **common))
        src = {"embed": wts["embed"].astype(np.float16).astype(np.float32), "final_norm": wts["final_norm"],
               "lm_head": wts["lm_head"], "layers": []}
        for i in range(cfg["layers"]):
            L = wts[f"layer{i}"]
            r = lambda a: a.astype(np.float16).astype(np.float32)  # noqa: E731
            src["layers"].append({"attn_norm": L["attn_norm"], "ffn_norm": L["ffn_norm"], "q": r(L["q"]),
                                  "k": r(L["k"]), "v": L["v"], "o": r(L["o"]), "gate": r(L["gate"]), "up": L["up"],
                                  "down": r(L["down"]), "q_bias": L["q_bias"], "k_bias": L["k_bias"],
                                  "v_bias": L["v_bias"]})
    else:
        model = LlamaForCausalLM(LlamaConfig(rope_parameters={"rope_type": "default", "rope_theta": cfg["rope_base"]},
                                             head_dim=cfg["hidden"] // cfg["heads"], **common))
        src = deq
    sd = {"model.embed_tokens.weight": src["embed"], "model.norm.weight": src["final_norm"],
          "lm_head.weight": src["lm_head"]}
    for i, L in enumerate(src["layers"]):
        p = f"model.layers.{i}."
        sd.update({p + "input_layernorm.weight": L["attn_norm"], p + "post_attention_layernorm.weight": L["ffn_norm"],
                   p + "self_attn.q_proj.weight": L["q"], p + "self_attn.k_proj.weight": L["k"],
                   p + "self_attn.v_proj.weight": L["v"], p + "self_attn.o_proj.weight": L["o"],
                   p + "mlp.gate_proj.weight": L["gate"], p + "mlp.up_proj.weight": L["up"],
                   p + "mlp.down_proj.weight": L["down"]})
        if "q_bias" in L:
            sd.update({p + "self_attn.q_proj.bias": L["q_bias"], p + "self_attn.k_proj.bias": L["k_bias"],
                       p + "self_attn.v_proj.bias": L["v_bias"]})
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sd.items()},
                                                strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    model.eval()
    return model


def references(model, tokenizer, sequences, nll_ids, other=None):
    import torch
    out = {"sequences": []}
    diffs = []
    for index, ids in enumerate(sequences):
        with torch.no_grad():
            logits = model(torch.tensor([ids]), use_cache=False).logits[0].float()
            if other is not None:
                diffs.append(float((other(torch.tensor([ids]), use_cache=False).logits[0].float() - logits)
                                   .abs().max()))
        seq, cont, margins = list(ids), [], []
        with torch.no_grad():
            for _ in range(GREEDY_STEPS):
                step = model(torch.tensor([seq]), use_cache=False).logits[0, -1].float()
                top = torch.topk(step, 2)
                cont.append(int(top.indices[0]))
                margins.append(f32(top.values[0] - top.values[1]))
                seq.append(cont[-1])
        case = {"index": index, "ids": list(ids), "last_logits": f32_list(logits[-1].numpy()),
                "greedy": cont, "greedy_top2_margins": margins,
                "greedy_text": tokenizer.decode(cont, skip_special_tokens=False)}
        if index == 0:
            case["all_logits"] = [f32_list(row) for row in logits.numpy()]
        out["sequences"].append(case)
    with torch.no_grad():
        logits = model(torch.tensor([nll_ids]), use_cache=False).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
    target = torch.tensor(nll_ids[1:])
    nll = (-logp[:-1].gather(1, target[:, None])[:, 0]).numpy()
    out["nll"] = {"ids": list(nll_ids), "nll": [None] + f32_list(nll),
                  "argmax": [-1] + [int(a) for a in logits[:-1].argmax(dim=-1).numpy()],
                  "mean_nll": float(nll.astype(np.float64).mean()),
                  "perplexity": float(np.exp(nll.astype(np.float64).mean()))}
    return out, (max(diffs) if diffs else None)


def tokenizer_checks(tk, hf_tok):
    texts = SEQUENCE_TEXTS + ["  leading spaces and 12345 digits", "naïve café — 日本語 🙂", "<|im_end|><|endoftext|>",
                              "I'm sure they'll say it's fine, don't you think?"]
    out = []
    for text in texts:
        ids = tk.encode(text, add_special_tokens=False).ids
        tr = list(hf_tok(text, add_special_tokens=False)["input_ids"])
        out.append({"text": text, "ids": ids, "ids_transformers_gguf": tr})
    return out


def build_one(kind, out_dir, rng):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if kind == "qwen2":
        cfg = {"name": "tiny-qwen2", "hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "ffn": 128,
               "vocab": 512, "context": 256, "rope_base": 1000000.0, "rms_eps": 1e-6, "head_gain": 4.0}
        arch, pre, fname = "qwen2", "qwen2", "tiny-qwen2.gguf"
    else:
        cfg = {"name": "tiny-llama-kquants", "hidden": 256, "layers": 2, "heads": 4, "kv_heads": 2, "ffn": 512,
               "vocab": 512, "context": 256, "rope_base": 10000.0, "rms_eps": 1e-5, "head_gain": 4.0}
        arch, pre, fname = "llama", "llama-bpe", "tiny-llama-kquants.gguf"
    tokens, types, merges = build_vocab(pre, cfg["vocab"])
    ids_of = {t: i for i, t in enumerate(tokens)}
    special = {"bos": ids_of["<|endoftext|>"], "eos": ids_of["<|im_end|>"], "pad": ids_of["<|endoftext|>"]}
    wts = random_weights(rng, cfg, bias=(arch == "qwen2"))
    deq = None
    if arch == "qwen2":
        tensors = qwen2_tensors(wts, cfg)
        file_type = 1  # mostly F16
    else:
        tensors, deq = llama_tensors(wts, cfg)
        file_type = 15  # MOSTLY_Q4_K_M-like mix
    path = out_dir / fname
    write_gguf(path, arch, cfg, tokens, types, merges, pre, tensors, special, file_type)
    size = path.stat().st_size
    log(f"wrote {path} ({size} bytes)")

    tk = build_bpe_tokenizer(tokens, types, merges, pre)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(path, Path(tmp) / fname)
        hf_tok = AutoTokenizer.from_pretrained(tmp, gguf_file=fname)
        model = AutoModelForCausalLM.from_pretrained(tmp, gguf_file=fname, dtype=torch.float32,
                                                     attn_implementation="eager")
    model.eval()
    other = independent_model(arch, cfg, wts, deq)
    # transformers' GGUF loader must see the same weights as the independent model
    sd_gguf = model.state_dict()
    weight_diffs = {k: float((v.float() - sd_gguf[k].float()).abs().max()) for k, v in other.state_dict().items()
                    if k in sd_gguf}
    worst_weight = max(weight_diffs.values())

    corpus = "".join(p.read_text(encoding="utf-8") for p in sorted(CORPUS.rglob("*.md"))[20:24])
    nll_ids = tk.encode(corpus, add_special_tokens=False).ids[:NLL_LENGTH]
    assert len(nll_ids) == NLL_LENGTH
    sequences = []
    for text, length in zip(SEQUENCE_TEXTS, SEQUENCE_LENGTHS):
        ids = tk.encode(text, add_special_tokens=False).ids
        while len(ids) < length:
            ids = ids + tk.encode(" " + text, add_special_tokens=False).ids
        sequences.append(ids[:length])
    refs, logit_diff = references(model, tk, sequences, nll_ids, other)

    checks = tokenizer_checks(tk, hf_tok)
    chat = hf_tok.apply_chat_template([{"role": "user", "content": "Hi there"}], tokenize=False,
                                      add_generation_prompt=True)
    header = {
        "file": fname,
        "file_bytes": size,
        "sha256": sha256_file(path),
        "generator": versions(),
        "torch_threads": TORCH_THREADS,
        "architecture": arch,
        "config": {k: v for k, v in cfg.items() if k != "head_gain"},
        "head_dim": cfg["hidden"] // cfg["heads"],
        "tensor_types": {name: (raw.name if raw is not None else
                                {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32"}[arr.dtype])
                         for name, arr, raw in tensors},
        "tied_output": False,
        "qk_storage": ("as in the HF checkpoint, not permuted (llama.cpp uses NEOX rope for qwen2)" if arch == "qwen2"
                       else "rows permuted per head as llama.cpp convert_hf_to_gguf.py LlamaModel.permute: "
                            "w.reshape(n_head, 2, rows // n_head // 2, cols).swapaxes(1, 2).reshape(rows, cols), "
                            "n_head = heads for attn_q and kv heads for attn_k; transformers' loader reverses it"),
        "tokenizer": {"model": "gpt2", "pre": pre, "regex": PRE_TOKENIZER_REGEXES[pre], "vocab_size": len(tokens),
                      "merges": len(merges), "control_tokens": {t: ids_of[t] for t in CONTROL_TOKENS},
                      "special_ids": special, "add_bos_token": False, "chat_template": CHATML_TEMPLATE,
                      "training": "byte-level BPE learned by this script from the first 12 swift-lessons files "
                                  "(sorted), words from the pre-tokenizer regex, most frequent pair first, ties "
                                  "to the smaller pair; tokens = 256 byte symbols in byte order, then merges in "
                                  "order, then the control tokens"},
        "tokenizer_checks": checks,
        "tokenizer_checks_note": ("ids: the GGUF vocabulary and merges with llama.cpp's pre-tokenizer regex (Split "
                                  "isolated + ByteLevel), ignore_merges=" + str(pre == "llama-bpe").lower()
                                  + "; ids_transformers_gguf: AutoTokenizer on the GGUF"),
        "chat_template_check": {"messages": [{"role": "user", "content": "Hi there"}], "add_generation_prompt": True,
                                "rendered": chat},
        "transformers_load": "AutoModelForCausalLM.from_pretrained(dir, gguf_file=name, dtype=float32, "
                             "attn_implementation='eager'); AutoTokenizer.from_pretrained(dir, gguf_file=name)",
        "independent_check": {"what": "a transformers model built from the intended HF-layout weights (dequantized "
                                      "and un-permuted for llama) without the GGUF loader",
                              "max_abs_weight_diff": worst_weight, "max_abs_logit_diff": logit_diff},
        "nll": refs["nll"],
        "greedy": f"{GREEDY_STEPS} argmax steps, full forward pass each (no KV cache), not stopped at EOS",
        "all_logits": "sequence 0 only: logits at every position, [position][vocab]",
    }
    header["tokenizer_checks_differ_from_transformers"] = [c["text"] for c in checks
                                                           if c["ids"] != c["ids_transformers_gguf"]]
    log(f"{fname}: weight diff {worst_weight}, logit diff {logit_diff}, "
        f"min greedy margin {min(min(s['greedy_top2_margins']) for s in refs['sequences'])}")
    write_cases(out_dir / fname.replace(".gguf", ".json"), header, refs["sequences"], key="sequences")


def run(out_dir):
    import torch
    torch.manual_seed(0)
    build_one("qwen2", out_dir, np.random.default_rng(20240601))
    build_one("llama", out_dir, np.random.default_rng(20240602))
