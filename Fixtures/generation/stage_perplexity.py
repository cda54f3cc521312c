"""perplexity.json: SmolLM2 per-token NLL over the project's Swift lessons corpus, 512-token windows."""

import math

import numpy as np

from common import (CORPUS, MODEL_REPO, MODEL_SHA256, REPO, TORCH_THREADS, build_bpe_tokenizer, f32,
                    get_model, load_hf_tokenizer, log, read_gguf_vocab, sha256_bytes, versions, write_sections)

MAX_TOKENS = 4096
WINDOW = 512


def corpus_text(tokenizer):
    """The .md files in sorted path order, whole files only, concatenated as they are, up to MAX_TOKENS tokens."""
    files = sorted(CORPUS.rglob("*.md"))
    chosen, text = [], ""
    for path in files:
        candidate = text + path.read_text(encoding="utf-8")
        if len(tokenizer.encode(candidate, add_special_tokens=False).ids) > MAX_TOKENS:
            break
        chosen.append(path)
        text = candidate
    return chosen, text


def run(model_path, out_dir):
    import torch
    tokens, types, merges = read_gguf_vocab(model_path)
    faithful = build_bpe_tokenizer(tokens, types, merges, "smollm-hf")
    hf = load_hf_tokenizer(model_path)
    files, text = corpus_text(faithful)
    ids = faithful.encode(text, add_special_tokens=False).ids
    ids_tr = list(hf(text, add_special_tokens=False)["input_ids"])
    assert len(ids) >= 4 * WINDOW, len(ids)
    model = get_model(model_path)

    nll = np.full(len(ids), np.nan, dtype=np.float32)
    argmax = np.full(len(ids), -1, dtype=np.int64)
    windows = []
    for start in range(0, len(ids), WINDOW):
        chunk = ids[start:start + WINDOW]
        with torch.no_grad():
            logits = model(torch.tensor([chunk]), use_cache=False).logits[0].float()
            logp = torch.log_softmax(logits, dim=-1)
        target = torch.tensor(chunk[1:])
        chunk_nll = -logp[:-1].gather(1, target[:, None])[:, 0]
        nll[start + 1:start + len(chunk)] = chunk_nll.numpy()
        argmax[start + 1:start + len(chunk)] = logits[:-1].argmax(dim=-1).numpy()
        scored = chunk_nll.double()
        windows.append({"start": start, "length": len(chunk), "scored": len(chunk) - 1,
                        "mean_nll": float(scored.mean()), "perplexity": math.exp(float(scored.mean()))})
        log(f"perplexity window {start}: {len(chunk)} tokens, ppl {windows[-1]['perplexity']:.3f}")

    scored = ~np.isnan(nll)
    mean_nll = float(nll[scored].astype(np.float64).mean())
    top1 = float(np.mean(argmax[scored] == np.asarray(ids)[scored]))
    header = {
        "model": MODEL_REPO,
        "model_sha256": MODEL_SHA256,
        "generator": versions(),
        "torch_threads": TORCH_THREADS,
        "dtype": "float32 (GGUF dequantized by transformers)",
        "attn_implementation": model.config._attn_implementation,
        "files": [str(p.relative_to(REPO)) for p in files],
        "text_rule": "the whole .md files under Fixtures/corpus/swift-lessons in sorted path order, concatenated "
                     "byte for byte with nothing between them, as many as fit in "
                     f"{MAX_TOKENS} tokens",
        "text_sha256": sha256_bytes(text.encode("utf-8")),
        "text_bytes": len(text.encode("utf-8")),
        "text": text,
        "tokenizer": "the true SmolLM2 tokenizer (see tokenizer.json), no BOS, add_special_tokens=false",
        "ids_equal_transformers_gguf": ids == ids_tr,
        "transformers_gguf_token_count": len(ids_tr),
        "token_count": len(ids),
        "window": WINDOW,
        "windows": windows,
        "scored_tokens": int(scored.sum()),
        "mean_nll": mean_nll,
        "perplexity": math.exp(mean_nll),
        "top1_accuracy": top1,
        "method": "consecutive windows of 512 tokens (the last may be shorter), each an independent forward pass "
                  "(use_cache=False) starting at position 0; nll[i] = -log_softmax(logits at i-1)[ids[i]] in float32 "
                  "for every token but each window's first, whose nll is null and argmax -1; argmax[i] = argmax "
                  "of the logits at i-1 (the prediction for token i); perplexity = exp(mean of the scored nll, "
                  "summed in float64)",
    }
    sections = {"ids": ids, "nll": [f32(x) if not np.isnan(x) else None for x in nll],
                "argmax": [int(a) for a in argmax]}
    log(f"perplexity: {len(ids)} tokens from {len(files)} files, ppl {math.exp(mean_nll):.4f}, top-1 {top1:.4f}")
    write_sections(out_dir / "perplexity.json", header, sections)
