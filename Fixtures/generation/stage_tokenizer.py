"""tokenizer.json: SmolLM2's byte-level BPE on the golden texts, under several pre-tokenizers."""

import json

from transformers.convert_slow_tokenizer import bytes_to_unicode

from common import (CONTROL_TOKEN_COUNT, GOLDEN, HERE, MODEL_REPO, MODEL_SHA256, PRE_TOKENIZER_REGEXES,
                    build_bpe_tokenizer, load_hf_tokenizer, log, read_gguf_vocab, versions, write_cases)

TEXT_SOURCES = [
    ("golden/texts.json", GOLDEN / "texts.json"),
    ("golden/xlmr/texts.json", GOLDEN / "xlmr" / "texts.json"),
    ("golden/xlmr/parity-texts.json", GOLDEN / "xlmr" / "parity-texts.json"),
    ("generation/extra-texts.json", HERE / "extra-texts.json"),
]


def load_texts():
    out = []
    for source, path in TEXT_SOURCES:
        for t in json.loads(path.read_text(encoding="utf-8"))["texts"]:
            out.append((source, t["name"], t["text"]))
    return out


def run(model_path, out_dir):
    tokens, types, merges = read_gguf_vocab(model_path)
    controls = [t for t, ty in zip(tokens, types) if ty == 3]
    assert controls == tokens[:CONTROL_TOKEN_COUNT], controls

    faithful = build_bpe_tokenizer(tokens, types, merges, "smollm-hf")
    plain = build_bpe_tokenizer(tokens, types, merges, "smollm-hf")
    plain.encode_special_tokens = True
    llamacpp_smollm = build_bpe_tokenizer(tokens, types, merges, "smollm")
    variants = {"ids_gpt2": build_bpe_tokenizer(tokens, types, merges, "gpt2"),
                "ids_llama_bpe": build_bpe_tokenizer(tokens, types, merges, "llama-bpe"),
                "ids_qwen2": build_bpe_tokenizer(tokens, types, merges, "qwen2")}
    llama_bpe_no_ignore = build_bpe_tokenizer(tokens, types, merges, "llama-bpe", ignore_merges=False)
    ignore_merges_matters = []
    hf = load_hf_tokenizer(model_path)
    alphabet = bytes_to_unicode()
    vocab = set(tokens)
    missing_bytes = [b for b in range(256) if alphabet[b] not in vocab]
    hf_state = json.loads(hf.backend_tokenizer.to_str())

    cases = []
    differs_transformers = []
    differs_llamacpp = []
    not_round_trip = []
    for source, name, text in load_texts():
        enc = faithful.encode(text, add_special_tokens=False)
        case = {"source": source, "name": name, "text": text, "ids": enc.ids,
                "offsets": [list(o) for o in enc.offsets]}
        t = hf(text, add_special_tokens=False, return_offsets_mapping=True)
        case["ids_transformers_gguf"] = list(t["input_ids"])
        t_offsets = [list(o) for o in t["offset_mapping"]]
        if case["ids_transformers_gguf"] != enc.ids:
            differs_transformers.append(f"{source}:{name}")
            case["offsets_transformers_gguf"] = t_offsets
        else:
            assert t_offsets == case["offsets"], (name, t_offsets, case["offsets"])
        if llamacpp_smollm.encode(text, add_special_tokens=False).ids != enc.ids:
            differs_llamacpp.append(f"{source}:{name}")
        for key, tk in variants.items():
            case[key] = tk.encode(text, add_special_tokens=False).ids
        if llama_bpe_no_ignore.encode(text, add_special_tokens=False).ids != case["ids_llama_bpe"]:
            ignore_merges_matters.append(f"{source}:{name}")
        if any(c in text for c in controls):
            p = plain.encode(text, add_special_tokens=False).ids
            tp = list(hf(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])
            # Plain text through the GPT-2-regex pre-tokenizer must be transformers' split_special_tokens.
            gp = variants["ids_gpt2"]
            gp.encode_special_tokens = True
            assert tp == gp.encode(text, add_special_tokens=False).ids, name
            gp.encode_special_tokens = False
            case["ids_plain"] = p
            case["ids_plain_transformers_gguf"] = tp
        # Decoding gives the text back, except where it needs a byte the vocabulary lacks (dropped).
        if faithful.decode(enc.ids, skip_special_tokens=False) != text:
            not_round_trip.append(f"{source}:{name}")
        cases.append(case)

    with_specials = hf("", add_special_tokens=True)["input_ids"]
    header = {
        "model": MODEL_REPO,
        "model_sha256": MODEL_SHA256,
        "generator": versions(),
        "vocab_size": len(tokens),
        "merges": len(merges),
        "control_tokens": {str(i): t for i, t in enumerate(controls)},
        "special_token_ids": {"bos": 1, "eos": 2, "unk": 0, "pad": 2},
        "gguf_pre": "smollm",
        "offsets": "[start, end) in Unicode code points (Python str indices) of the text",
        "tokenizers": {
            "ids": "SmolLM2's own tokenizer.json rebuilt from the GGUF vocabulary and merges: BPE, "
                   "pre_tokenizer Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false, "
                   "trim_offsets=true, use_regex=true)], the 17 CONTROL tokens (ids 0-16) as special added tokens "
                   "matched in the text; add_special_tokens=false",
            "ids_transformers_gguf": "transformers AutoTokenizer.from_pretrained(dir, gguf_file=...) on the same "
                                     "GGUF, add_special_tokens=false: ByteLevel(use_regex=true) only, no digit "
                                     "split (tokenizer.ggml.pre 'smollm' is not in transformers' table)",
            "ids_gpt2": "Split(llama.cpp gpt2 regex, isolated) + ByteLevel(use_regex=false)",
            "ids_llama_bpe": "Split(llama.cpp llama3 regex, isolated) + ByteLevel(use_regex=false), BPE with "
                             "ignore_merges=true (llama.cpp sets it for llama-bpe; a pre-token that is a vocabulary "
                             "entry is taken whole)",
            "ids_qwen2": "Split(llama.cpp qwen2 regex, isolated) + ByteLevel(use_regex=false)",
            "ids_plain": "as ids, but control-token strings are plain text (tokenizers encode_special_tokens=true); "
                         "only in cases whose text contains a control-token string",
            "ids_plain_transformers_gguf": "transformers' tokenizer with split_special_tokens=true; same cases",
        },
        "regexes": {k: v for k, v in PRE_TOKENIZER_REGEXES.items()},
        "llamacpp_smollm_split_differs_from_ids": differs_llamacpp,
        "transformers_gguf_differs_from_ids": differs_transformers,
        "transformers_gguf_pre_tokenizer": hf_state["pre_tokenizer"],
        "transformers_add_special_tokens_true_on_empty_text": list(with_specials),
        "missing_byte_symbols": missing_bytes,
        "llama_bpe_ignore_merges_changes_ids": ignore_merges_matters,
        "decode_differs_from_text": not_round_trip,
        "case_count": len(cases),
    }
    log(f"tokenizer: {len(cases)} cases, transformers differs on {len(differs_transformers)}, "
        f"llama.cpp-style smollm split differs on {len(differs_llamacpp)}")
    write_cases(out_dir / "tokenizer.json", header, cases)
