"""logits.json + logits.bin: SmolLM2 last-position logits and greedy continuations for 20 chat prompts."""

import numpy as np

from common import (MODEL_REPO, MODEL_SHA256, TORCH_THREADS, build_bpe_tokenizer, f32, get_model, load_hf_tokenizer,
                    log, read_gguf_vocab, versions, write_cases, write_f32_bin)

GREEDY_STEPS = 32
EOS_ID = 2

RETRIEVAL_CONTEXT = (
    "Answer the question using only the CONTEXT. If the answer is not there, say you do not know.\n\n"
    "CONTEXT:\n"
    "[1] The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889 for the World's Fair.\n"
    "[2] The tower is 330 metres tall and was the tallest man-made structure in the world until 1930.\n"
    "[3] Gustave Eiffel's company designed and built the tower.\n\n"
    "QUESTION: When was the Eiffel Tower completed?"
)
RETRIEVAL_SWIFT = (
    "Use the CONTEXT to answer.\n\n"
    "CONTEXT:\n"
    "Swift arrays are value types. Calling `append(_:)` adds an element to the end, and `reversed()` returns "
    "a reversed view of the elements.\n\n"
    "QUESTION: How do I add an element to the end of a Swift array?"
)

PROMPTS = [
    ("capital_france", [{"role": "user", "content": "What is the capital of France?"}]),
    ("photosynthesis", [{"role": "user", "content": "Explain photosynthesis in two sentences."}]),
    ("haiku_sea", [{"role": "user", "content": "Write a haiku about the sea."}]),
    ("paperclip_uses", [{"role": "user", "content": "List three uses for a paperclip."}]),
    ("translate_spanish", [{"role": "user", "content": "Translate 'good morning' into Spanish."}]),
    ("arithmetic", [{"role": "user", "content": "What is 17 plus 25?"}]),
    ("coding_tip", [{"role": "user", "content": "Give me one short tip for learning to program."}]),
    ("pirate_system", [{"role": "system", "content": "You are a friendly pirate. Always answer like a pirate."},
                       {"role": "user", "content": "How are you today?"}]),
    ("summarize", [{"role": "user", "content": "Summarize in one sentence: The cat slept on the warm windowsill "
                                               "all afternoon while the rain fell outside."}]),
    ("swift_function", [{"role": "user", "content": "Write a Swift function that adds two integers."}]),
    ("sky_blue", [{"role": "user", "content": "Why is the sky blue?"}]),
    ("yellow_fruit", [{"role": "user", "content": "Name a fruit that is yellow."}]),
    ("retrieval_eiffel", [{"role": "user", "content": RETRIEVAL_CONTEXT}]),
    ("retrieval_swift", [{"role": "system", "content": "You answer questions about Swift programming."},
                         {"role": "user", "content": RETRIEVAL_SWIFT}]),
    ("story_robot", [{"role": "user", "content": "Continue the story: Once upon a time, a small robot"}]),
    ("tomato", [{"role": "user", "content": "Is a tomato a fruit or a vegetable? Answer briefly."}]),
    ("grammar", [{"role": "user", "content": "Correct the grammar: 'She don't like apples.'"}]),
    ("synonym", [{"role": "user", "content": "Give a one-word synonym for 'happy'."}]),
    ("multi_turn", [{"role": "user", "content": "I have a dog named Max."},
                    {"role": "assistant", "content": "Max sounds like a great dog! How can I help?"},
                    {"role": "user", "content": "What is my dog's name?"}]),
    ("german", [{"role": "user", "content": "Wie heißt die Hauptstadt von Österreich?"}]),
]


def run(model_path, out_dir):
    import torch
    hf = load_hf_tokenizer(model_path)
    tokens, types, merges = read_gguf_vocab(model_path)
    faithful = build_bpe_tokenizer(tokens, types, merges, "smollm-hf")
    model = get_model(model_path)
    vocab = model.config.vocab_size

    rows = []
    cases = []
    for index, (name, messages) in enumerate(PROMPTS):
        text = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = faithful.encode(text, add_special_tokens=False).ids
        ids_tr = list(hf(text, add_special_tokens=False)["input_ids"])
        with torch.no_grad():
            logits = model(torch.tensor([ids]), use_cache=False).logits[0, -1].float().numpy()
        assert logits.shape == (vocab,)
        rows.append(logits.astype(np.float32))

        # Greedy decoding by full recomputation of the whole sequence at every step (no KV cache),
        # never stopping at EOS.
        seq = list(ids)
        continuation, margins = [], []
        with torch.no_grad():
            for _ in range(GREEDY_STEPS):
                step = model(torch.tensor([seq]), use_cache=False).logits[0, -1].float()
                top = torch.topk(step, 2)
                nxt = int(top.indices[0])
                continuation.append(nxt)
                margins.append(f32(top.values[0] - top.values[1]))
                seq.append(nxt)
        assert continuation[0] == int(np.argmax(rows[-1]))
        # transformers' generate() (KV cache) for comparison, EOS disabled so it runs all steps.
        with torch.no_grad():
            # An explicit attention mask: pad_token_id is 2 (<|im_end|>), and without a mask generate() would
            # mask every <|im_end|> of the prompt.
            gen = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                 do_sample=False, max_new_tokens=GREEDY_STEPS,
                                 min_new_tokens=GREEDY_STEPS, eos_token_id=None, pad_token_id=EOS_ID,
                                 temperature=None, top_p=None, top_k=None)
        gen_cont = gen[0, len(ids):].tolist()
        top5 = np.argsort(-rows[-1], kind="stable")[:5]
        cases.append({
            "index": index,
            "name": name,
            "messages": messages,
            "prompt": text,
            "ids": ids,
            "ids_equal_transformers_gguf": ids == ids_tr,
            "logits_offset_bytes": index * vocab * 4,
            "top5_ids": [int(i) for i in top5],
            "top5_logits": [f32(rows[-1][i]) for i in top5],
            "greedy": continuation,
            "greedy_text": faithful.decode(continuation, skip_special_tokens=False),
            "greedy_top2_margins": margins,
            "first_eos_index": continuation.index(EOS_ID) if EOS_ID in continuation else None,
            "generate_kv_cache": gen_cont,
            "generate_kv_cache_equal": gen_cont == continuation,
        })
        log(f"logits {index} {name}: {len(ids)} ids, greedy {faithful.decode(continuation[:12])!r}")

    matrix = np.stack(rows)
    digest = write_f32_bin(out_dir / "logits.bin", matrix)
    header = {
        "model": MODEL_REPO,
        "model_sha256": MODEL_SHA256,
        "generator": versions(),
        "torch_threads": TORCH_THREADS,
        "dtype": "float32 (GGUF dequantized by transformers)",
        "attn_implementation": model.config._attn_implementation,
        "vocab_size": vocab,
        "logits_bin": {"file": "logits.bin", "dtype": "float32 little-endian", "shape": [len(rows), vocab],
                       "row_bytes": vocab * 4, "sha256": digest,
                       "layout": "row i = the logits after the last prompt token of case i, at byte offset "
                                 "i * vocab_size * 4"},
        "prompt": "SmolLM2 chat template (transformers apply_chat_template, add_generation_prompt=True; a "
                  "conversation without a system message gets the template's default system prompt), tokenized "
                  "with the true SmolLM2 tokenizer (see tokenizer.json), no BOS",
        "greedy": f"{GREEDY_STEPS} argmax steps, each a full forward pass over prompt + tokens so far "
                  "(use_cache=False), not stopped at EOS (id 2); first_eos_index is the position of the first "
                  "EOS in `greedy` or null; generate_kv_cache is model.generate(do_sample=False, "
                  "eos_token_id=None) with its KV cache, for comparison; greedy_top2_margins[k] = top-1 minus "
                  "top-2 logit at step k",
    }
    write_cases(out_dir / "logits.json", header, cases)
