// Differential fuzz target: `JSONReader` against `StrictParser`, an independent strict RFC 8259
// parser (StrictParser.swift). Both must accept and reject the same texts, and agree on the values:
// the same structure, member order and duplicates, string contents as code points (UTF-8 bytes),
// and numbers as their exact source text (an `.int` must be the integer that text denotes).
import FuzzSupport
import OutboxCommandLine
import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxServer
import OutboxStore
import OutboxSupport
import OutboxTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDiff(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  let ours = try? JSONReader.parse(bytes)
  let oracle = StrictParser.parse(bytes)
  switch (ours, oracle) {
  case (nil, nil): break
  case (let ours?, nil): fail("the reader accepted what RFC 8259 (and the policy) refuses: \(ours.jsonText)", bytes)
  case (nil, .some): fail("the reader refused a valid text", bytes)
  case (let ours?, let oracle?):
    if let difference = compare(ours, oracle, path: "$") { fail("the values differ at \(difference)", bytes) }
  }
  return 0
}

/// Where the two values differ, or nil when they agree.
private func compare(_ a: JSONValue, _ b: StrictParser.Value, path: String) -> String? {
  switch (a, b) {
  case (.null, .null): return nil
  case (.bool(let x), .bool(let y)): return x == y ? nil : path
  case (.int(let i), .number(let text)): return integer(text) == i ? nil : path + " (integer \(i))"
  case (.number(let x), .number(let text)):
    return Array(x.utf8) == text && integer(text) == nil ? nil : path + " (number \(x))"
  case (.string(let x), .string(let y)): return Array(x.utf8) == y ? nil : path + " (string)"
  case (.array(let x), .array(let y)):
    guard x.count == y.count else { return path + " (array length)" }
    for (n, (p, q)) in zip(x, y).enumerated() {
      if let d = compare(p, q, path: "\(path)[\(n)]") { return d }
    }
    return nil
  case (.object(let x), .object(let y)):
    guard x.count == y.count else { return path + " (member count)" }
    for (n, (p, q)) in zip(x, y).enumerated() {
      guard Array(p.key.utf8) == q.key else { return "\(path) (key \(n))" }
      if let d = compare(p.value, q.value, path: "\(path).\(p.key)") { return d }
    }
    return nil
  default: return path + " (type)"
  }
}

/// The Int64 an integer token (no fraction, no exponent, not `-0`) denotes, computed here.
private func integer(_ text: [UInt8]) -> Int64? {
  guard !text.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") })
  else { return nil }
  let negative = text.first == UInt8(ascii: "-")
  var value: Int64 = 0
  for d in text.dropFirst(negative ? 1 : 0) {
    let digit = Int64(d - 0x30)
    // Accumulate as a negative number, so Int64.min fits.
    let (times, o1) = value.multipliedReportingOverflow(by: 10)
    let (next, o2) = times.subtractingReportingOverflow(digit)
    if o1 || o2 { return nil }
    value = next
  }
  if negative { return value == 0 ? nil : value }
  return value == Int64.min ? nil : -value
}

private func fail(_ message: String, _ input: [UInt8]) -> Never {
  fuzzFailure("FuzzDiff", message, input)
}

@_cdecl("FuzzDiff_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzDiff)
}
