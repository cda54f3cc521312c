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
public struct ChatMessage: Sendable, Hashable {
    /// Who speaks: `system`, `user`, `assistant`, `tool`, or any other role a template knows.
    public struct Role: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The role as the template sees it in `message['role']`.
        public let rawValue: String

        /// A role from its name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A role from a string literal: `"ipython"`.
        public init(stringLiteral value: String) { self.rawValue = value }

        /// Instructions that frame the conversation.
        public static let system = Role(rawValue: "system")
        /// The person asking.
        public static let user = Role(rawValue: "user")
        /// The model's replies.
        public static let assistant = Role(rawValue: "assistant")
        /// A tool's result, for templates that support tools.
        public static let tool = Role(rawValue: "tool")

        /// The role's name.
        public var description: String { rawValue }
    }

    /// Who speaks.
    public var role: Role
    /// What they say. It is data: `{{` or `{%` in it is never evaluated.
    public var content: String

    /// A message from its parts.
    public init(role: Role, content: String) {
        self.role = role
        self.content = content
    }

    /// A system message.
    public static func system(_ content: String) -> ChatMessage { ChatMessage(role: .system, content: content) }
    /// A user message.
    public static func user(_ content: String) -> ChatMessage { ChatMessage(role: .user, content: content) }
    /// An assistant message.
    public static func assistant(_ content: String) -> ChatMessage { ChatMessage(role: .assistant, content: content) }
    /// A tool-result message.
    public static func tool(_ content: String) -> ChatMessage { ChatMessage(role: .tool, content: content) }

    /// The dict a template sees: `{"role": …, "content": …}`, in that order.
    public var jinjaValue: JinjaValue {
        ["role": .string(role.rawValue), "content": .string(content)]
    }
}
