extension LanguageModelSession {
    /// A finished response: Apple's `LanguageModelSession.Response`.
    public struct Response<Content: Generable>: Sendable {
        /// The response.
        public let content: Content
        /// The response as generated content (a string's, or the guided JSON's).
        public let rawContent: GeneratedContent
        /// The transcript entries the request added: its prompt and the response.
        public let transcriptEntries: ArraySlice<Transcript.Entry>
    }

    /// A response as it is produced: an `AsyncSequence` of snapshots, each holding the whole
    /// response so far (not the piece since the last one), Apple's `LanguageModelSession.ResponseStream`.
    ///
    /// ```swift
    /// for try await snapshot in session.streamResponse(to: "Tell me a story.") {
    ///     print(snapshot.content)
    /// }
    /// ```
    /// The request runs whether or not the stream is iterated; ending an iteration early (a
    /// `break`, a cancelled task) stops generation within one token.
    public struct ResponseStream<Content: Generable>: AsyncSequence, Sendable {
        /// The response so far.
        public struct Snapshot: Sendable {
            /// Everything generated so far (for a `Generable` type, its partially generated value).
            public var content: Content.PartiallyGenerated
            /// Everything generated so far as content (the JSON so far, for a guided response).
            public var rawContent: GeneratedContent
            /// The transcript entries of the request so far (an extension in Apple's 26: it has
            /// them from 27).
            public var transcriptEntries: ArraySlice<Transcript.Entry>
            /// The finished response (in the last snapshot only).
            var whole: Content?

            init(
                content: Content.PartiallyGenerated, rawContent: GeneratedContent,
                transcriptEntries: [Transcript.Entry],
                whole: Content? = nil
            ) {
                self.content = content
                self.rawContent = rawContent
                self.transcriptEntries = transcriptEntries[...]
                self.whole = whole
            }
        }
        public typealias Element = Snapshot

        let stream: AsyncThrowingStream<Snapshot, any Error>
        let request: Request<Content>

        /// Iterates the snapshots.
        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncThrowingStream<Snapshot, any Error>.AsyncIterator
            public mutating func next() async throws -> Snapshot? { try await base.next() }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }

        /// Waits for the response to finish and returns it; cancelling the waiting task stops
        /// generation, and this returns (throwing `CancellationError`) once it has stopped.
        /// - Throws: what the request threw, or `CancellationError`.
        public func collect() async throws -> Response<Content> {
            try await withTaskCancellationHandler {
                var last: Snapshot?
                do {
                    for try await snapshot in self { last = snapshot }
                } catch {
                    await request.ended()
                    throw error
                }
                // Cancelled or not, the request has stopped (within a token) before this returns.
                await request.ended()
                try Task.checkCancellation()
                // A stream already iterated to its end has no snapshots left: its request kept the last.
                guard let last = last ?? request.response, let whole = last.whole else { throw CancellationError() }
                return Response(content: whole, rawContent: last.rawContent, transcriptEntries: last.transcriptEntries)
            } onCancel: {
                request.cancel()
            }
        }
    }
}
