import Foundation
import XCTest

@testable import LanguageModels

/// `GenerationSchema(jsonSchema:name:)`: the JSON Schema subset OpenAI's structured outputs
/// accept read into the shapes the grammar enforces, every keyword it cannot enforce refused by
/// name and JSON Pointer, and a response under a read schema from the real model.
final class JSONSchemaReaderTests: XCTestCase {
    private func read(_ text: String, name: String = "Root") throws(GenerationSchema.JSONSchemaError)
        -> GenerationSchema
    {
        try GenerationSchema(jsonSchema: text, name: name)
    }

    func testObjectPropertiesInOrderRequiredAndOptional() throws {
        let schema = try read(
            #"""
            {"type": "object", "description": "A trip", "additionalProperties": false,
             "properties": {"city": {"type": "string", "description": "Where"},
                            "days": {"type": "integer", "minimum": 1, "maximum": 7},
                            "budget": {"type": "number", "minimum": 0.5}},
             "required": ["city", "days"]}
            """#, name: "Trip")
        XCTAssertEqual(
            schema.root,
            .object(
                name: "Trip", description: "A trip",
                properties: [
                    SchemaProperty(
                        name: "city", description: "Where", node: .string(description: "Where", rules: []),
                        isOptional: false),
                    SchemaProperty(
                        name: "days", description: nil, node: .integer(rules: [.minimum(1), .maximum(7)]),
                        isOptional: false),
                    SchemaProperty(
                        name: "budget", description: nil, node: .number(rules: [.minimum(0.5)]), isOptional: true),
                ]))
    }

    func testWrittenSchemaReadsBackTheSame() throws {
        let texts = [
            ##"{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "pattern": "[a-z]+"}, "minItems": 1, "maxItems": 3}, "ok": {"type": "boolean"}, "none": {"type": "null"}}, "required": ["tags", "ok", "none"]}"##,
            ##"{"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "integer", "minimum": -3, "maximum": 3}]}"##,
            ##"{"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}, "required": [], "$defs": {"Node": {"type": "object", "properties": {"value": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}, "required": ["value", "next"]}}}"##,
        ]
        for text in texts {
            let first = try read(text)
            let again = try read(first.debugDescription)
            XCTAssertEqual(again.root, first.root, text)
            XCTAssertEqual(again.definitions, first.definitions, text)
            XCTAssertEqual(again.debugDescription, first.debugDescription, text)
        }
    }

    func testEnumConstTypeArraysAndExclusiveIntegerBounds() throws {
        XCTAssertEqual(
            try read(##"{"enum": ["x", "y", "x"]}"##).root, .string(description: nil, rules: [.anyOf(["x", "y"])]))
        XCTAssertEqual(try read(##"{"const": "only"}"##).root, .string(description: nil, rules: [.anyOf(["only"])]))
        XCTAssertEqual(
            try read(##"{"enum": [1, 2.5, null, true, false, "s"]}"##).root,
            .anyOf(
                name: nil, description: nil,
                [
                    .string(description: nil, rules: [.anyOf(["s"])]),
                    .integer(rules: [.minimum(1), .maximum(1)]),
                    .number(rules: [.minimum(2.5), .maximum(2.5)]),
                    .null, .boolean,
                ]))
        XCTAssertEqual(
            try read(##"{"type": ["string", "null"]}"##).root,
            .anyOf(name: nil, description: nil, [.string(description: nil, rules: []), .null]))
        XCTAssertEqual(
            try read(##"{"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10.5}"##).root,
            .integer(rules: [.minimum(1), .maximum(10)]))
        // Without a type, properties make an object; additionalProperties true is read (nothing
        // but the listed properties is ever written, which it allows).
        guard
            case .object(_, _, let properties) = try read(
                ##"{"properties": {"a": {"type": "string"}}, "additionalProperties": true}"##
            ).root
        else { return XCTFail("not an object") }
        XCTAssertEqual(properties.map(\.isOptional), [true])
    }

    /// An object without `properties` is a map (of any values, of `additionalProperties`' schema,
    /// or `{}` only under `false`); `{}` and `true` are any value; an array without `items` holds
    /// any values.
    func testMapsAndAnyValue() throws {
        let any = SchemaNode.reference(GenerationSchema.anyValueName)
        let object = try read(##"{"type": "object"}"##)
        XCTAssertEqual(object.root, .map(value: any))
        XCTAssertEqual(object.definitions[GenerationSchema.anyValueName], GenerationSchema.anyValueNode)
        XCTAssertEqual(object, GenerationSchema.anyJSONObject)
        XCTAssertEqual(try read(##"{"additionalProperties": true}"##).root, .map(value: any))
        XCTAssertEqual(
            try read(##"{"type": "object", "additionalProperties": {"type": "integer"}}"##).root,
            .map(value: .integer(rules: [])))
        XCTAssertEqual(try read(##"{"type": "object", "additionalProperties": {"type": "integer"}}"##).definitions, [:])
        guard case .object(_, _, let none) = try read(##"{"type": "object", "additionalProperties": false}"##).root
        else { return XCTFail("not an object of no properties") }
        XCTAssertTrue(none.isEmpty)
        XCTAssertEqual(try read("{}"), GenerationSchema.anyJSONValue)
        XCTAssertEqual(try read(##"{"description": "anything"}"##), GenerationSchema.anyJSONValue)
        XCTAssertEqual(try read("true"), GenerationSchema.anyJSONValue)
        XCTAssertEqual(try read(##"{"type": "array"}"##).root, .array(element: any, rules: []))
        let nested = try read(##"{"type": "object", "properties": {"x": {"type": "array", "items": true}}}"##)
        XCTAssertNotNil(nested.definitions[GenerationSchema.anyValueName])
        // The schema text says the same as it was read from.
        let text = GenerationSchema.anyJSONObject.debugDescription
        XCTAssertTrue(text.contains(##""additionalProperties":{"$ref":"#/$defs/JSONValue"}"##), text)
        XCTAssertEqual(try read(text), GenerationSchema.anyJSONObject)
        // Properties keep their rule beside a schema for additional ones: only they are written.
        guard
            case .object(_, _, let listed) = try read(
                ##"{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}"##
            ).root
        else { return XCTFail("not an object") }
        XCTAssertEqual(listed.map(\.name), ["a"])
    }

    func testReferencesToTheRootAndToDefinitions() throws {
        let tree = try read(
            ##"{"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}}, "required": ["children"]}"##,
            name: "Tree")
        XCTAssertEqual(tree.root, .reference("Tree"))
        XCTAssertNotNil(tree.definitions["Tree"])
        let old = try read(
            ##"{"type": "object", "properties": {"p": {"$ref": "#/definitions/P"}}, "required": ["p"], "definitions": {"P": {"type": "boolean"}}}"##
        )
        XCTAssertEqual(old.definitions["P"], .boolean)
    }

    /// Each keyword or schema the grammar cannot enforce, with the keyword and path it is refused at.
    func testEveryRefusedKeywordIsNamedWithItsPath() {
        let refused: [(schema: String, keyword: String?, path: String)] = [
            (
                ##"{"type": "object", "properties": {"a": {"type": "string", "format": "date-time"}}}"##, "format",
                "#/properties/a"
            ),
            (##"{"type": "string", "minLength": 2}"##, "minLength", "#"),
            (##"{"type": "string", "maxLength": 2}"##, "maxLength", "#"),
            (##"{"type": "array", "items": {"type": "string"}, "uniqueItems": true}"##, "uniqueItems", "#"),
            (##"{"type": "array", "items": {"type": "string"}, "contains": {"const": "a"}}"##, "contains", "#"),
            (##"{"type": "array", "prefixItems": [{"type": "string"}]}"##, "prefixItems", "#"),
            (##"{"type": "number", "exclusiveMinimum": 0}"##, "exclusiveMinimum", "#"),
            (##"{"type": "number", "multipleOf": 0.5}"##, "multipleOf", "#"),
            (##"{"type": "object", "patternProperties": {"^a": {"type": "string"}}}"##, "patternProperties", "#"),
            (##"{"type": "object", "minProperties": 1}"##, "minProperties", "#"),
            (##"{"oneOf": [{"type": "string"}, {"type": "integer"}]}"##, "oneOf", "#"),
            (##"{"type": "string", "oneOf": [{"type": "string"}]}"##, "oneOf", "#"),
            (##"{"type": "string", "allOf": [{"type": "string"}]}"##, "allOf", "#"),
            (##"{"type": "string", "not": {"const": "a"}}"##, "not", "#"),
            (##"{"anyOf": [{"type": "string"}], "type": "string"}"##, "type", "#"),
            (##"{"$ref": "https://example.com/schema"}"##, "$ref", "#"),
            (##"{"$ref": "#/$defs/Missing"}"##, "$ref", "#"),
            (##"{"type": "date"}"##, "type", "#"),
            (##"{"minimum": 1}"##, "type", "#"),
            ("false", nil, "#"),
            (##"{"type": "object", "required": ["a"]}"##, "required", "#"),
            (##"{"type": "object", "$defs": {"JSONValue": {"type": "string"}}}"##, nil, "#"),
            (##"{"enum": [true]}"##, "enum", "#"),
            (##"{"enum": [[1]]}"##, "enum", "#"),
            (##"{"type": "integer", "enum": ["a"]}"##, "enum", "#"),
            (##"{"type": "string", "pattern": "(?=a)"}"##, "pattern", "#"),
            (##"{"type": "integer", "minimum": 5, "maximum": 3}"##, "maximum", "#"),
            (##"{"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 1}"##, "maxItems", "#"),
            (##"{"type": "object", "properties": {}, "required": ["a"]}"##, "required", "#"),
            (
                ##"{"type": "object", "properties": {"x": {"type": "array", "items": false}}}"##, nil,
                "#/properties/x/items"
            ),
            (##"{"type": "object", "properties": {"me": {"$ref": "#"}}, "required": ["me"]}"##, nil, "#"),
            ("[1, 2", nil, "#"),
        ]
        for (schema, keyword, path) in refused {
            do {
                _ = try read(schema)
                XCTFail("read: \(schema)")
            } catch {
                XCTAssertEqual(error.keyword, keyword, "\(schema): \(error)")
                XCTAssertEqual(error.path, path, "\(schema): \(error)")
            }
        }
    }

    /// A response of SmolLM2 under a read schema parses, and holds every rule.
    func testGuidedResponseUnderAReadSchemaSatisfiesIt() async throws {
        let schema = try read(
            #"""
            {"type": "object", "properties": {
               "name": {"type": "string", "pattern": "[A-Z][a-z]{1,12}"},
               "age": {"type": "integer", "minimum": 1, "maximum": 20},
               "color": {"enum": ["black", "white", "orange"]},
               "toys": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}},
             "required": ["name", "age", "color", "toys"], "additionalProperties": false}
            """#, name: "Cat")
        let session = LanguageModelSession(model: try LanguageModelSessionTests.smol.get())
        let response = try await session.respond(
            to: "Describe a cat.", schema: schema,
            options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 120))
        let text = response.rawContent.jsonString
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
        let name = try XCTUnwrap(object["name"] as? String, text)
        XCTAssertNotNil(name.range(of: "^[A-Z][a-z]{1,12}$", options: .regularExpression), text)
        let age = try XCTUnwrap(object["age"] as? Int, text)
        XCTAssertTrue((1...20).contains(age), text)
        XCTAssertTrue(["black", "white", "orange"].contains(object["color"] as? String ?? ""), text)
        let toys = try XCTUnwrap(object["toys"] as? [String], text)
        XCTAssertTrue((1...2).contains(toys.count), text)
        XCTAssertEqual(Set(object.keys), ["name", "age", "color", "toys"])
    }
}
