package import OutboxDomain
package import OutboxJSON
package import OutboxJSONRPC

/// Reads a method's by-name params and collects every problem, so one `-32602` lists them all.
///
/// Params are nodes of the line's `JSONTape`: a lookup compares key bytes (code points) and
/// builds nothing; typed accessors make a `String` or `JSONValue` only when asked for one.
/// Each accessor marks its key as known; `finish()` reports keys nobody asked for, then throws
/// if anything was wrong.
package struct Params {
  package let tape: JSONTape
  /// The params object node, or -1 when the request had none.
  private let node: Int
  private var used: UInt64 = 0
  /// Where the next search starts: a key node, and its member index.
  private var cursor: Int
  private var cursorIndex = 0
  package var issues = Issues()

  /// The params object's node (-1: the request had none).
  var objectNode: Int { node }

  /// The params object at node `node` of `tape`: params built in this process (`importLegacy` checks
  /// each element it imports as the params of a save method). `node` must be an object.
  package init(tape: JSONTape, node: Int) {
    self.tape = tape
    self.node = node
    cursor = node + 1
  }

  /// Accepts a params object or no params; positional (array) params are `-32602`.
  package init(_ request: Request) throws(RPCError) {
    tape = request.tape
    node = request.paramsNode
    cursor = node + 1
    if node >= 0, !tape.isObject(node) {
      throw .invalidParams(path: "", code: "positional_params", "params must be an object of named params")
    }
  }

  /// The value node of `key`, marking it known. The search starts after the last key found, so
  /// params asked for in the order they were sent cost one comparison each.
  package mutating func node(_ key: StaticString) -> Int? {
    guard node >= 0 else { return nil }
    let end = tape.next(node)
    var k = cursor
    var n = cursorIndex
    for _ in 0..<2 {
      while k < end {
        let v = k + 1
        if tape.stringEquals(k, key) {
          if n < 64 { used |= 1 << UInt64(n) }
          cursor = tape.next(v)
          cursorIndex = n + 1
          return v
        }
        k = tape.next(v)
        n += 1
      }
      k = node + 1
      n = 0
    }
    return nil
  }

  /// The value of `key` as a tree, marking it known.
  package mutating func value(_ key: StaticString) -> JSONValue? {
    node(key).map { tape.value($0) }
  }

  /// The node of `key` when it has the JSON type `type` (`"string"`, `"object"`…); else an issue.
  package mutating func node(_ key: StaticString, _ type: StaticString, required: Bool = false) -> Int? {
    guard let n = node(key) else {
      if required { issues.error("\(key)", "missing", "\(key) is required") }
      return nil
    }
    let lead = tape.lead(n)
    let matches =
      switch type.utf8Start[0] {
      case UInt8(ascii: "s"): lead == UInt8(ascii: "\"")
      case UInt8(ascii: "o"): lead == UInt8(ascii: "{")
      case UInt8(ascii: "a"): lead == UInt8(ascii: "[")
      default: false
      }
    guard matches else {
      issues.error("\(key)", "wrong_type", "\(key) must be \(article("\(type)")) \(type), not \(tape.typeName(n))")
      return nil
    }
    return n
  }

  package mutating func string(_ key: StaticString, required: Bool = false) -> String? {
    node(key, "string", required: required).map { tape.string($0) }
  }

  package mutating func object(_ key: StaticString, required: Bool = false) -> [JSONMember]? {
    node(key, "object", required: required).flatMap { tape.value($0).objectValue }
  }

  package mutating func array(_ key: StaticString, required: Bool = false) -> [JSONValue]? {
    node(key, "array", required: required).flatMap { tape.value($0).arrayValue }
  }

  /// An integer param in `range`. Anything else (a fraction, an integer beyond `Int64`, one outside
  /// `range`) is an issue whose `min` and `max` name the allowed range.
  package mutating func int(_ key: StaticString, in range: ClosedRange<Int64>, required: Bool = false) -> Int64? {
    guard let n = node(key) else {
      if required { issues.error("\(key)", "missing", "\(key) is required") }
      return nil
    }
    guard tape.isIntegerText(n) else {
      issues.error("\(key)", "wrong_type", "\(key) must be an integer, not \(tape.typeName(n))")
      return nil
    }
    guard let value = tape.int64(n), range.contains(value) else {
      issues.errors.append(
        Issue(
          path: "\(key)", code: "out_of_range",
          message: "\(key) must be an integer from \(range.lowerBound) to \(range.upperBound)",
          extra: [JSONMember("min", .int(range.lowerBound)), JSONMember("max", .int(range.upperBound))]))
      return nil
    }
    return value
  }

  package mutating func int(_ key: StaticString, required: Bool = false, min: Int64 = .min) -> Int64? {
    int(key, in: min...Int64.max, required: required)
  }

  /// A string param restricted to `choices` (compared by code points); returns the matching choice.
  package mutating func choice(_ key: StaticString, _ choices: [StaticString]) -> String? {
    guard let n = node(key, "string") else { return nil }
    for choice in choices where tape.stringEquals(n, choice) { return "\(choice)" }
    issues.error(
      "\(key)", "invalid_value", "\(key) must be one of " + choices.map { "\($0)" }.joined(separator: ", "))
    return nil
  }

  /// The optional `user` identifier object.
  package mutating func user(_ key: StaticString = "user") -> UserIdentifier? {
    userNode(key)?.user
  }

  /// The optional `user` identifier object and its node.
  mutating func userNode(_ key: StaticString = "user") -> (user: UserIdentifier, node: Int)? {
    guard let n = node(key), let user = UserIdentifier.parse(tape, n, path: "\(key)", issues: &issues) else {
      return nil
    }
    return (user, n)
  }

  /// Reports unknown keys; throws `-32602` if any problem was found. Returns the warnings.
  package mutating func finish() throws(RPCError) -> [Issue] {
    if node >= 0 {
      var n: UInt64 = 0
      for (k, _) in tape.members(node) {
        if n >= 64 || used & (1 << n) == 0 {
          let key = tape.string(k)
          issues.error(key, "unknown_param", "unknown param \"\(key)\"")
        }
        n += 1
      }
    }
    if !issues.errors.isEmpty { throw .invalidParams(issues.errors) }
    return issues.warnings
  }
}

private func article(_ word: String) -> String {
  word.utf8.first.map { "aeiou".utf8.contains($0) } == true ? "an" : "a"
}

/// A piece the three save methods share.
extension Params {
  /// The optional client-supplied item id: a non-empty string of at most 255 characters.
  package mutating func clientID() -> String? {
    guard let n = node("id", "string") else { return nil }
    // The store keeps an id's length in one byte: 255 characters, and at most 255 UTF-8 bytes.
    let fits = tape.withString(n) { !$0.isEmpty && $0.count <= 255 && TextLimit.fits($0) }
    if !fits {
      issues.error("id", "invalid_id", "id must be a non-empty string of at most 255 characters")
      return nil
    }
    return tape.string(n)
  }
}
