"""llama.cpp (through llama-cpp-python) on the same GGUF as `embeddings-bench generate` and
`embeddings-bench perplexity`, in one run, the project's figures taken first.

What it measures, with llama.cpp's own performance counters (llama_perf_context):
  * prompt processing of a 512-token prompt (the first 512 tokens of the built-in Swift lessons,
    concatenated in path order, as the project's bench takes them), tokens/s;
  * generation of 128 tokens, one at a time, the most likely token each step, tokens/s;
  * peak resident memory of this process after loading and running (ru_maxrss);
  * the perplexity of the lessons' first --perplexity-characters characters (default 40,000,
    about 10,000 tokens; 0: all 434 KB, which takes tens of minutes per side on 2 cores) in
    windows of 512 tokens without BOS (every token but each window's first scored), as
    `embeddings-bench perplexity FILE` computes it on the same text.
The project's side runs first (`embeddings-bench generate --json` and `perplexity --json`, in
child processes) so that neither side's memory or caches are warmed by the other.

Any GGUF file runs (--model): the default SmolLM2-135M, a file downloaded by hand, or a mix
written by Fixtures/generation/mix_model.py (random weights: --skip-perplexity, whose figure means
nothing there). The project's side also prints the read-bandwidth bound of decoding (weight bytes
per token ÷ the read bandwidth of a pass over as many bytes), and this script the ratios.

Usage: llama_peer.py [--model FILE] [--threads N] [--bench PATH] [--perplexity-characters N] [--skip-perplexity] [--skip-swift] [--json OUT]
"""
import argparse
import json
import math
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_MODEL = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / \
    "contextual-embeddings/models/HuggingFaceTB/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf"


def lessons_text():
    folder = ROOT / "Fixtures/corpus/swift-lessons"
    files = sorted(str(p) for p in folder.rglob("*.md"))
    return "".join(pathlib.Path(f).read_text(encoding="utf-8") for f in files)


def cpu_model():
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def perplexity_text(characters):
    text = lessons_text()
    return text[:characters] if characters > 0 else text


def swift_side(bench, model, threads, characters, perplexity=True):
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        text_file = os.path.join(folder, "perplexity.txt")
        with open(text_file, "w", encoding="utf-8") as f:
            f.write(perplexity_text(characters))
        runs = [("generate", ["generate", "--threads", str(threads)])]
        if perplexity:
            runs.append(("perplexity", ["perplexity", text_file]))
        for name, args in runs:
            out = os.path.join(folder, name + ".json")
            command = [bench, *args, "--model", str(model), "--json", out]
            print("$", " ".join(command), flush=True)
            subprocess.run(command, check=True)
            figures[name] = json.load(open(out))["figures"]
    return figures


def llama_side(model, threads, characters, perplexity=True):
    import numpy as np
    import llama_cpp

    started = time.perf_counter()
    llm = llama_cpp.Llama(model_path=str(model), n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=threads,
                          n_threads_batch=threads, logits_all=True, verbose=False)
    load_seconds = time.perf_counter() - started
    ids = llm.tokenize(lessons_text().encode("utf-8"), add_bos=False, special=False)
    scored_ids = llm.tokenize(perplexity_text(characters).encode("utf-8"), add_bos=False, special=False)

    def perf():
        data = llama_cpp.llama_perf_context(llm.ctx)
        return data.t_p_eval_ms, data.n_p_eval, data.t_eval_ms, data.n_eval

    # Prompt processing: one 512-token batch.
    llm.reset()
    llama_cpp.llama_perf_context_reset(llm.ctx)
    prompt = ids[:512]
    prompt_wall = time.perf_counter()
    llm.eval(prompt)
    prompt_wall = time.perf_counter() - prompt_wall
    t_p, n_p, _, _ = perf()
    # Generation: 128 single-token steps, greedy, never stopping early.
    llama_cpp.llama_perf_context_reset(llm.ctx)
    wall = time.perf_counter()
    for _ in range(128):
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        llm.eval([token])
    wall = time.perf_counter() - wall
    _, _, t_e, n_e = perf()
    # llama.cpp counts a one-token batch as prompt eval when it is the first after a reset.
    if n_e == 0:
        t_p2, n_p2, t_e, n_e = perf()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    # Perplexity: windows of 512 from an empty cache, every token but each window's first scored.
    nll, scored = 0.0, 0
    for start in range(0, len(scored_ids) if perplexity else 0, 512):
        window = scored_ids[start:start + 512]
        llm.reset()
        llm.eval(window)
        logits = np.asarray(llm.scores[:len(window)], dtype=np.float64)
        for k in range(len(window) - 1):
            row = logits[k]
            top = row.max()
            nll += math.log(np.exp(row - top).sum()) - (row[window[k + 1]] - top)
            scored += 1
    return {
        # llama-cpp-python's eval() leaves llama.cpp's prompt counters near zero for a whole-batch
        # eval (seen with 0.3.36: 1.4M tokens/s), so the prompt's rate is wall-clock around eval();
        # the counters' figure is kept beside it.
        "prompt_tokens_per_second": len(prompt) / prompt_wall,
        "prompt_counter_tokens_per_second": n_p / (t_p / 1000) if t_p > 0 else float("nan"),
        "generation_tokens_per_second": n_e / (t_e / 1000) if t_e > 0 else 128 / wall,
        "generation_wall_tokens_per_second": 128 / wall,
        "peak_rss_bytes": peak,
        "load_seconds": load_seconds,
        "perplexity": math.exp(nll / scored) if scored else float("nan"),
        "tokens": len(scored_ids),
        "llama_cpp_python": llama_cpp.__version__,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bench", default=str(ROOT / ".build/release/embeddings-bench"))
    parser.add_argument("--perplexity-characters", type=int, default=40000)
    parser.add_argument("--skip-swift", action="store_true")
    parser.add_argument("--skip-perplexity", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    if not pathlib.Path(args.model).exists():
        sys.exit(f"error: {args.model} not found (embeddings assets install --model HuggingFaceTB/SmolLM2-135M-Instruct)")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; model {args.model}; {args.threads} threads", flush=True)
    perplexity = not args.skip_perplexity
    swift = None if args.skip_swift else swift_side(args.bench, args.model, args.threads, args.perplexity_characters,
                                                    perplexity)
    llama = llama_side(args.model, args.threads, args.perplexity_characters, perplexity)
    rows = [("llama.cpp " + llama["llama_cpp_python"], llama["prompt_tokens_per_second"], llama["generation_tokens_per_second"],
             llama["peak_rss_bytes"], llama["perplexity"])]
    if swift:
        rows.insert(0, ("ContextualEmbeddings (native)", swift["generate"]["prompt_tokens_per_second"],
                        swift["generate"]["generation_tokens_per_second"], swift["generate"]["peak_rss_bytes"],
                        swift["perplexity"]["perplexity"] if perplexity else float("nan")))
    print("\n| Engine | pp512 tokens/s | tg128 tokens/s | peak RSS | perplexity |\n|---|---|---|---|---|")
    for name, pp, tg, rss, ppl in rows:
        print(f"| {name} | {pp:.1f} | {tg:.1f} | {rss / 2**20:.0f} MiB | {ppl:.4f} |")
    if swift:
        s, l = swift["generate"], llama
        print(f"\nratios (ours / llama.cpp): prefill {s['prompt_tokens_per_second'] / l['prompt_tokens_per_second']:.2f}x, "
              f"decode {s['generation_tokens_per_second'] / l['generation_tokens_per_second']:.2f}x, "
              f"peak RSS {s['peak_rss_bytes'] / l['peak_rss_bytes']:.2f}x")
        if "bandwidth_limit_tokens_per_second" in s:
            bound = s["bandwidth_limit_tokens_per_second"]
            print(f"read-bandwidth bound {bound:.1f} tokens/s ({s['read_bandwidth_bytes_per_second'] / 1e9:.1f} GB/s over "
                  f"{s['weight_bytes'] / 2**20:.0f} MiB): ours at {100 * s['generation_tokens_per_second'] / bound:.0f}%, "
                  f"llama.cpp at {100 * l['generation_tokens_per_second'] / bound:.0f}%")
    if args.json:
        json.dump({"cpu": cpu_model(), "threads": args.threads, "swift": swift, "llama_cpp": llama}, open(args.json, "w"), indent=2)


if __name__ == "__main__":
    main()
