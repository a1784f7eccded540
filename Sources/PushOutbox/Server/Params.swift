/// Reads a method's by-name params and collects every problem, so one `-32602` lists them all.
///
/// Each accessor marks its key as known; `finish()` reports keys nobody asked for, then throws
/// if anything was wrong.
package struct Params {
  private let members: [JSONMember]
  private var used: UInt64 = 0
  package var issues = Issues()

  /// Accepts a params object or no params; positional (array) params are `-32602`.
  package init(_ params: JSONValue?) throws(RPCError) {
    switch params {
    case nil: members = []
    case .object(let m)?: members = m
    default:
      throw .invalidParams(path: "", code: "positional_params", "params must be an object of named params")
    }
  }

  /// The raw value of `key`, marking it known.
  package mutating func value(_ key: String) -> JSONValue? {
    for (n, member) in members.enumerated() where member.key == key {
      if n < 64 { used |= 1 << UInt64(n) }
      return member.value
    }
    return nil
  }

  package mutating func string(_ key: String, required: Bool = false) -> String? {
    typed(key, "string", required: required) { $0.stringValue }
  }

  package mutating func int(_ key: String, required: Bool = false, min: Int64 = .min) -> Int64? {
    guard let n = typed(key, "integer", required: required, { $0.intValue }) else { return nil }
    if n < min {
      issues.error(key, "out_of_range", "\(key) must be at least \(min)")
      return nil
    }
    return n
  }

  package mutating func object(_ key: String, required: Bool = false) -> [JSONMember]? {
    typed(key, "object", required: required) { $0.objectValue }
  }

  package mutating func array(_ key: String, required: Bool = false) -> [JSONValue]? {
    typed(key, "array", required: required) { $0.arrayValue }
  }

  /// A string param restricted to `choices`.
  package mutating func choice(_ key: String, _ choices: [String]) -> String? {
    guard let s = string(key) else { return nil }
    guard choices.contains(s) else {
      issues.error(key, "invalid_value", "\(key) must be one of " + choices.joined(separator: ", "))
      return nil
    }
    return s
  }

  /// The optional `user` identifier object.
  package mutating func user(_ key: String = "user") -> UserIdentifier? {
    guard let raw = value(key) else { return nil }
    return UserIdentifier.parse(raw, path: key, issues: &issues)
  }

  private mutating func typed<T>(
    _ key: String, _ type: String, required: Bool, _ cast: (JSONValue) -> T?
  ) -> T? {
    guard let raw = value(key) else {
      if required { issues.error(key, "missing", "\(key) is required") }
      return nil
    }
    guard let typed = cast(raw) else {
      issues.error(key, "wrong_type", "\(key) must be \(article(type)) \(type), not \(raw.typeName)")
      return nil
    }
    return typed
  }

  /// Reports unknown keys; throws `-32602` if any problem was found. Returns the warnings.
  package mutating func finish() throws(RPCError) -> [Issue] {
    for (n, member) in members.enumerated() where n >= 64 || used & (1 << UInt64(n)) == 0 {
      issues.error(member.key, "unknown_param", "unknown param \"\(member.key)\"")
    }
    if !issues.errors.isEmpty { throw .invalidParams(issues.errors) }
    return issues.warnings
  }
}

private func article(_ word: String) -> String {
  word.first.map { "aeiou".contains($0) } == true ? "an" : "a"
}
