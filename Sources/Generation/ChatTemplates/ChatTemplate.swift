import Foundation

/// A model's chat template: the Jinja program in `tokenizer.chat_template` that turns a conversation
/// into prompt text, rendered exactly as Hugging Face transformers'
/// `apply_chat_template(messages, tokenize=False, add_generation_prompt=…)` renders it.
///
/// The template is parsed once, when it is created; anything outside the supported Jinja subset is an
/// error then, naming the construct and its line and column, never a silently different prompt.
///
/// ```swift
/// let template = try ChatTemplate(source: gguf.chatTemplate)
/// let prompt = try template.render(
///     messages: [.system("Answer briefly."), .user("What is a B-tree?")],
///     addGenerationPrompt: true,
///     variables: ["bos_token": "<|im_start|>", "eos_token": "<|im_end|>"])
/// ```
///
/// **The environment.** transformers renders in an `ImmutableSandboxedEnvironment` with
/// `trim_blocks=True` and `lstrip_blocks=True`, the `loopcontrols` extension (`{% break %}`,
/// `{% continue %}`), its `{% generation %}` tag, a `tojson` filter that is Python's `json.dumps`
/// (no HTML escaping, `indent`, `separators`, `sort_keys`), and the globals `raise_exception(message)`
/// and `strftime_now(format)`. Undefined names are Jinja's default `Undefined`: they print as "" and
/// are false, but attributes of them, arithmetic and comparisons with them fail.
///
/// **Supported.** Text, comments, `{% raw %}`, whitespace control (`{%- -%}`, `{{- -}}`, `{#- -#}`,
/// `{%+ +%}`); `if`/`elif`/`else`, `for` (with tuple unpacking, an `if` filter, `else`, `loop.index`,
/// `index0`, `revindex`, `revindex0`, `first`, `last`, `length`, `previtem`, `nextitem`, `cycle`),
/// `set` (names, tuples, `ns.attribute` on a `namespace()`, and block `{% set x %}…{% endset %}`),
/// `macro` (defaults, keyword arguments, `varargs`/`kwargs`, recursion), `break`, `continue`,
/// `generation`. Expressions: literals (strings with Python escapes, integers,
/// floats, booleans, `none`, lists, tuples, dicts), attributes and subscripts, slices, arithmetic
/// (`+ - * / // % **`), `~`, comparisons (chained), `in`/`not in`, `and`/`or`/`not`, `x if c else y`.
/// Filters: `abs attr capitalize count default (d) escape (e) first float indent int items join last
/// length list lower map reject rejectattr replace reverse round safe select selectattr string sum
/// title tojson trim upper`. Tests: `boolean callable defined divisibleby eq equalto even false filter
/// float ge greaterthan gt in integer iterable le lessthan lower lt mapping ne none number odd sameas
/// sequence string test true undefined upper` and the operator forms. Globals: `range namespace dict
/// raise_exception strftime_now`. Methods: `strip lstrip rstrip split rsplit splitlines startswith
/// endswith upper lower title capitalize replace find rfind index count join removeprefix
/// removesuffix isdigit isalpha isalnum isspace islower isupper` on strings, `items keys values get`
/// on dicts, `count index` on lists.
///
/// **Refused when loaded** (``ChatTemplateError/Code-swift.struct/unsupported``): `call` blocks and
/// `caller()`, `filter` blocks, `with`, `include`, `import`, `extends`, `block`, `autoescape`, `do`,
/// recursive loops, other filters (`sort`, `dictsort`, `unique`, `min`, `max`, `format`,
/// `truncate`…), the `escaped` test, other methods (`format`, `zfill`…), `*args`/`**kwargs`, calls of
/// computed values. At render time, `%`-formatting of strings is refused.
///
/// **Known differences from Python.** Integers are 64-bit (overflow is an error, not a big integer);
/// `range()` and `dict.items()`/`keys()`/`values()` return lists, so printing one directly differs
/// from Python's `range(0, 3)` and `dict_items([...])`; strings carry no Markup flag, so `x | safe | e`
/// escapes where Jinja would not; `is sameas` compares values (identity only for namespaces).
package struct ChatTemplate: Sendable {
    /// The prompt format a template produces, recognised from its special tokens. Informational: the
    /// template itself always decides the text.
    package enum Family: Sendable, Hashable {
        /// `<|im_start|>role … <|im_end|>` (SmolLM2, Qwen).
        case chatML
        /// `<|start_header_id|>role<|end_header_id|>` (Llama 3, 3.1, 3.2).
        case llama3
        /// Anything else.
        case other
    }

    /// Bounds that make a hostile template fail with ``ChatTemplateError/Code-swift.struct/limitExceeded``
    /// instead of exhausting the stack, memory or time.
    package struct Limits: Sendable, Hashable {
        /// How deeply blocks and expression operands may nest (each `if`/`for` block, bracket and
        /// operator level counts one), checked when the template is loaded; also how deeply macro
        /// calls may nest when rendering. Default 64.
        package var maximumNestingDepth: Int
        /// The most UTF-8 bytes one render may write, and the longest string or list any operation may
        /// build. Default 8 MiB.
        package var maximumOutputLength: Int
        /// The most work one render may spend, in units of about one expression evaluation: one per
        /// node and expression, four per loop iteration, one per 64 bytes of every string built or
        /// scanned and per 16 items of every list. Default 2^23 (about 8.4 million): real templates
        /// spend well under 1% of it on a 500-message conversation, and a runaway loop stops within
        /// about a second.
        package var maximumWork: Int

        /// Limits from their parts.
        /// - Precondition: every bound is positive.
        package init(maximumNestingDepth: Int = 64, maximumOutputLength: Int = 8 << 20, maximumWork: Int = 1 << 23) {
            precondition(
                maximumNestingDepth > 0 && maximumOutputLength > 0 && maximumWork > 0, "limits must be positive")
            self.maximumNestingDepth = maximumNestingDepth
            self.maximumOutputLength = maximumOutputLength
            self.maximumWork = maximumWork
        }

        /// The default limits, generous for every real template.
        package static let `default` = Limits()
    }

    /// The template's Jinja source.
    package let source: String
    /// The prompt format, recognised from the source's special tokens.
    package let family: Family
    /// The bounds the template was parsed with and renders under.
    package let limits: Limits
    private let nodes: [JinjaNode]

    /// Parses a chat template.
    ///
    /// - Throws: ``ChatTemplateError/Code-swift.struct/syntax`` for malformed Jinja,
    ///   ``ChatTemplateError/Code-swift.struct/unsupported`` for Jinja outside the supported subset,
    ///   ``ChatTemplateError/Code-swift.struct/limitExceeded`` for nesting deeper than
    ///   ``Limits/maximumNestingDepth``; each with the line and column.
    /// - Complexity: O(n) in the length of `source`.
    package init(source: String, limits: Limits = .default) throws(ChatTemplateError) {
        var lexer = JinjaLexer(source: source)
        let segments = try lexer.tokenize()
        var parser = JinjaParser(
            segments: segments, sourceMap: lexer.sourceMap, maximumDepth: limits.maximumNestingDepth)
        self.nodes = try parser.parseTemplate()
        self.source = source
        self.limits = limits
        if source.contains("<|im_start|>") {
            family = .chatML
        } else if source.contains("<|start_header_id|>") {
            family = .llama3
        } else {
            family = .other
        }
    }

    /// The prompt for a conversation, as `apply_chat_template(messages, tokenize=False,
    /// add_generation_prompt=addGenerationPrompt, **variables)` returns it.
    ///
    /// Like transformers, the template also sees `tools` and `documents` as `none` unless `variables`
    /// gives them. Pass the model's special tokens (`bos_token`, `eos_token`…) in `variables`.
    ///
    /// ```swift
    /// let prompt = try template.render(messages: [.user("Hi")], addGenerationPrompt: true,
    ///                                  variables: ["bos_token": "<|begin_of_text|>"])
    /// ```
    ///
    /// - Parameters:
    ///   - messages: The conversation; each message is the dict `{"role", "content"}`.
    ///   - addGenerationPrompt: Whether to end with the header that starts the assistant's reply.
    ///   - variables: More template variables; `messages` and `add_generation_prompt` are always the
    ///     two parameters above.
    ///   - now: The clock `strftime_now` reads (Llama 3.2 prints today's date), in the current time
    ///     zone. Pass a fixed date for reproducible prompts.
    /// - Throws: ``ChatTemplateError`` when the template raises
    ///   (``ChatTemplateError/Code-swift.struct/raisedByTemplate``, e.g. roles out of order), applies an
    ///   operation to the wrong types, or exceeds ``limits``.
    /// - Complexity: O(output length + work), bounded by ``limits``.
    package func render(
        messages: [ChatMessage], addGenerationPrompt: Bool, variables: [String: JinjaValue] = [:], now: Date = Date()
    ) throws(ChatTemplateError) -> String {
        try render(
            messageValues: messages.map(\.jinjaValue), addGenerationPrompt: addGenerationPrompt, variables: variables,
            now: now)
    }

    /// The prompt for a conversation given as template values, for messages with fields beyond role and
    /// content (`tool_calls`, `name`, structured `content`).
    ///
    /// ```swift
    /// let call: JinjaValue = ["role": "assistant", "content": "",
    ///     "tool_calls": [["type": "function", "function": ["name": "now", "arguments": [:]]]]]
    /// let prompt = try template.render(messageValues: [["role": "user", "content": "Time?"], call],
    ///                                  addGenerationPrompt: false)
    /// ```
    ///
    /// - Complexity: O(output length + work), bounded by ``limits``.
    package func render(
        messageValues: [JinjaValue], addGenerationPrompt: Bool, variables: [String: JinjaValue] = [:],
        now: Date = Date()
    ) throws(ChatTemplateError) -> String {
        var context: [String: JinjaValue] = ["tools": .none, "documents": .none]
        context.merge(variables) { _, given in given }
        context["messages"] = .array(messageValues)
        context["add_generation_prompt"] = .boolean(addGenerationPrompt)
        return try render(context: context, now: now)
    }

    /// The template rendered with exactly these variables and no others (no `messages` or `tools`
    /// defaults): Jinja's `template.render(**context)` in transformers' environment.
    ///
    /// - Complexity: O(output length + work), bounded by ``limits``.
    package func render(context: [String: JinjaValue], now: Date = Date()) throws(ChatTemplateError) -> String {
        try JinjaInterpreter(variables: context, limits: limits, now: now).render(nodes)
    }
}
