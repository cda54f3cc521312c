/// One turn of a conversation, as a chat template receives it: a role and its text.
///
/// ```swift
/// let conversation: [ChatMessage] = [
///     .system("You are terse."),
///     .user("What is 2 + 2?"),
/// ]
/// ```
///
/// A template sees each message as the dict `{"role": …, "content": …}`. Messages with more fields
/// (`tool_calls`, `name`) go to ``ChatTemplate/render(messageValues:addGenerationPrompt:variables:now:)`` as
/// ``JinjaValue`` objects instead.
package struct ChatMessage: Sendable, Hashable {
    /// Who speaks: `system`, `user`, `assistant`, `tool`, or any other role a template knows.
    package struct Role: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The role as the template sees it in `message['role']`.
        package let rawValue: String

        /// A role from its name.
        package init(rawValue: String) { self.rawValue = rawValue }

        /// A role from a string literal: `"ipython"`.
        package init(stringLiteral value: String) { self.rawValue = value }

        /// Instructions that frame the conversation.
        package static let system = Role(rawValue: "system")
        /// The person asking.
        package static let user = Role(rawValue: "user")
        /// The model's replies.
        package static let assistant = Role(rawValue: "assistant")
        /// A tool's result, for templates that support tools.
        package static let tool = Role(rawValue: "tool")

        /// The role's name.
        package var description: String { rawValue }
    }

    /// Who speaks.
    package var role: Role
    /// What they say. It is data: `{{` or `{%` in it is never evaluated.
    package var content: String

    /// A message from its parts.
    package init(role: Role, content: String) {
        self.role = role
        self.content = content
    }

    /// A system message.
    package static func system(_ content: String) -> ChatMessage { ChatMessage(role: .system, content: content) }
    /// A user message.
    package static func user(_ content: String) -> ChatMessage { ChatMessage(role: .user, content: content) }
    /// An assistant message.
    package static func assistant(_ content: String) -> ChatMessage { ChatMessage(role: .assistant, content: content) }
    /// A tool-result message.
    package static func tool(_ content: String) -> ChatMessage { ChatMessage(role: .tool, content: content) }

    /// The dict a template sees: `{"role": …, "content": …}`, in that order.
    package var jinjaValue: JinjaValue {
        ["role": .string(role.rawValue), "content": .string(content)]
    }
}
