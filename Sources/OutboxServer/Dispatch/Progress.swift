import OutboxDomain
package import OutboxJSON
import OutboxSupport

/// Where a long call's progress goes: an LSP `workDoneToken` (`$/progress` begin, report, end) and
/// an MCP `_meta.progressToken` (`notifications/progress`). Either, both or neither may be set.
package struct ProgressTokens: Sendable {
  package var workDone: JSONValue?
  package var mcp: JSONValue?
  /// The work's name, the `title` of `$/progress` begin.
  package var title = ""
  /// What `done` and `total` count, in the messages ("items", "elements").
  package var unit = "items"

  package init(workDone: JSONValue? = nil, mcp: JSONValue? = nil, title: String = "", unit: String = "items") {
    self.workDone = workDone
    self.mcp = mcp
    self.title = title
    self.unit = unit
  }

  var isEmpty: Bool { workDone == nil && mcp == nil }
}

extension Params {
  /// The progress tokens of a long method's params: `workDoneToken` (LSP) and `_meta.progressToken`
  /// (MCP), each a string or an integer. Other members of `_meta` are ignored, as MCP reserves it.
  package mutating func progressTokens(title: String) -> ProgressTokens {
    var tokens = ProgressTokens(title: title)
    if let n = node("workDoneToken") { tokens.workDone = token(n, path: "workDoneToken") }
    if let meta = node("_meta", "object") {
      for (k, v) in tape.members(meta) where tape.stringEquals(k, "progressToken") {
        tokens.mcp = token(v, path: "_meta.progressToken")
      }
    }
    return tokens
  }

  private mutating func token(_ n: Int, path: String) -> JSONValue? {
    let lead = tape.lead(n)
    if lead == UInt8(ascii: "\"") || tape.isIntegerText(n) { return tape.value(n) }
    issues.error(path, "wrong_type", "\(path) must be a string or an integer, not \(tape.typeName(n))")
    return nil
  }
}

/// Writes one long call's progress notifications, at most 10 a second for each token: a report is
/// sent only when the work moved, 100 ms after the previous message, and when fewer than 9 went
/// out in the last second, which leaves room for the final message in any one-second window.
struct ProgressReporter {
  private let tokens: ProgressTokens
  /// Monotonic seconds of the messages sent in the last second.
  private var recent: [Double] = []
  private var lastDone = -1
  private var cancellable = true

  static let interval = 0.1
  static let perSecond = 10

  init(_ tokens: ProgressTokens) { self.tokens = tokens }

  /// The first message: `$/progress` begin, and the MCP progress at its start.
  mutating func begin(_ progress: (done: Int, total: Int), cancellable: Bool, into out: inout [UInt8]) {
    guard !tokens.isEmpty else { return }
    self.cancellable = cancellable
    emit(progress, kind: "begin", into: &out)
  }

  /// A report, when the work moved and the rate allows it.
  mutating func report(_ progress: (done: Int, total: Int), into out: inout [UInt8]) {
    guard !tokens.isEmpty, progress.done != lastDone else { return }
    let now = Clock.monotonicSeconds()
    recent.removeAll { now - $0 >= 1 }
    guard recent.count < Self.perSecond - 1, recent.last.map({ now - $0 >= Self.interval }) ?? true else { return }
    emit(progress, kind: "report", into: &out)
  }

  /// The last message, before the reply: `$/progress` end, and the MCP progress if it moved.
  mutating func end(_ progress: (done: Int, total: Int), into out: inout [UInt8]) {
    guard !tokens.isEmpty else { return }
    emit(progress, kind: "end", into: &out)
  }

  private mutating func emit(_ progress: (done: Int, total: Int), kind: String, into out: inout [UInt8]) {
    let message = "\(progress.done)/\(progress.total) \(tokens.unit)"
    if let token = tokens.workDone {
      var value = [JSONMember("kind", .string(kind))]
      if kind == "begin" {
        value += [JSONMember("title", .string(tokens.title)), JSONMember("cancellable", .bool(cancellable))]
      }
      value.append(JSONMember("message", .string(message)))
      if kind != "end" {
        let percentage = progress.total == 0 ? 0 : min(100, progress.done * 100 / progress.total)
        value.append(JSONMember("percentage", .int(Int64(percentage))))
      }
      Self.notification("$/progress", [JSONMember("token", token), JSONMember("value", .object(value))], into: &out)
    }
    if let token = tokens.mcp, progress.done > lastDone {  // MCP: progress increases with each one
      Self.notification(
        "notifications/progress",
        [
          JSONMember("progressToken", token), JSONMember("progress", .int(Int64(progress.done))),
          JSONMember("total", .int(Int64(progress.total))), JSONMember("message", .string(message)),
        ], into: &out)
    }
    lastDone = progress.done
    recent.append(Clock.monotonicSeconds())
  }

  private static func notification(_ method: String, _ params: [JSONMember], into out: inout [UInt8]) {
    JSONValue.object([
      JSONMember("jsonrpc", .string("2.0")), JSONMember("method", .string(method)),
      JSONMember("params", .object(params)),
    ]).encodeJSON(into: &out)
    out.append(UInt8(ascii: "\n"))
  }
}
