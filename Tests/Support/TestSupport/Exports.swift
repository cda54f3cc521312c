// LoopbackHTTP is a target of its own so that the benchmark can use it without XCTest; tests
// reach it through TestSupport, as before.
@_exported import LoopbackHTTP
