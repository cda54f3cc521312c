import Foundation

// libFuzzer target: arbitrary bytes (UTF-8, repaired) as a chat template, parsed and rendered
// against a fixed conversation with tools, a tool call and its result. Must render or throw
// `ChatTemplateError`; never crash, never hang, never grow without bound. The limits are smaller
// than the defaults (nesting 64, 8 MiB of output, 2^23 steps of work) so that each input stays
// quick: nesting 32, 64 KiB of output, 2^16 steps. Loops over huge ranges, deep recursion through
// macros and huge strings (`'a' * 10**9`, `range(10**9)`) must be `limitExceeded`, not hangs.
let fuzzJinjaLimits = ChatTemplate.Limits(maximumNestingDepth: 32, maximumOutputLength: 1 << 16, maximumWork: 1 << 16)

let fuzzJinjaMessages: [JinjaValue] = [
    ["role": "system", "content": "You are terse."],
    ["role": "user", "content": "Weather in Paris?"],
    [
        "role": "assistant", "content": "",
        "tool_calls": [
            [
                "id": "call00001", "type": "function",
                "function": ["name": "get_weather", "arguments": ["city": "Paris", "days": 2]],
            ]
        ],
    ],
    ["role": "tool", "tool_call_id": "call00001", "name": "get_weather", "content": "{\"c\": 18}"],
    ["role": "assistant", "content": "18 °C <b>&</b>"],
    ["role": "user", "content": "Thanks!"],
]

let fuzzJinjaTools: JinjaValue = [
    [
        "type": "function",
        "function": [
            "name": "get_weather", "description": "Weather",
            "parameters": ["type": "object", "properties": ["city": ["type": "string"]], "required": ["city"]],
        ],
    ]
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJinjaInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let source = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let template = try? ChatTemplate(source: source, limits: fuzzJinjaLimits) else { return 0 }
    let fixed = Date(timeIntervalSince1970: 1_700_000_000)
    for generation in [false, true] {
        do {
            let text = try template.render(
                messageValues: fuzzJinjaMessages, addGenerationPrompt: generation,
                variables: ["tools": fuzzJinjaTools, "bos_token": "<s>", "eos_token": "</s>"], now: fixed)
            precondition(text.utf8.count <= fuzzJinjaLimits.maximumOutputLength)
        } catch {
            _ = error.description
        }
    }
    return 0
}
