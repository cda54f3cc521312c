"""Helper run by stage_spm.py under llama-cpp-python's interpreter (Benchmarks/peers/.venv-llama).

Reads {"model": PATH, "texts": [str, ...], "decode": [[id, ...], ...]} as JSON on stdin and writes, as JSON on stdout, per text:
{"ids": llama_tokenize(text, add_special=false, parse_special=false),
 "ids_parse_special": the same with parse_special=true,
 "decoded": llama_detokenize(ids, remove_special=false, unparse_special=false),
 "decoded_unparse_special": the same with unparse_special=true},
for each "decode" list the llama_detokenize bytes (hex) under each remove_special/unparse_special pair,
plus the vocabulary's attributes as llama.cpp sees them after loading (llama_token_get_attr).
Only the standard library and llama_cpp are used, so it runs in that other environment.
"""

import ctypes
import json
import sys

import llama_cpp


def main():
    req = json.loads(sys.stdin.read())
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(req["model"].encode("utf-8"), params)
    if not model:
        sys.exit(f"llama.cpp could not load {req['model']}")
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)

    def tokenize(data, parse_special):
        cap = len(data) + 16
        buf = (llama_cpp.llama_token * cap)()
        n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, cap, False, parse_special)
        if n < 0:
            cap = -n
            buf = (llama_cpp.llama_token * cap)()
            n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, cap, False, parse_special)
        assert n >= 0
        return list(buf[:n])

    def detokenize(ids, unparse_special):
        arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
        cap = 64 + 16 * len(ids)
        out = ctypes.create_string_buffer(cap)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), out, cap, False, unparse_special)
        assert 0 <= n <= cap, n
        return out.raw[:n].decode("utf-8", errors="replace")

    results = []
    for text in req["texts"]:
        data = text.encode("utf-8")
        ids = tokenize(data, False)
        results.append({"ids": ids, "ids_parse_special": tokenize(data, True),
                        "decoded": detokenize(ids, False), "decoded_unparse_special": detokenize(ids, True)})
    decodes = []
    for ids in req.get("decode", []):
        d = {}
        for rs in (False, True):
            for us in (False, True):
                arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
                out = ctypes.create_string_buffer(64 + 16 * len(ids))
                n = llama_cpp.llama_detokenize(vocab, arr, len(ids), out, len(out), rs, us)
                assert 0 <= n <= len(out), n
                d[f"llamacpp_remove_special_{str(rs).lower()}_unparse_special_{str(us).lower()}_hex"] = out.raw[:n].hex()
        decodes.append(d)
    attrs = [int(llama_cpp.llama_vocab_get_attr(vocab, i)) for i in range(n_vocab)]
    info = {"version": getattr(llama_cpp, "__version__", "?"), "n_vocab": n_vocab, "attrs": attrs,
            "bos": llama_cpp.llama_vocab_bos(vocab), "eos": llama_cpp.llama_vocab_eos(vocab),
            "eot": llama_cpp.llama_vocab_eot(vocab),
            "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
            "eog": [i for i in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, i)]}
    llama_cpp.llama_model_free(model)
    sys.stdout.write(json.dumps({"info": info, "results": results, "decodes": decodes}, ensure_ascii=False))


if __name__ == "__main__":
    main()
