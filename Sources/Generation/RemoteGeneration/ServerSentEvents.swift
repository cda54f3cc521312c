/// A reader of a `text/event-stream` body as it arrives (WHATWG HTML, "Server-sent events"):
/// bytes in, in pieces of any size, whole events out.
///
/// Lines end in LF, CR LF or CR; a line starting with `:` is a comment; `field: value` lines set
/// the event's `data` (several join with LF), `event` and `id`; a blank line dispatches the event
/// (an event with no data is not dispatched). A line longer than `maximumLineBytes` is an error,
/// so a hostile server cannot make the reader hold unbounded memory.
package struct ServerSentEvents {
    /// One dispatched event.
    package struct Event: Sendable, Equatable {
        /// The `event:` field (`message` when none was given).
        package var name: String
        /// The `data:` lines joined with LF.
        package var data: String
        /// The last `id:` field seen, if any.
        package var id: String?

        package init(name: String = "message", data: String, id: String? = nil) {
            self.name = name
            self.data = data
            self.id = id
        }
    }

    /// A line longer than the limit.
    package struct LineTooLong: Error, Sendable, Equatable {
        package let limit: Int
    }

    /// The longest line read (bytes, without its end).
    package let maximumLineBytes: Int
    private var line: [UInt8] = []
    /// Whether the last byte was a CR (a following LF belongs to the same line end).
    private var afterCR = false
    private var data: [String] = []
    private var name = ""
    private var lastID: String?
    /// Whether the stream's first bytes (a byte-order mark may lead) have been seen.
    private var started = false

    package init(maximumLineBytes: Int = 1 << 22) {
        self.maximumLineBytes = maximumLineBytes
    }

    /// The events `bytes` complete, in order.
    /// - Throws: `LineTooLong` when a line exceeds `maximumLineBytes`.
    package mutating func read(_ bytes: some Sequence<UInt8>) throws(LineTooLong) -> [Event] {
        var events: [Event] = []
        for byte in bytes {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0A, 0x0D:
                afterCR = byte == 0x0D
                if let event = endLine() { events.append(event) }
            default:
                guard line.count < maximumLineBytes else { throw LineTooLong(limit: maximumLineBytes) }
                line.append(byte)
            }
        }
        return events
    }

    /// Whether bytes of an event not yet dispatched are held (a stream that ends here was cut).
    package var holdsPartialEvent: Bool { !line.isEmpty || !data.isEmpty }

    private mutating func endLine() -> Event? {
        var text = String(decoding: line, as: UTF8.self)
        line.removeAll(keepingCapacity: true)
        if !started {
            started = true
            if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        }
        if text.isEmpty { return dispatch() }
        if text.hasPrefix(":") { return nil }
        let field: Substring
        var value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            value = text[text.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            field = text[...]
            value = ""
        }
        switch field {
        case "data": data.append(String(value))
        case "event": name = String(value)
        case "id" where !value.contains("\0"): lastID = String(value)
        default: break  // `retry` and unknown fields: ignored
        }
        return nil
    }

    private mutating func dispatch() -> Event? {
        defer {
            data = []
            name = ""
        }
        guard !data.isEmpty else { return nil }
        return Event(name: name.isEmpty ? "message" : name, data: data.joined(separator: "\n"), id: lastID)
    }
}
