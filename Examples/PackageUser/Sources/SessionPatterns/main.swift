// Seed 000's FoundationModels patterns, as an app written for Apple's framework would use them,
// with `import LanguageModels` instead of `import FoundationModels`: check availability, open a
// session with instructions, respond, follow up in the same session, stream snapshots.
// (Guided generation with `Generable` and tools come with the next steps of issue 27.)
import Foundation
import LanguageModels

let model = SystemLanguageModel.default
switch model.availability {
case .available:
    print("model: available")
case .unavailable(.modelNotReady):
    print("model: not installed yet, installing")
    try await model.requestAssets()
case .unavailable(let other):
    print("model: unavailable (\(other))")
    exit(1)
}

// One exchange, then a follow-up that sees the first (the session keeps the conversation).
let session = LanguageModelSession(
    instructions: """
        You are a cooking assistant.
        Suggest recipes from the ingredients given.
        Keep suggestions short and practical.
        """)
let options = GenerationOptions(sampling: .greedy, maximumResponseTokens: 60)
let first = try await session.respond(to: "I have chicken and rice.", options: options)
print("first: \(first.content)")
let followUp = try await session.respond(to: "What about a vegetarian option?", options: options)
print("follow-up: \(followUp.content)")
precondition(session.transcript.count == 5, "instructions, two prompts, two responses")

// Streaming: each snapshot is the whole response so far.
var snapshots = 0
var last = ""
for try await snapshot in session.streamResponse(to: "Name one spice for it.", options: options) {
    precondition(snapshot.content.hasPrefix(last), "snapshots are cumulative")
    last = snapshot.content
    snapshots += 1
}
print("streamed: \(snapshots) snapshots, \(last.count) characters")
precondition(!session.isResponding)
