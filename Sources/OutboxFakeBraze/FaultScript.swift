package import OutboxJSON

/// What the fake does instead of (or on top of) checking a request: one `FaultStep` per
/// `/users/track` request, in order, then the default answer. Set by `--script`/`--script-file`
/// and at run time by `POST /_fake/script` (Clients/testing.md has the format).
package struct FaultStep: Sendable, Equatable {
  /// The status to answer; nil: check the request as usual.
  package var status: Int?
  /// A body to answer with instead of the status's usual one.
  package var body: JSONValue?
  package var headers: [String: String] = [:]
  package var delayMs = 0
  /// Close the connection without an answer.
  package var drop = false
  /// Per-object errors added to a success: (input_array, index, type).
  package var errors: [FakeBrazeRules.ObjectError] = []
  /// How many requests this step answers.
  package var times = 1

  package init(status: Int? = nil) { self.status = status }
}

/// `N/S`: at most N requests per S seconds; above it, 429 until the window ends.
package struct FakeRateLimit: Sendable, Equatable {
  package var count: Int
  package var seconds: Double

  package init?(_ text: String) {
    let parts = text.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 2, let n = Int(parts[0]), n >= 1, let s = Double(parts[1]), s > 0, s <= 86_400 else {
      return nil
    }
    count = n
    seconds = s
  }

  package var text: String { "\(count)/\(seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds))" }
}

/// A script or a script change, as `--script-file` and `POST /_fake/script` give it.
package struct ScriptChange: Sendable {
  package var steps: [FaultStep]?
  package var append = false
  /// Some(nil) clears the rate limit.
  package var rateLimit: FakeRateLimit??
  package var delayMs: Int?

  /// `{"steps":[…], "append":false, "rateLimit":"N/S"|null, "delayMs":N}`; a message naming what is wrong.
  package static func parse(_ value: JSONValue) -> Result<ScriptChange, ScriptError> {
    guard case .object(let members) = value else { return .failure(ScriptError("the script must be a JSON object")) }
    var change = ScriptChange()
    for member in members {
      switch (member.key, member.value) {
      case ("steps", .array(let items)):
        var steps: [FaultStep] = []
        for (n, item) in items.enumerated() {
          switch step(item) {
          case .success(let s): steps.append(s)
          case .failure(let e): return .failure(ScriptError("steps[\(n)]: \(e.message)"))
          }
        }
        change.steps = steps
      case ("append", .bool(let b)): change.append = b
      case ("rateLimit", .null): change.rateLimit = .some(nil)
      case ("rateLimit", .string(let s)):
        guard let limit = FakeRateLimit(s) else { return .failure(ScriptError("rateLimit must be \"N/S\", e.g. 10/1")) }
        change.rateLimit = .some(limit)
      case ("delayMs", let v):
        guard let ms = v.intValue, ms >= 0, ms <= 600_000 else {
          return .failure(ScriptError("delayMs must be 0 to 600000"))
        }
        change.delayMs = Int(ms)
      default:
        return .failure(
          ScriptError("unknown or mistyped key '\(member.key)'; the keys are steps, append, rateLimit, delayMs"))
      }
    }
    return .success(change)
  }

  /// One step: `{"status":500,"times":2,"retryAfter":1,"headers":{…},"delayMs":N,"drop":true,"body":…,"errors":[…]}`.
  static func step(_ value: JSONValue) -> Result<FaultStep, ScriptError> {
    guard case .object(let members) = value else { return .failure(ScriptError("a step must be an object")) }
    var s = FaultStep()
    for member in members {
      switch (member.key, member.value) {
      case ("status", let v):
        guard let n = v.intValue, n >= 100, n <= 599 else { return .failure(ScriptError("status must be 100 to 599")) }
        s.status = Int(n)
      case ("times", let v):
        guard let n = v.intValue, n >= 1, n <= 1_000_000 else {
          return .failure(ScriptError("times must be 1 or more"))
        }
        s.times = Int(n)
      case ("delayMs", let v):
        guard let ms = v.intValue, ms >= 0, ms <= 600_000 else {
          return .failure(ScriptError("delayMs must be 0 to 600000"))
        }
        s.delayMs = Int(ms)
      case ("retryAfter", let v):
        guard let n = v.intValue, n >= 0 else { return .failure(ScriptError("retryAfter must be whole seconds")) }
        s.headers["Retry-After"] = String(n)
      case ("headers", .object(let headers)):
        for h in headers {
          guard let text = h.value.stringValue ?? h.value.intValue.map(String.init), validHeader(h.key, text) else {
            return .failure(ScriptError("header \(h.key) must be a token name with a printable string value"))
          }
          s.headers[h.key] = text
        }
      case ("drop", .bool(let b)): s.drop = b
      case ("body", let v): s.body = v
      case ("errors", .array(let items)):
        for item in items {
          guard let array = item["input_array"]?.stringValue, let index = item["index"]?.intValue, index >= 0 else {
            return .failure(ScriptError("each error needs input_array (a string) and index (an integer)"))
          }
          let message = item["type"]?.stringValue ?? "scripted error"
          s.errors.append(.init(array: array, index: Int(index), message: message))
        }
      default:
        return .failure(
          ScriptError(
            "unknown or mistyped key '\(member.key)'; a step has status, times, retryAfter, headers, delayMs, drop, body, errors"
          ))
      }
    }
    return .success(s)
  }

  /// `--script 500,429,drop,201`: a status or `drop` per request.
  package static func steps(flag text: String) -> [FaultStep]? {
    var steps: [FaultStep] = []
    for word in text.split(separator: ",") {
      if word == "drop" {
        var s = FaultStep()
        s.drop = true
        steps.append(s)
      } else {
        guard let n = Int(word), n >= 100, n <= 599 else { return nil }
        steps.append(FaultStep(status: n))
      }
    }
    return steps.isEmpty ? nil : steps
  }

  static func validHeader(_ name: String, _ value: String) -> Bool {
    !name.isEmpty && name.utf8.count <= 256 && value.utf8.count <= 4096
      && name.utf8.allSatisfy {
        ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45
      }
      && value.utf8.allSatisfy { $0 >= 32 && $0 < 127 }
  }
}

package struct ScriptError: Error, Sendable {
  package var message: String
  init(_ message: String) { self.message = message }
}
