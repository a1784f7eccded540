import Foundation
import Testing

/// Peak memory for one hostile line stays within a fixed multiple of its length (see
/// `Protocol/README.md`, "Memory"): measured in the real binary as the growth of VmHWM.
@Suite struct LineMemoryTests {
  /// The documented bound: peak resident memory grows by at most this many bytes per line byte.
  static let multiple = 24
  static let length = 8 * 1024 * 1024

  static func peakGrowth(after line: [UInt8]) throws -> Int? {
    let server = try ServerProcess(["--memory"])
    defer {
      server.closeInput()
      _ = server.waitForExit()
    }
    server.send(#"{"jsonrpc":"2.0","id":0,"method":"status"}"#)
    guard server.readLine() != nil, let before = highWaterMark(server.pid) else { return nil }
    server.write(line + [0x0A])
    guard server.readLine(timeout: 120) != nil, let after = highWaterMark(server.pid) else { return nil }
    return after - before
  }

  /// VmHWM of `pid` in bytes, or nil where /proc is missing.
  static func highWaterMark(_ pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
      let digits = line.filter(\.isNumber)
      return Int(digits).map { $0 * 1024 }
    }
    return nil
  }

  /// `prefix`, then `unit` repeated to about `length` bytes (the last one without its comma), then `suffix`.
  static func line(_ prefix: String, _ unit: String, _ suffix: String) -> [UInt8] {
    let count = (length - prefix.utf8.count - suffix.utf8.count) / unit.utf8.count
    var text = prefix + String(repeating: unit, count: count)
    text.removeLast()
    return Array((text + suffix).utf8)
  }

  static let hostile: [(String, [UInt8])] = [
    ("a batch of empty objects", line("[", "{},", "]")),
    (
      "params holding an array of zeros",
      line(#"{"jsonrpc":"2.0","id":1,"method":"parsePayload","params":{"payload":["#, "0,", "]}}")
    ),
    (
      "params holding an array of empty objects",
      line(#"{"jsonrpc":"2.0","id":1,"method":"parsePayload","params":{"payload":["#, "{},", "]}}")
    ),
    (
      "event properties holding an array",
      line(
        #"{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"a","properties":{"x":["#, "1,", "]}}}")
    ),
  ]

  @Test(arguments: hostile.indices)
  func peakMemoryIsBoundedByTheLineLength(index: Int) throws {
    let (name, line) = Self.hostile[index]
    let growth = try #require(try Self.peakGrowth(after: line), "VmHWM from /proc/<pid>/status")
    #expect(growth <= Self.multiple * line.count, "\(name): grew \(growth) bytes for a line of \(line.count)")
  }
}
