package import OutboxJSON

/// One problem found in request params: where, a stable machine code, and a sentence for people.
///
/// Errors are collected, never thrown one at a time, so a `-32602` reply lists every problem.
/// Warnings use the same shape and ride along in a successful result.
package struct Issue: Sendable, Hashable {
  package var path: String
  package var code: String
  package var message: String
  /// More members for the wire form, e.g. `key`, `expected` and `got` for a required payload key.
  package var extra: [JSONMember]

  package init(path: String, code: String, message: String, extra: [JSONMember] = []) {
    self.path = path
    self.code = code
    self.message = message
    self.extra = extra
  }

  package var json: JSONValue {
    .object(
      [JSONMember("path", .string(path)), JSONMember("code", .string(code)), JSONMember("message", .string(message))]
        + extra)
  }
}

/// Errors and warnings gathered while checking one request.
package struct Issues: Sendable {
  package var errors: [Issue] = []
  package var warnings: [Issue] = []

  package init() {}

  package var isEmpty: Bool { errors.isEmpty }

  package mutating func error(_ path: String, _ code: String, _ message: String) {
    errors.append(Issue(path: path, code: code, message: message))
  }

  package mutating func warn(_ path: String, _ code: String, _ message: String) {
    warnings.append(Issue(path: path, code: code, message: message))
  }
}

extension String {
  /// True when every byte is ASCII. Every name table here (user fields, reserved keys, ISO codes,
  /// time zones) is ASCII, and for ASCII text `==` is byte equality; gating lookups on this keeps
  /// canonically equivalent non-ASCII text (`"\u{212A}"`, the Kelvin sign, equals `"K"`) from matching.
  package var isASCII: Bool { utf8.allSatisfy { $0 < 0x80 } }
}
