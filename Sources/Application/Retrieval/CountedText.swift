/// A string that is built by appending and knows its length in Characters, so the chunker can
/// compare lengths while it builds pieces without recounting them (`String.count` walks the
/// whole string: recounting on every append made chunking a long section quadratic).
struct CountedText {
    /// The text so far.
    private(set) var text = ""
    /// `text.count`, kept as pieces are appended.
    private(set) var count = 0

    var isEmpty: Bool { text.isEmpty }

    /// Appends `piece`, whose length is `pieceCount` Characters, after `separator` unless the text
    /// is empty.
    ///
    /// Joining can change Character boundaries only where the two sides meet: a carriage return
    /// and "\n" become one Character, as do a prepended mark and a following space, or a space
    /// and a following combining mark. So the new count is the old one, plus the piece's, plus
    /// the recounted meeting point (the text's last Character, the separator and the piece's
    /// first Character), minus the two Characters that meeting point counted twice.
    mutating func append(_ piece: some StringProtocol, count pieceCount: Int, separator: Character) {
        guard !text.isEmpty else {
            text = String(piece)
            count = pieceCount
            return
        }
        count += pieceCount + Self.meetingCount(text, separator, piece) - 2
        text.append(separator)
        text.append(contentsOf: piece)
    }

    /// The text, leaving this empty.
    mutating func take() -> String {
        defer { self = CountedText() }
        return text
    }

    /// The Characters in `left`'s last Character, `separator` and `right`'s first Character
    /// joined: 3 unless some of them merge into one Character.
    private static func meetingCount(_ left: String, _ separator: Character, _ right: some StringProtocol) -> Int {
        // Printable ASCII neither ends nor starts a merge with a space or "\n" (only "\r" does,
        // and it is not printable): the common case costs no recount.
        if separator == " " || separator == "\n", let before = left.unicodeScalars.last,
            let after = right.unicodeScalars.first,
            (0x21...0x7E).contains(before.value), (0x21...0x7E).contains(after.value)
        {
            return 3
        }
        let meeting = (left.last.map { String($0) } ?? "") + String(separator) + (right.first.map { String($0) } ?? "")
        // A missing side counts as the separate Character it would have been.
        return meeting.count + (left.isEmpty ? 1 : 0) + (right.isEmpty ? 1 : 0)
    }
}
