#!/usr/bin/env python3
"""Do `embeddings ask` answers end on their own? Runs every question of an evaluation set through
`ask --json --greedy` with one model and reports, per question and overall, how many tokens the
answer took, whether it reached --max-tokens, and decode speed.

    python3 Benchmarks/answer_lengths.py --model FILE.gguf --index lessons.index \
        [--eval Fixtures/eval/swift-lessons.json] [--max-tokens 256] [--every 1] [--out report.json]

Python's standard library only; the CLI is `.build/release/embeddings` unless --cli says otherwise.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path


def main():
    root = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a GGUF file or a known model identifier")
    parser.add_argument("--index", required=True, help="an index written by 'embeddings index --out'")
    parser.add_argument("--eval", default=str(root / "Fixtures/eval/swift-lessons.json"))
    parser.add_argument("--cli", default=str(root / ".build/release/embeddings"))
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--every", type=int, default=1, help="take every n-th question")
    parser.add_argument("--out", help="write the per-question results as JSON here")
    args = parser.parse_args()

    questions = [case["question"] for case in json.loads(Path(args.eval).read_text())["cases"]]
    questions = questions[:: max(1, args.every)]
    results = []
    for number, question in enumerate(questions, 1):
        run = subprocess.run(
            [args.cli, "ask", "--index", args.index, "--model", args.model, "--greedy", "--json",
             "--max-tokens", str(args.max_tokens), question],
            capture_output=True, text=True)
        if run.returncode != 0:
            print(f"[{number}] exit {run.returncode}: {run.stderr.strip()[:300]}", file=sys.stderr)
            results.append({"question": question, "error": run.stderr.strip()})
            continue
        reply = json.loads(run.stdout)
        tokens = reply["tokens"]["answer"]
        result = {
            "question": question, "answer_tokens": tokens, "reached_limit": tokens >= args.max_tokens,
            "grounding": reply.get("grounding"), "tokens_per_second": reply["timings"].get("tokens_per_second"),
            "answer": reply["answer"],
        }
        results.append(result)
        mark = "LIMIT" if result["reached_limit"] else "stop "
        print(f"[{number:3}/{len(questions)}] {mark} {tokens:4} tokens  {question}", flush=True)

    answered = [r for r in results if "answer_tokens" in r]
    lengths = [r["answer_tokens"] for r in answered]
    limited = sum(r["reached_limit"] for r in answered)
    print()
    print(f"model: {args.model}")
    print(f"questions: {len(questions)}, answered: {len(answered)}, errors: {len(results) - len(answered)}")
    if lengths:
        print(f"stopped on their own: {len(answered) - limited} of {len(answered)}; reached --max-tokens "
              f"{args.max_tokens}: {limited}")
        print(f"answer tokens: median {statistics.median(lengths)}, mean {statistics.mean(lengths):.1f}, "
              f"max {max(lengths)}")
        speeds = [r["tokens_per_second"] for r in answered if r["tokens_per_second"]]
        if speeds:
            print(f"decode tokens/s (per answer, median): {statistics.median(speeds):.1f}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return 0 if answered else 1


if __name__ == "__main__":
    sys.exit(main())
