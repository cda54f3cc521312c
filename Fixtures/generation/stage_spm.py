"""spm-tokenizer.json, tiny-spm-prefix.gguf, tiny-spm-noprefix.gguf: SentencePiece BPE ("llama") vocabularies.

Trains two small SentencePiece BPE models on the project's Markdown corpus (add_dummy_prefix true, as
Llama 2 / Mistral / Phi-3; false, as Gemma), writes each as a metadata-only GGUF the way llama.cpp's
convert_hf_to_gguf.py writes a SentencePiece vocabulary, and records for every text the ids, offsets and
decodes of (a) the sentencepiece package on the .model, (b) transformers' tokenizer built from the GGUF
and (c) llama.cpp (llama-cpp-python, run in its own environment by spm_llamacpp.py) on the GGUF.
Needs no model file (torch only because transformers' GGUF reader imports it).
"""

import io
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from common import HERE, REPO, log, sha256_file, versions, write_cases
from stage_tokenizer import TEXT_SOURCES

CORPUS_ROOT = REPO / "Fixtures" / "corpus"
SPM_TEXTS = HERE / "spm-texts.json"
# llama-cpp-python's interpreter (Benchmarks/peers/llama-setup.sh makes it); $LLAMA_CPP_PYTHON overrides.
LLAMA_PYTHON = Path(os.environ.get("LLAMA_CPP_PYTHON", REPO / "Benchmarks" / "peers" / ".venv-llama" / "bin" / "python"))
LLAMA_HELPER = HERE / "spm_llamacpp.py"

VOCAB_SIZE = 2000
USER_DEFINED = ["<start_of_turn>", "<end_of_turn>"]
CONTROL = ["<pad>", "<mask>"]

# The two vocabularies: file stem, SentencePiece add_dummy_prefix (= GGUF add_space_prefix), GGUF
# general.architecture, and whether tokenizer_config.json lists <unk> (then CONTROL in the GGUF, else
# UNKNOWN). The architecture decides which tokenizer transformers builds from the file (llama:
# LlamaTokenizer's, which prepends "\u2581" unless the text starts with one; gemma3: GemmaTokenizer, which
# never does); llama.cpp reads only the tokenizer.ggml.* keys.
VARIANTS = [
    ("prefix", True, "llama", True),
    ("noprefix", False, "gemma3", False),
]

# SentencePieceTokenTypes in convert_hf_to_gguf.py
NORMAL, UNKNOWN, CONTROL_T, USER_DEFINED_T, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# llama.cpp's llama_token_attr bits (include/llama.h)
LLAMA_ATTRS = {1: "UNKNOWN", 2: "UNUSED", 4: "NORMAL", 8: "CONTROL", 16: "USER_DEFINED", 32: "BYTE",
               64: "NORMALIZED", 128: "LSTRIP", 256: "RSTRIP", 512: "SINGLE_WORD"}


def corpus_lines():
    """Every non-blank line of the Markdown files under Fixtures/corpus, files in sorted path order."""
    files = sorted(CORPUS_ROOT.rglob("*.md"), key=lambda p: p.relative_to(CORPUS_ROOT).as_posix())
    lines = []
    for f in files:
        for line in f.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                lines.append(line)
    return files, lines


TRAINER_OPTIONS = dict(
    model_type="bpe", vocab_size=VOCAB_SIZE, character_coverage=1.0, byte_fallback=True,
    normalization_rule_name="identity", remove_extra_whitespaces=False, split_digits=True,
    allow_whitespace_only_pieces=True, user_defined_symbols=USER_DEFINED, control_symbols=CONTROL,
    unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1, input_sentence_size=0,
    shuffle_input_sentence=False, max_sentence_length=1 << 16,
)


def train(lines, add_dummy_prefix):
    """The serialized ModelProto. Lines are fed from memory (no file paths end up in the model)."""
    import sentencepiece as spm
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out,
                                   add_dummy_prefix=add_dummy_prefix, minloglevel=2, **TRAINER_OPTIONS)
    return out.getvalue()


def write_hf_dir(directory, model_bytes, list_unk):
    """A model directory as the converter reads it: tokenizer.model, tokenizer_config.json, config.json.

    tokenizer_config.json's added_tokens_decoder lists the control pieces and <unk> as special (the
    converter then types them CONTROL, 3, as it does for today's Llama 2 / Mistral / Gemma repos) and the
    user-defined pieces as not special (USER_DEFINED, 4). With list_unk false, <unk> is left out and keeps
    the type the .model gives it, UNKNOWN (2), as in older conversions.
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tokenizer.model").write_bytes(model_bytes)
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_proto=model_bytes)
    decoder = {}
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        if (sp.is_unknown(i) and list_unk) or sp.is_control(i):
            decoder[str(i)] = {"content": piece, "lstrip": False, "normalized": False, "rstrip": False,
                               "single_word": False, "special": True}
        elif piece in USER_DEFINED:
            # Not special: the converter types these USER_DEFINED (4).
            decoder[str(i)] = {"content": piece, "lstrip": False, "normalized": False, "rstrip": False,
                               "single_word": False, "special": False}
    config = {"add_bos_token": True, "add_eos_token": False, "added_tokens_decoder": decoder,
              "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
              "clean_up_tokenization_spaces": False, "legacy": False, "tokenizer_class": "LlamaTokenizer"}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    (directory / "config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 3,
                                                       "vocab_size": sp.get_piece_size()}), encoding="utf-8")
    return sp


def create_vocab_sentencepiece(dir_model, vocab_size):
    """convert_hf_to_gguf.py's TextModel._create_vocab_sentencepiece, restated (same branches, same order).

    Note what it does not do: it never asks IsUserDefined, so a piece the .model marks USER_DEFINED comes
    out NORMAL (1) unless added_tokens.json or tokenizer_config.json's added_tokens_decoder lists it; there,
    special=true (or a token that looks special) makes it CONTROL (3), else USER_DEFINED (4), with score
    -1000 in both cases.
    """
    from sentencepiece import SentencePieceProcessor
    tokenizer = SentencePieceProcessor()
    tokenizer.LoadFromFile(str(dir_model / "tokenizer.model"))
    tokens = [f"[PAD{i}]".encode("utf-8") for i in range(vocab_size)]
    scores = [-10000.0] * vocab_size
    toktypes = [UNUSED] * vocab_size
    for token_id in range(tokenizer.vocab_size()):
        piece = tokenizer.IdToPiece(token_id)
        text = piece.encode("utf-8")
        score = tokenizer.GetScore(token_id)
        toktype = NORMAL
        if tokenizer.IsUnknown(token_id):
            toktype = UNKNOWN
        elif tokenizer.IsControl(token_id):
            toktype = CONTROL_T
        elif tokenizer.IsUnused(token_id):
            toktype = UNUSED
        elif tokenizer.IsByte(token_id):
            toktype = BYTE
        tokens[token_id] = text
        scores[token_id] = score
        toktypes[token_id] = toktype
    assert not (dir_model / "added_tokens.json").is_file()
    config = json.loads((dir_model / "tokenizer_config.json").read_text(encoding="utf-8"))
    for token_id, token_data in config.get("added_tokens_decoder", {}).items():
        token_id = int(token_id)
        token = token_data["content"]
        if token_data.get("special") or does_token_look_special(token):
            toktypes[token_id] = CONTROL_T
        else:
            token = token.replace("\u2581", " ")  # pre-normalize user-defined spaces
            toktypes[token_id] = USER_DEFINED_T
        scores[token_id] = -1000.0
        tokens[token_id] = token.encode("utf-8")
    return tokens, scores, toktypes


def does_token_look_special(token):
    """convert_hf_to_gguf.py's ModelBase.does_token_look_special."""
    seems = token in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
    seems = seems or (token.startswith("<|") and token.endswith("|>"))
    seems = seems or (token.startswith("<\uff5c") and token.endswith("\uff5c>"))
    seems = seems or (token.startswith("<unused") and token.endswith(">"))
    return seems


def write_gguf(path, arch, name, dir_model, add_space_prefix):
    """Metadata only (no tensors): general.*, the hyperparameters llama.cpp's loader requires, the vocabulary."""
    import gguf
    tokens, scores, toktypes = create_vocab_sentencepiece(dir_model, VOCAB_SIZE)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_context_length(256)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    if arch == "llama":
        w.add_rope_dimension_count(16)
        w.add_vocab_size(VOCAB_SIZE)
    else:
        w.add_key_length(16)
        w.add_value_length(16)
        w.add_sliding_window(64)
    # _set_vocab_sentencepiece
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(toktypes)
    special_vocab = gguf.SpecialVocab(dir_model, n_vocab=len(tokens))
    special_vocab.add_to_gguf(w, quiet=True)
    # LlamaModel writes nothing here (llama.cpp then defaults to true); Gemma's set_vocab writes false.
    w.add_add_space_prefix(add_space_prefix)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tokens, scores, toktypes, special_vocab


# ---------------------------------------------------------------------------------------------
# llama.cpp's SPM tokenizer (src/llama-vocab.cpp: llama_vocab::impl::load, tokenizer_st_partition,
# tokenize's LLAMA_VOCAB_TYPE_SPM case, llm_tokenizer_spm_session, token_to_piece, detokenize), ported
# to Python to give `ids`, `offsets` and `decoded` for every case; checked against llama.cpp itself
# (llama-cpp-python) on every case when that is available. See the docstring of SpmPort.

ATTR_UNKNOWN, ATTR_UNUSED, ATTR_NORMAL, ATTR_CONTROL, ATTR_USER_DEFINED, ATTR_BYTE = 1, 2, 4, 8, 16, 32
TYPE_TO_ATTR = {NORMAL: ATTR_NORMAL, UNKNOWN: ATTR_UNKNOWN, CONTROL_T: ATTR_CONTROL,
                USER_DEFINED_T: ATTR_USER_DEFINED, UNUSED: ATTR_UNUSED, BYTE: ATTR_BYTE}
# Token texts llama.cpp's loader turns CONTROL when the file does not (EOT, EOM, FIM and EOG detection).
LLAMACPP_CONTROL_BY_TEXT = {
    # EOT
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
    "[EOT]", "<\uff5cend\u2581of\u2581sentence\uff5c>", "<end_of_utterance>",
    # EOM
    "<|eom_id|>",
    # FIM
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\uff5cfim\u2581begin\uff5c>", "<PRE>", "\u2581<PRE>",
    "<|code_prefix|>", "<|prefix|>",
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\uff5cfim\u2581hole\uff5c>", "<SUF>", "\u2581<SUF>",
    "<|code_suffix|>", "<|suffix|>",
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\uff5cfim\u2581end\uff5c>", "<MID>", "\u2581<MID>",
    "<|code_middle|>", "<|middle|>",
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
    "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
    "<|file_sep|>",
    # EOG
    "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "</s>", "[EOS]", "<eos>", "<turn|>", "<|tool_response>",
    "[e~[",
}


UTF8_LEN = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4]


class SpmPort:
    """llama.cpp's SPM ("llama") tokenizer and detokenizer, step for step.

    tokenize(text, parse_special):
      1. Partition: for each special token (attr CONTROL, USER_DEFINED or UNKNOWN, longest text first),
         split every raw fragment at each occurrence (left to right) of its text. With parse_special false,
         CONTROL and UNKNOWN tokens are skipped, so only USER_DEFINED ones are matched.
      2. For each raw fragment: prepend " " if add_space_prefix and the previous fragment was a token (or
         this is the first fragment); replace every " " by U+2581; split into UTF-8 characters; push every
         adjacent pair whose concatenation is a vocabulary entry (any type) into a queue ordered by that
         entry's score, highest first, ties to the leftmost; pop, skip stale pairs (a side already merged
         away, or sizes no longer matching), merge, push the new pairs with the left and right neighbours.
      3. Emit each final symbol's id; a symbol that is no vocabulary entry (only possible for a single
         character) is emitted as its UTF-8 bytes' <0xXX> tokens.
    Offsets: each token's [start, end) in code points of the text; a byte token gets its whole
    character's span; an inserted prefix space covers nothing (a token that is only that space gets an
    empty span at its position).
    """

    def __init__(self, tokens, scores, toktypes, add_space_prefix, add_bos=True, bos=1, eos=2):
        self.tokens = [t.decode("utf-8") for t in tokens]
        self.scores = [float(np.float32(s)) for s in scores]
        self.attrs = [TYPE_TO_ATTR[t] for t in toktypes]
        for i, t in enumerate(self.tokens):
            if t in LLAMACPP_CONTROL_BY_TEXT and not self.attrs[i] & ATTR_CONTROL:
                self.attrs[i] |= ATTR_CONTROL
            if self.attrs[i] & ATTR_CONTROL and "unused" in t:
                self.attrs[i] |= ATTR_UNUSED
        self.token_to_id = {t.encode("utf-8"): i for i, t in enumerate(self.tokens)}
        self.add_space_prefix = add_space_prefix
        self.add_bos, self.bos, self.eos = add_bos, bos, eos
        special = [i for i, a in enumerate(self.attrs) if a & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)]
        # std::sort by text length, longest first (ties: ascending id here; llama.cpp's order is unspecified)
        self.special = sorted(special, key=lambda i: -len(self.tokens[i].encode("utf-8")))

    def byte_token(self, b):
        """llama_vocab::byte_to_token: <0xXX>, else the one-byte token, else an error."""
        hex_text = f"<0x{b:02X}>".encode()
        return self.token_to_id[hex_text] if hex_text in self.token_to_id else self.token_to_id[bytes([b])]

    def partition(self, data, parse_special):
        frags = [("raw", 0, len(data))] if data else []
        for sid in self.special:
            if not parse_special and self.attrs[sid] & (ATTR_CONTROL | ATTR_UNKNOWN):
                continue
            pat = self.tokens[sid].encode("utf-8")
            out = []
            for f in frags:
                if f[0] != "raw":
                    out.append(f)
                    continue
                _, start, end = f
                pos = start
                while True:
                    m = data.find(pat, pos, end)
                    if m < 0:
                        break
                    if m > pos:
                        out.append(("raw", pos, m))
                    out.append(("tok", sid, m, m + len(pat)))
                    pos = m + len(pat)
                if pos < end:
                    out.append(("raw", pos, end))
            frags = out
        return frags

    def session(self, text_bytes):
        """llm_tokenizer_spm_session::tokenize on escaped bytes -> [(id, byte_start, byte_end)]."""
        syms = []  # [start, n, prev, next]
        offs = 0
        while offs < len(text_bytes):
            n = min(UTF8_LEN[text_bytes[offs] >> 4], len(text_bytes) - offs)  # unicode_len_utf8
            syms.append([offs, n, len(syms) - 1, -1])
            offs += n
        for i in range(len(syms) - 1):
            syms[i][3] = i + 1
        import heapq
        heap = []

        def try_add(left, right):
            if left == -1 or right == -1:
                return
            a = syms[left][0]
            size = syms[left][1] + syms[right][1]
            tid = self.token_to_id.get(text_bytes[a:a + size])
            if tid is None:
                return
            heapq.heappush(heap, (-self.scores[tid], left, right, size))

        for i in range(1, len(syms)):
            try_add(i - 1, i)
        while heap:
            _, left, right, size = heapq.heappop(heap)
            ls, rs = syms[left], syms[right]
            if ls[1] == 0 or rs[1] == 0 or ls[1] + rs[1] != size:
                continue
            ls[1] += rs[1]
            rs[1] = 0
            ls[3] = rs[3]
            if rs[3] >= 0:
                syms[rs[3]][2] = left
            try_add(ls[2], left)
            try_add(left, ls[3])
        out = []
        i = 0 if syms else -1
        while i != -1:
            start, n, _, nxt = syms[i]
            piece = text_bytes[start:start + n]
            tid = self.token_to_id.get(piece)
            if tid is not None:
                out.append((tid, start, start + n))
            else:
                for j in range(n):
                    out.append((self.byte_token(piece[j]), start + j, start + j + 1))
            i = nxt
        return out

    def tokenize(self, text, parse_special=False):
        data = text.encode("utf-8")
        b2c = byte_to_char_index(text)
        ids, offsets = [], []
        prev_special = True
        for f in self.partition(data, parse_special):
            if f[0] == "tok":
                ids.append(f[1])
                offsets.append([b2c[f[2]], b2c[f[3]]])
                prev_special = True
                continue
            _, start, end = f
            escaped = bytearray()
            src = []  # original byte index of each escaped byte; None for the inserted prefix
            if self.add_space_prefix and prev_special:
                escaped += "\u2581".encode()
                src += [None] * 3
            for k in range(start, end):
                if data[k] == 0x20:
                    escaped += "\u2581".encode()
                    src += [k] * 3
                else:
                    escaped.append(data[k])
                    src.append(k)
            for tid, a, b in self.session(bytes(escaped)):
                covered = [x for x in src[a:b] if x is not None]
                ids.append(tid)
                if covered:
                    offsets.append([b2c[min(covered)], b2c[max(covered)] + 1])
                else:
                    offsets.append([b2c[start], b2c[start]])
            prev_special = False
        return ids, offsets

    def piece(self, tid, special):
        a = self.attrs[tid]
        if not special and a & (ATTR_UNKNOWN | ATTR_CONTROL):
            return b""
        t = self.tokens[tid]
        if a & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED):
            return t.encode("utf-8")
        if a & ATTR_NORMAL:
            return t.replace("\u2581", " ").encode("utf-8")
        if a & ATTR_BYTE:
            return bytes([int(t[3:5], 16)])
        return b""

    def detokenize(self, ids, remove_special=False, unparse_special=False):
        """llama_detokenize: bytes (may be invalid UTF-8)."""
        ids = list(ids)
        remove_space = self.add_space_prefix
        if remove_special and self.add_bos and ids and ids[0] == self.bos:
            remove_space = False
            ids = ids[1:]
        # (add_eos is false for these files: a trailing EOS is kept)
        out = bytearray()
        for tid in ids:
            p = self.piece(tid, unparse_special)
            if remove_space and p[:1] == b" ":
                p = p[1:]
            remove_space = False
            out += p
        return bytes(out)



def load_texts():
    out = []
    for source, path in TEXT_SOURCES + [("generation/spm-texts.json", SPM_TEXTS)]:
        for t in json.loads(path.read_text(encoding="utf-8"))["texts"]:
            out.append((source, t["name"], t["text"]))
    return out


def byte_to_char_index(text):
    """b2c[i] = index of the character containing UTF-8 byte i; b2c[len(bytes)] = len(text)."""
    b2c = []
    for ci, ch in enumerate(text):
        b2c.extend([ci] * len(ch.encode("utf-8")))
    b2c.append(len(text))
    return b2c


def sp_encode(sp, text):
    """ids and [start, end) character offsets from sentencepiece's immutable proto (byte offsets)."""
    proto = sp.encode(text, return_type="proto")
    b2c = byte_to_char_index(text)
    ids, offsets = [], []
    for p in proto.pieces:
        ids.append(p.id)
        if p.end > p.begin:
            offsets.append([b2c[p.begin], b2c[p.end - 1] + 1])
        else:
            offsets.append([b2c[p.begin], b2c[p.begin]])
    return ids, offsets


def run_llamacpp(gguf_path, texts, decodes, llama_python):
    req = json.dumps({"model": str(gguf_path), "texts": texts, "decode": decodes}, ensure_ascii=False)
    proc = subprocess.run([str(llama_python), str(LLAMA_HELPER)], input=req.encode("utf-8"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"llama.cpp helper failed ({proc.returncode}):\n{proc.stderr.decode()[-4000:]}")
    return json.loads(proc.stdout.decode("utf-8"))


def attr_names(mask):
    return [n for bit, n in LLAMA_ATTRS.items() if mask & bit]


# Id sequences for the decode checks, as token texts ("<0xF0>" is the byte token); "ids:TEXT" expands to
# the port's ids for TEXT (parse_special false).
DECODE_CHECKS = [
    ("bos_then_text", ["<s>", "ids:Hello world"]),
    ("text_then_eos", ["ids:Hello world", "</s>"]),
    ("bos_then_leading_spaces", ["<s>", "ids:  two spaces"]),
    ("leading_spaces", ["ids:  two spaces"]),
    ("turn_tokens", ["<start_of_turn>", "ids:user", "<0x0A>", "ids:Hi", "<end_of_turn>", "<0x0A>"]),
    ("control_tokens", ["<pad>", "<mask>", "ids:x", "</s>", "<s>"]),
    ("unknown_token", ["<unk>", "ids:x"]),
    ("metaspace_alone", ["\u2581"]),
    ("metaspace_pair_first", ["\u2581\u2581", "ids:x"]),
    ("space_byte_first", ["<0x20>", "ids:x"]),
    ("bytes_valid_cjk", ["<0xE4>", "<0xBD>", "<0xA0>"]),
    ("bytes_truncated", ["<0xF0>", "<0x9F>", "<0x99>"]),
    ("byte_lone_continuation", ["<0x80>", "ids:a"]),
    ("bytes_newline_tab", ["ids:a", "<0x0A>", "<0x09>", "ids:b"]),
    ("eos_bos_inside", ["ids:a", "</s>", "<s>", "ids:b"]),
    ("empty", []),
]


def decode_check_ids(port, spec):
    out = []
    for item in spec:
        if item.startswith("ids:"):
            out += port.tokenize(item[4:])[0]
        else:
            out.append(port.token_to_id[item.encode("utf-8")])
    return out


def run(out_dir, llama_python=LLAMA_PYTHON):
    import sentencepiece as spm
    from transformers import AutoTokenizer

    files, lines = corpus_lines()
    texts = load_texts()
    plain_texts = [t for _, _, t in texts]
    llama_ok = Path(llama_python).is_file()
    if not llama_ok:
        log(f"spm: {llama_python} not found: llama.cpp not run (ids come from the port alone)")

    cases = []
    variants_header = {}
    lc_version = None
    for stem, prefix, arch, list_unk in VARIANTS:
        model_bytes = train(lines, prefix)
        assert model_bytes == train(lines, prefix), "training is not deterministic"
        model_path = out_dir / f"tiny-spm-{stem}.model"
        model_path.write_bytes(model_bytes)
        log(f"wrote {model_path} ({len(model_bytes)} bytes)")
        gguf_path = out_dir / f"tiny-spm-{stem}.gguf"
        with tempfile.TemporaryDirectory() as tmp:
            dir_model = Path(tmp) / "hf"
            sp = write_hf_dir(dir_model, model_bytes, list_unk)
            tokens, scores, toktypes, special_vocab = write_gguf(gguf_path, arch, f"tiny-spm-{stem}", dir_model,
                                                                 prefix)
            # The same vocabulary under the other architecture, to show what transformers makes of it.
            other_arch = "gemma3" if arch == "llama" else "llama"
            other_path = Path(tmp) / "other" / gguf_path.name
            other_path.parent.mkdir()
            write_gguf(other_path, other_arch, f"tiny-spm-{stem}", dir_model, prefix)
            hf_other = AutoTokenizer.from_pretrained(str(other_path.parent), gguf_file=other_path.name)
        log(f"wrote {gguf_path} ({gguf_path.stat().st_size} bytes)")
        with tempfile.TemporaryDirectory() as tmp:
            # A folder holding only the GGUF: next to it, tokenizer.json (another fixture) would be picked up.
            os.symlink(gguf_path.resolve(), Path(tmp) / gguf_path.name)
            hf = AutoTokenizer.from_pretrained(tmp, gguf_file=gguf_path.name)
        ids_of = special_vocab.special_token_ids
        port = SpmPort(tokens, scores, toktypes, prefix, add_bos=special_vocab.add_special_token.get("bos", True),
                       bos=ids_of["bos"], eos=ids_of["eos"])
        specials = {t.decode("utf-8"): i for i, (t, ty) in enumerate(zip(tokens, toktypes))
                    if ty in (UNKNOWN, CONTROL_T, USER_DEFINED_T)}
        checks = [(name, decode_check_ids(port, spec)) for name, spec in DECODE_CHECKS]
        lc = run_llamacpp(gguf_path, plain_texts, [ids for _, ids in checks], llama_python) if llama_ok else None
        if lc is not None:
            lc_version = lc["info"]["version"]
            assert lc["info"]["attrs"] == port.attrs, "the port's token attributes differ from llama.cpp's"

        stats = {k: [] for k in ("port_differs_from_llamacpp", "sentencepiece_differs", "transformers_differs",
                                 "transformers_offsets_differ", "decoded_differs_from_text",
                                 "transformers_other_architecture_differs")}
        for k, (source, name, text) in enumerate(texts):
            key = f"{source}:{name}"
            ids, offsets = port.tokenize(text)
            decoded = port.detokenize(ids).decode("utf-8", errors="replace")
            case = {"variant": stem, "source": source, "name": name, "text": text, "ids": ids, "offsets": offsets}
            if decoded != text:
                case["decoded"] = decoded
            has_special = any(s in text for s in specials)
            if has_special:
                case["ids_parse_special"] = port.tokenize(text, parse_special=True)[0]
            if lc is not None:
                r = lc["results"][k]
                same = (r["ids"] == ids and r["decoded"] == decoded and
                        r["decoded_unparse_special"] == port.detokenize(ids, False, True).decode("utf-8", "replace")
                        and (not has_special or r["ids_parse_special"] == case["ids_parse_special"]))
                if not same:
                    stats["port_differs_from_llamacpp"].append(key)
                    case["ids_llamacpp"] = r["ids"]
                    case["decoded_llamacpp"] = r["decoded"]
            if decoded != text:
                stats["decoded_differs_from_text"].append(key)
            ids_sp = sp.encode(text)
            if ids_sp != ids:
                stats["sentencepiece_differs"].append(key)
                case["ids_sentencepiece"] = ids_sp
            dec_sp = sp.decode(ids_sp)
            if dec_sp != decoded:
                case["decoded_sentencepiece"] = dec_sp
            t = hf(text, add_special_tokens=False, return_offsets_mapping=True)
            ids_tf = list(t["input_ids"])
            off_tf = [list(o) for o in t["offset_mapping"]]
            if ids_tf != ids:
                stats["transformers_differs"].append(key)
                case["ids_transformers_gguf"] = ids_tf
            if ids_tf != ids:
                case["offsets_transformers_gguf"] = off_tf
            elif off_tf != offsets:
                # One rule only: a token that is the inserted prefix alone ("\u2581" before a character with no
                # "\u2581"-token of its own) is [0, 0] here and [0, 1] in transformers.
                diff = [i for i, (a, b) in enumerate(zip(offsets, off_tf)) if a != b]
                assert diff == [0] and offsets[0] == [0, 0] and off_tf[0] == [0, 1], (key, offsets, off_tf)
                stats["transformers_offsets_differ"].append(key)
            if list(hf_other(text, add_special_tokens=False)["input_ids"]) != ids:
                stats["transformers_other_architecture_differs"].append(key)
            dec_tf = hf.decode(ids_tf, skip_special_tokens=False)
            if dec_tf != decoded:
                case["decoded_transformers_gguf"] = dec_tf
            if has_special:
                case["ids_transformers_gguf_split_special"] = list(
                    hf(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])
            cases.append(case)

        decode_cases = []
        for j, (name, ids) in enumerate(checks):
            d = {"name": name, "ids": ids, "tokens": [port.tokens[i] for i in ids]}
            for rs in (False, True):
                for us in (False, True):
                    d[f"llamacpp_remove_special_{str(rs).lower()}_unparse_special_{str(us).lower()}_hex"] = \
                        port.detokenize(ids, rs, us).hex()
            if lc is not None:
                got = lc["decodes"][j]
                want = {k: v for k, v in d.items() if k.endswith("_hex")}
                if got != want:
                    stats["port_differs_from_llamacpp"].append(f"decode:{name}")
                    d["llamacpp"] = got
            d["transformers_gguf"] = hf.decode(ids, skip_special_tokens=False)
            d["transformers_gguf_skip_special"] = hf.decode(ids, skip_special_tokens=True)
            d["sentencepiece"] = sp.decode(ids)
            decode_cases.append(d)

        type_counts = {str(ty): toktypes.count(ty) for ty in sorted(set(toktypes))}
        hf_state = json.loads(hf.backend_tokenizer.to_str())
        vh = {
            "gguf": gguf_path.name, "gguf_bytes": gguf_path.stat().st_size, "gguf_sha256": sha256_file(gguf_path),
            "sentencepiece_model": model_path.name, "sentencepiece_model_sha256": sha256_file(model_path),
            "architecture": arch, "add_dummy_prefix": prefix, "add_space_prefix": prefix,
            "unk_listed_in_tokenizer_config": list_unk,
            "transformers_other_architecture": {"architecture": other_arch,
                                                "tokenizer_class": type(hf_other).__name__},
            "vocab_size": len(tokens), "token_type_counts": type_counts,
            "special_tokens": {t: {"id": i, "type": toktypes[i], "llamacpp_attr": attr_names(port.attrs[i])}
                               for t, i in specials.items()},
            "special_token_ids": dict(ids_of),
            "add_special_token": dict(special_vocab.add_special_token),
            "byte_token_ids": {"<0x00>": port.token_to_id[b"<0x00>"], "<0xFF>": port.token_to_id[b"<0xFF>"]},
            "transformers_tokenizer_class": type(hf).__name__,
            "transformers_backend": {k: hf_state.get(k) for k in ("normalizer", "pre_tokenizer", "decoder")},
            "transformers_added_tokens": [{"id": a["id"], "content": a["content"], "special": a["special"]}
                                          for a in hf_state["added_tokens"]],
            "differs": {k: v for k, v in stats.items()
                        if k not in ("transformers_offsets_differ", "transformers_other_architecture_differs")},
            "counts": {k: len(v) for k, v in stats.items()},
            "decode_checks": decode_cases,
        }
        if lc is not None:
            info = lc["info"]
            vh["llamacpp"] = {"bos": info["bos"], "eos": info["eos"], "eot": info["eot"], "eog": info["eog"],
                              "add_bos": info["add_bos"]}
        variants_header[stem] = vh
        log(f"spm {stem}: {json.dumps(vh['counts'])}")

    header = {
        "generator": dict(versions(), sentencepiece=spm.__version__, llama_cpp_python=lc_version),
        "corpus": {"files": len(files), "lines": len(lines), "rule": "every non-blank line of every .md file under "
                   "Fixtures/corpus (sorted relative paths), one sentence per line, fed in that order"},
        "trainer_options": TRAINER_OPTIONS,
        "variants": variants_header,
        "llamacpp_checked": lc_version is not None,
        "offsets": "[start, end) in Unicode code points (Python str indices) of the text",
        "case_count": len(cases),
    }
    write_cases(out_dir / "spm-tokenizer.json", header, cases)
