// Seed 000's FoundationModels patterns, as an app written for Apple's framework would use them,
// with `import LanguageModels` instead of `import FoundationModels`: check availability, open a
// session with instructions, respond, follow up in the same session, stream snapshots, generate a
// `Generable` struct under its guides, give the model a `Tool` it may call.
import Foundation
import LanguageModels
import Synchronization

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

// Guided generation: a `Generable` struct with guides; every guide holds, by construction.
struct Recipe: Generable, Codable {
    var name: String
    var servings: Int
    var ingredients: [String]
    var spicy: Bool
    static var generationSchema: GenerationSchema {
        GenerationSchema(
            type: Self.self, description: "A recipe suggestion",
            properties: [
                .init(name: "name", description: "The dish", type: String.self),
                .init(name: "servings", type: Int.self, guides: [.range(1...8)]),
                .init(name: "ingredients", type: [String].self, guides: [.count(2...5)]),
                .init(name: "spicy", type: Bool.self),
            ])
    }
}
let recipe = try await session.respond(
    to: "Suggest one recipe with chicken and rice.", generating: Recipe.self,
    options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 200)
).content
precondition((1...8).contains(recipe.servings) && (2...5).contains(recipe.ingredients.count))
print("generated: \(recipe.name), serves \(recipe.servings), \(recipe.ingredients.count) ingredients")

// Tools: the model may call one while it answers; its arguments are generated under the
// tool's schema, so they always decode. The small default model decides for itself whether to.
struct PantryLookup: Tool {
    let name = "lookUpPantry"
    let description = "Lists what is left in the pantry for an ingredient category"
    let calls = Counter()

    struct Arguments: Generable, Codable {
        var category: String
        static var generationSchema: GenerationSchema {
            GenerationSchema(
                type: Self.self,
                properties: [
                    .init(name: "category", type: String.self, guides: [.anyOf(["grains", "spices", "vegetables"])])
                ])
        }
    }

    final class Counter: Sendable {
        let value = Mutex(0)
    }

    func call(arguments: Arguments) async throws -> String {
        calls.value.withLock { $0 += 1 }
        switch arguments.category {
        case "grains": return "rice, oats"
        case "spices": return "cumin, paprika"
        default: return "onions, carrots"
        }
    }
}
let pantry = PantryLookup()
let cook = LanguageModelSession(
    tools: [pantry], instructions: "You are a cooking assistant. Check the pantry with lookUpPantry before suggesting.")
let answer = try await cook.respond(to: "Which spices do I have left?", options: options)
let madeCalls = cook.transcript.filter { if case .toolCalls = $0 { true } else { false } }.count
precondition(madeCalls == pantry.calls.value.withLock { $0 }, "every call the model made ran the tool once")
precondition(!answer.content.hasPrefix("<tool_call>"), "the answer is text, never a call's markup")
print("tools: \(madeCalls) call(s); answer: \(answer.content)")
