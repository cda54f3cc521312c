"""The exported vectors give FAISS the same top-10 as `embeddings search --mode semantic`.

Usage: faiss_export_check.py EMBEDDINGS_BINARY INDEX_FILE WORK_DIR QUESTION...

Exports the index as npy and as fvecs (with their .ids.txt), embeds each question with
`embeddings embed`, searches both exports with faiss.IndexFlatIP (unit vectors: inner product is
cosine), applies the CLI's semantic-mode rules to FAISS's full ranking (one hit per section, none
below the 0.35 minimum similarity), and checks that the ids equal the CLI's top-10, order included
(a swap is allowed only between scores within 1e-5: float ties). Exits 1 on any difference.
"""
import json
import re
import subprocess
import sys

import faiss
import numpy as np

MINIMUM_SIMILARITY = 0.35  # RetrievalSettings.minimumSimilarity


def section(chunk_id):
    """HybridRetriever.sectionID: the id without a `-N` (N >= 2) piece suffix after '#'."""
    head, sep, label = chunk_id.rpartition("#")
    if not sep:
        return chunk_id
    m = re.fullmatch(r"(.*)-(\d+)", label)
    if m and int(m.group(2)) >= 2:
        return head + "#" + m.group(1)
    return chunk_id


def read_fvecs(path):
    raw = np.fromfile(path, dtype=np.int32)
    d = raw[0]
    return raw.reshape(-1, d + 1)[:, 1:].copy().view(np.float32)


def main():
    binary, index_file, work, questions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    exports = {}
    for fmt in ("npy", "fvecs"):
        out = f"{work}/vectors.{fmt}"
        subprocess.run([binary, "export", "--index", index_file, "--format", fmt, "--out", out, "--quiet"], check=True)
        ids = open(out + ".ids.txt", encoding="utf-8").read().split("\n")[:-1]
        vectors = np.load(out) if fmt == "npy" else read_fvecs(out)
        assert vectors.shape == (len(ids), vectors.shape[1]), (fmt, vectors.shape, len(ids))
        exports[fmt] = (ids, vectors.astype(np.float32))
    lines = "".join(json.dumps({"id": str(i), "text": q}) + "\n" for i, q in enumerate(questions))
    embedded = subprocess.run([binary, "embed", "--quiet"], input=lines, capture_output=True, text=True, check=True).stdout
    query_vectors = np.array([json.loads(l)["vector"] for l in embedded.splitlines()], dtype=np.float32)
    failures = 0
    for q, question in enumerate(questions):
        cli = json.loads(subprocess.run([binary, "search", "--index", index_file, "--mode", "semantic", "--k", "10", "--json", question],
                                        capture_output=True, text=True, check=True).stdout)
        cli_hits = [(h["id"], h["score"]) for h in cli["hits"]]
        for fmt, (ids, vectors) in exports.items():
            index = faiss.IndexFlatIP(vectors.shape[1])
            index.add(vectors)
            scores, rows = index.search(query_vectors[q:q + 1], len(ids))
            hits, seen = [], set()
            for score, row in zip(scores[0], rows[0]):
                if score < MINIMUM_SIMILARITY or len(hits) == 10:
                    break
                if section(ids[row]) in seen:
                    continue
                seen.add(section(ids[row]))
                hits.append((ids[row], float(score)))
            same = len(hits) == len(cli_hits) and all(
                a[0] == b[0] or abs(a[1] - b[1]) < 1e-5 for a, b in zip(hits, cli_hits))
            if not same:
                failures += 1
                print(f"DIFFERENT ({fmt}) for {question!r}:\n  faiss {hits}\n  cli   {cli_hits}", file=sys.stderr)
        print(f"{question!r}: {len(cli_hits)} hits, FAISS agrees on npy and fvecs" if failures == 0 else f"{question!r}: checked")
    if failures:
        sys.exit(1)
    print(f"faiss export check: {len(questions)} questions, npy and fvecs, same top-10 ids as the CLI")


if __name__ == "__main__":
    main()
