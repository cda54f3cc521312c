import BytePairEncoding
import ChatTemplates
import Foundation
import Tokenization

/// A conversation laid out by the model's chat template and tokenized, with every token's range
/// in the prompt text.
///
/// Control tokens (`<|im_start|>`, `<|im_end|>`, …) come only from the template: the same
/// characters inside a message are read as text, so a message cannot close its own turn or open
/// another role's. (transformers' `apply_chat_template(tokenize=True)` reads them as control
/// tokens wherever they are; on messages without such characters the ids are identical.)
package struct ChatPrompt: Sendable {
    /// The prompt text, as the template renders it.
    package let text: String
    /// Its tokens, each with its range in `text` (control tokens marked special).
    package let tokens: [Token]

    /// The token ids.
    package var ids: [Int] { tokens.map(\.id) }
}

extension LlamaModel {
    /// The conversation `messages` as the model's chat template lays it out, tokenized.
    ///
    /// - Parameters:
    ///   - messages: the conversation, oldest first.
    ///   - system: a system message put first (nil: the messages' own, or the template's default).
    ///   - addGenerationPrompt: whether to end with the header that opens the assistant's answer.
    ///   - now: the date templates that print one (Llama 3.1) read.
    /// - Throws: `LlamaDecoderError`: `.unsupported` when the file has no chat template or its template
    ///   uses Jinja this interpreter does not support, `.invalidArgument` when the template rejects
    ///   the conversation (roles out of order) or changes a message's text in a way that cannot be
    ///   traced back.
    package func chatPrompt(
        _ messages: [ChatMessage], system: String? = nil, addGenerationPrompt: Bool = true,
        now: Date = Date()
    ) throws(LlamaDecoderError) -> ChatPrompt {
        var conversation = messages
        if let system { conversation.insert(.init(role: .system, content: system), at: 0) }
        return try chatPrompt(
            messageValues: conversation.map(\.jinjaValue), addGenerationPrompt: addGenerationPrompt, now: now)
    }

    /// The conversation given as template values, for messages with fields beyond role and content
    /// (an assistant's `tool_calls`), and the `tools` the template lists, laid out by the model's
    /// chat template and tokenized: what transformers' `apply_chat_template(messages, tools=…)`
    /// renders.
    ///
    /// Every string inside the values is data: control-token text in a message, an argument or a
    /// tool's description is read as text, as in `chatPrompt(_:system:addGenerationPrompt:now:)`.
    /// - Parameters:
    ///   - messageValues: the messages (`{"role", "content", "tool_calls", …}`), oldest first.
    ///   - tools: the tool definitions (`{"type": "function", "function": {…}}`), or nil for none.
    /// - Throws: as `chatPrompt(_:system:addGenerationPrompt:now:)`.
    package func chatPrompt(
        messageValues: [JinjaValue], tools: [JinjaValue]? = nil, addGenerationPrompt: Bool = true,
        now: Date = Date()
    ) throws(LlamaDecoderError) -> ChatPrompt {
        guard let chatTemplate else {
            throw .unsupported(
                "\(name) has no chat template (tokenizer.chat_template; a base model, not an instruct one?): give one at load (LlamaModel(contentsOf:chatTemplate:), --chat-template FILE)"
            )
        }
        let template: ChatTemplate
        switch chatTemplate {
        case .success(let parsed): template = parsed
        case .failure(let error): throw .unsupported("\(name)'s chat template: \(error.description)")
        }
        var escaper = ControlTokenEscaper(tokenizer: tokenizer)
        let escaped = messageValues.map { escaper.escape($0) }
        var variables: [String: JinjaValue] = [:]
        if let tools { variables["tools"] = .array(tools.map { escaper.escape($0) }) }
        if let bos = tokenizer.beginOfSequenceID { variables["bos_token"] = .string(tokenizer.tokens[bos]) }
        if let eos = tokenizer.endOfSequenceID { variables["eos_token"] = .string(tokenizer.tokens[eos]) }
        let rendered: String
        do {
            rendered = try template.render(
                messageValues: escaped, addGenerationPrompt: addGenerationPrompt, variables: variables, now: now)
        } catch {
            throw .invalidArgument("the chat template: \(error.description)")
        }
        let (text, matches) = try escaper.restore(rendered)
        return ChatPrompt(text: text, tokens: tokenizer.encode(text, controlTokens: matches))
    }
}

/// Hides control-token text inside messages from the tokenizer while a template renders them:
/// each occurrence becomes a marker of private-use scalars from the end of plane 16 (U+10FFF0,
/// digits U+10FFE0…U+10FFE9, U+10FFF1), which no template changes (they are not letters, spaces
/// or digits), and comes back afterwards. Those scalars already in a message are hidden the same way.
struct ControlTokenEscaper {
    let tokenizer: BytePairTokenizer
    private(set) var originals: [String] = []

    private static let open: Unicode.Scalar = "\u{10FFF0}", close: Unicode.Scalar = "\u{10FFF1}"
    private static let digits: ClosedRange<UInt32> = 0x10FFE0...0x10FFE9
    private static let markerRange: ClosedRange<UInt32> = 0x10FFE0...0x10FFF1

    init(tokenizer: BytePairTokenizer) { self.tokenizer = tokenizer }

    /// `value` with every string inside it (values, not keys) escaped as `escape(_:)` escapes text.
    mutating func escape(_ value: JinjaValue) -> JinjaValue {
        switch value {
        case .string(let text): return .string(escape(text))
        case .array(let elements): return .array(elements.map { escape($0) })
        case .object(let object):
            var escaped = JinjaObject()
            for (key, element) in object.pairs { escaped[key] = escape(element) }
            return .object(escaped)
        case .none, .boolean, .integer, .number: return value
        }
    }

    /// `content` with every control token's text and every noncharacter marker scalar replaced by a marker.
    mutating func escape(_ content: String) -> String {
        let scalars = Array(content.unicodeScalars)
        var matches = tokenizer.controlTokenMatches(in: content)[...]
        var out = String.UnicodeScalarView()
        var k = 0
        while k < scalars.count {
            if let match = matches.first, match.offset == k {
                hide(String(String.UnicodeScalarView(scalars[k..<(k + match.length)])), into: &out)
                k += match.length
                matches.removeFirst()
            } else if Self.markerRange.contains(scalars[k].value) {
                hide(String(scalars[k]), into: &out)
                k += 1
            } else {
                out.append(scalars[k])
                k += 1
            }
        }
        return String(out)
    }

    private mutating func hide(_ text: String, into out: inout String.UnicodeScalarView) {
        out.append(Self.open)
        for digit in String(originals.count).unicodeScalars {
            out.append(Unicode.Scalar(Self.digits.lowerBound + digit.value - 0x30) ?? Self.close)
        }
        out.append(Self.close)
        originals.append(text)
    }

    /// The rendered text with the markers replaced by what they hid, and the control tokens the
    /// template itself wrote, at their offsets (in scalars) in that text.
    func restore(_ rendered: String) throws(LlamaDecoderError) -> (String, [(offset: Int, length: Int, id: Int)]) {
        let scalars = Array(rendered.unicodeScalars)
        var matches = tokenizer.controlTokenMatches(in: rendered)[...]
        var out = String.UnicodeScalarView()
        var kept: [(offset: Int, length: Int, id: Int)] = []
        var written = 0
        var k = 0
        while k < scalars.count {
            if let match = matches.first, match.offset == k {
                kept.append((written, match.length, match.id))
                out.append(contentsOf: scalars[k..<(k + match.length)])
                written += match.length
                k += match.length
                matches.removeFirst()
                continue
            }
            guard scalars[k] == Self.open else {
                if Self.markerRange.contains(scalars[k].value) { throw Self.untraceable }
                out.append(scalars[k])
                written += 1
                k += 1
                continue
            }
            var index = 0
            var j = k + 1
            while j < scalars.count, Self.digits.contains(scalars[j].value), index < 1 << 40 {
                index = index * 10 + Int(scalars[j].value - Self.digits.lowerBound)
                j += 1
            }
            guard j < scalars.count, scalars[j] == Self.close, j > k + 1, originals.indices.contains(index) else {
                throw Self.untraceable
            }
            let original = originals[index].unicodeScalars
            out.append(contentsOf: original)
            written += original.count
            k = j + 1
        }
        return (String(out), kept)
    }

    private static let untraceable = LlamaDecoderError.invalidArgument(
        "the chat template cut a message's text where it held a control token's characters, so they cannot be kept as text"
    )
}
