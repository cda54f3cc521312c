extension JSONGrammar {
    /// Where a reading of the text so far stands: a stack of frames, the value being written on
    /// top. A text can be read in several ways at once (a choice of types, optional properties, a
    /// number that may go on or end), so a `State` holds every stack that is still possible.
    struct Frame: Hashable, Sendable {
        var node: Int32
        var phase: Phase
    }

    enum Phase: Hashable, Sendable {
        /// A value of `node`, not started.
        case value
        /// Bytes that must come next (a key, a separator, `true`/`false`/`null`), and how many came.
        case literal([UInt8], Int)
        case string(StringScan)
        case number(NumberScan)
        /// An array: before `[`; after `[` or `, ` (`needsElement`: an element must follow); after
        /// its `count`th element; or waiting for a child (`inChild`).
        case arrayStart
        case arrayOpen(count: Int, needsElement: Bool)
        case arrayInChild(count: Int, separator: Bool)
        case arrayAfterElement(count: Int)
        /// An object: before `{`; after `{`; a key literal of property `index` running; the value of
        /// `index` to start or running; after a value, the next property to consider being `next`.
        case objectStart
        case objectOpen
        case objectKey(index: Int)
        case objectNeedsValue(index: Int)
        case objectValue(index: Int)
        case objectAfterValue(next: Int)
        /// A map: before `{`; after `{` or `, ` (`needsKey`: a key must follow); its key (a string
        /// frame) running; after the key; its `": "` running; its value to start or running; after
        /// a value; its `", "` running.
        case mapStart
        case mapOpen(needsKey: Bool)
        case mapKey
        case mapAfterKey
        case mapColon
        case mapNeedsValue
        case mapValue
        case mapAfterValue
        case mapSeparator
    }

    /// Every reading still possible; none: the text cannot be completed.
    struct State: Hashable, Sendable {
        var stacks: [[Frame]]

        var isDead: Bool { stacks.isEmpty }
    }

    /// The deepest nesting a reading may reach: an optional property, an array element past the
    /// minimum count or a choice is only started when it can be finished within it.
    static let maximumDepth = 64

    /// Whether a value of `node` started at `depth` (its frame's position, from 1) fits.
    private func fits(_ node: Int32, at depth: Int) -> Bool { depth - 1 + minimumDepth[Int(node)] <= Self.maximumDepth }

    /// Before the first byte.
    var initialState: State { State(stacks: [[Frame(node: root, phase: .value)]]) }

    /// The state after `byte`.
    func advance(_ state: State, _ byte: UInt8) -> State {
        var out: [[Frame]] = []
        for stack in state.stacks { advance(stack, byte, into: &out) }
        if out.count > 1 {
            // Readings that meet again are one reading.
            var seen = Set<[Frame]>()
            out = out.filter { seen.insert($0).inserted }
        }
        return State(stacks: out)
    }

    /// The state after `bytes` (dead as soon as a byte is refused).
    func advance(_ state: State, _ bytes: some Sequence<UInt8>) -> State {
        var state = state
        for byte in bytes {
            state = advance(state, byte)
            if state.isDead { break }
        }
        return state
    }

    /// Whether the text so far is a whole value (the response may end here).
    func accepts(_ state: State) -> Bool { state.stacks.contains { accepts($0) } }

    /// Whether the text so far is a whole value and nothing may follow it (so the response ends).
    func isFinished(_ state: State) -> Bool { !state.stacks.isEmpty && state.stacks.allSatisfy(\.isEmpty) }

    private func accepts(_ stack: [Frame]) -> Bool {
        guard let top = stack.last else { return true }
        if case .number(let scan) = top.phase, canEnd(scan, node: top.node) {
            var rest = stack
            finish(&rest)
            return accepts(rest)
        }
        return false
    }

    /// Pops the finished top frame and tells its parent.
    private func finish(_ stack: inout [Frame]) {
        stack.removeLast()
        guard let parent = stack.last else { return }
        let phase: Phase
        switch parent.phase {
        case .arrayInChild(let count, let separator):
            phase = separator ? .arrayOpen(count: count, needsElement: true) : .arrayAfterElement(count: count + 1)
        case .objectKey(let index): phase = .objectNeedsValue(index: index)
        case .objectValue(let index): phase = .objectAfterValue(next: index + 1)
        case .mapKey: phase = .mapAfterKey
        case .mapColon: phase = .mapNeedsValue
        case .mapValue: phase = .mapAfterValue
        case .mapSeparator: phase = .mapOpen(needsKey: true)
        default: preconditionFailure("a frame finished under \(parent.phase)")
        }
        stack[stack.count - 1].phase = phase
    }

    /// Every way `stack` reads `byte`, appended to `out`.
    private func advance(_ stack: [Frame], _ byte: UInt8, into out: inout [[Frame]]) {
        guard let top = stack.last else { return }  // a whole value: nothing may follow
        var stack = stack
        let last = stack.count - 1
        switch top.phase {
        case .value:
            if case .anyOf(let choices) = nodes[Int(top.node)] {
                for choice in choices where fits(choice, at: stack.count) {
                    stack[last] = Frame(node: choice, phase: .value)
                    advance(stack, byte, into: &out)
                }
            } else {
                for phase in starts(top.node) {
                    stack[last].phase = phase
                    advance(stack, byte, into: &out)
                }
            }
        case .literal(let bytes, let position):
            guard bytes[position] == byte else { return }
            if position + 1 == bytes.count {
                finish(&stack)
            } else {
                stack[last].phase = .literal(bytes, position + 1)
            }
            out.append(stack)
        case .string(let scan):
            let pattern: GuidedPattern? = if case .string(let p) = nodes[Int(top.node)] { p } else { nil }
            switch scan.read(byte, pattern: pattern) {
            case .refused: return
            case .closed: finish(&stack)
            case .open(let next): stack[last].phase = .string(next)
            }
            out.append(stack)
        case .number(let scan):
            if let next = read(scan, byte, node: top.node) {
                var consumed = stack
                consumed[last].phase = .number(next)
                out.append(consumed)
            }
            if canEnd(scan, node: top.node) {
                finish(&stack)
                advance(stack, byte, into: &out)
            }
        case .arrayStart:
            guard byte == UInt8(ascii: "[") else { return }
            stack[last].phase = .arrayOpen(count: 0, needsElement: false)
            out.append(stack)
        case .arrayOpen(let count, let needsElement):
            guard case .array(let element, let minimum, let maximum) = nodes[Int(top.node)] else { return }
            if !needsElement, byte == UInt8(ascii: "]"), count >= minimum {
                var closed = stack
                finish(&closed)
                out.append(closed)
            }
            if count < (maximum ?? Int.max), needsElement || count < minimum || fits(element, at: stack.count + 1) {
                stack[last].phase = .arrayInChild(count: count, separator: false)
                stack.append(Frame(node: element, phase: .value))
                advance(stack, byte, into: &out)
            }
        case .arrayAfterElement(let count):
            guard case .array(let element, let minimum, let maximum) = nodes[Int(top.node)] else { return }
            if byte == UInt8(ascii: "]"), count >= minimum {
                var closed = stack
                finish(&closed)
                out.append(closed)
            }
            if count < (maximum ?? Int.max), byte == UInt8(ascii: ","),
                count < minimum || fits(element, at: stack.count + 1)
            {
                stack[last].phase = .arrayInChild(count: count, separator: true)
                stack.append(Frame(node: top.node, phase: .literal(Array(", ".utf8), 1)))
                out.append(stack)
            }
        case .objectStart:
            guard byte == UInt8(ascii: "{") else { return }
            stack[last].phase = .objectOpen
            out.append(stack)
        case .objectOpen, .objectAfterValue:
            guard case .object(let keys) = nodes[Int(top.node)] else { return }
            let next: Int
            if case .objectAfterValue(let n) = top.phase { next = n } else { next = 0 }
            let first = top.phase == .objectOpen
            if byte == UInt8(ascii: "}"), keys[next...].allSatisfy(\.isOptional) {
                var closed = stack
                finish(&closed)
                out.append(closed)
            }
            // Any property from `next` on, skipping only optional ones.
            var index = next
            while index < keys.count {
                let key = first ? keys[index].first : keys[index].following
                if key[0] == byte, !keys[index].isOptional || fits(keys[index].node, at: stack.count + 1) {
                    var keyed = stack
                    keyed[last].phase = .objectKey(index: index)
                    keyed.append(Frame(node: top.node, phase: .literal(key, 1)))
                    out.append(keyed)
                }
                if !keys[index].isOptional { break }
                index += 1
            }
        case .objectNeedsValue(let index):
            guard case .object(let keys) = nodes[Int(top.node)] else { return }
            stack[last].phase = .objectValue(index: index)
            stack.append(Frame(node: keys[index].node, phase: .value))
            advance(stack, byte, into: &out)
        case .mapStart:
            guard byte == UInt8(ascii: "{") else { return }
            stack[last].phase = .mapOpen(needsKey: false)
            out.append(stack)
        case .mapOpen(let needsKey):
            guard case .map(let key, let value) = nodes[Int(top.node)] else { return }
            if !needsKey, byte == UInt8(ascii: "}") {
                var closed = stack
                finish(&closed)
                out.append(closed)
            }
            // A key commits to a value: begun only when one fits (after `, ` it was checked).
            if needsKey || fits(value, at: stack.count + 1) {
                stack[last].phase = .mapKey
                stack.append(Frame(node: key, phase: .value))
                advance(stack, byte, into: &out)
            }
        case .mapAfterKey:
            guard byte == UInt8(ascii: ":") else { return }
            stack[last].phase = .mapColon
            stack.append(Frame(node: top.node, phase: .literal(Array(": ".utf8), 1)))
            out.append(stack)
        case .mapNeedsValue:
            guard case .map(_, let value) = nodes[Int(top.node)] else { return }
            stack[last].phase = .mapValue
            stack.append(Frame(node: value, phase: .value))
            advance(stack, byte, into: &out)
        case .mapAfterValue:
            guard case .map(_, let value) = nodes[Int(top.node)] else { return }
            if byte == UInt8(ascii: "}") {
                var closed = stack
                finish(&closed)
                out.append(closed)
            }
            if byte == UInt8(ascii: ","), fits(value, at: stack.count + 1) {
                stack[last].phase = .mapSeparator
                stack.append(Frame(node: top.node, phase: .literal(Array(", ".utf8), 1)))
                out.append(stack)
            }
        case .arrayInChild, .objectKey, .objectValue, .mapKey, .mapColon, .mapValue, .mapSeparator:
            preconditionFailure("a parent frame on top")
        }
    }

    /// The first phases of a value of `node` (none for a choice: its alternatives start instead).
    private func starts(_ node: Int32) -> [Phase] {
        switch nodes[Int(node)] {
        case .string: [.string(StringScan())]
        case .integer, .number: [.number(NumberScan())]
        case .boolean: [.literal(Array("true".utf8), 0), .literal(Array("false".utf8), 0)]
        case .null: [.literal(Array("null".utf8), 0)]
        case .array: [.arrayStart]
        case .object: [.objectStart]
        case .map: [.mapStart]
        case .anyOf: []
        }
    }
}
