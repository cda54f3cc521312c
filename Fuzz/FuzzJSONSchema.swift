// libFuzzer target: arbitrary bytes (UTF-8, repaired) as a JSON Schema, read into a
// GenerationSchema (an OpenAI `response_format` or a tool's parameters) or refused with
// JSONSchemaError; never a crash. A schema that is read compiles to a guided-decoding grammar or
// is refused with a GenerationError, and its own JSON Schema reads back to the same schema.
//
// LanguageModelSession, the namespace of GenerationError, is the only part of the session this
// target needs.
public final class LanguageModelSession {}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONSchemaInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let schema: GenerationSchema
    do { schema = try GenerationSchema(jsonSchema: text, name: "Fuzz") } catch {
        _ = error.description
        return 0
    }
    _ = try? JSONGrammar(schema)
    let written = schema.jsonSchema
    guard let again = try? GenerationSchema(jsonSchema: written, name: "Fuzz") else {
        preconditionFailure("a schema's own JSON Schema is refused: \(written.jsonString)")
    }
    precondition(again.jsonSchema.jsonString == written.jsonString, "the JSON Schema changes on a second reading")
    return 0
}
