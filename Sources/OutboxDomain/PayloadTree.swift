import OutboxJSON

/// A push payload read for checking: a tree of values that knows the byte range of every key and
/// value in the source text, read tolerantly, so one syntax error does not hide the rest of the file.
///
/// `PayloadReader` builds it (`PayloadTree.read`); `PayloadCheck` runs the rule table over it. The
/// LSP server turns the byte ranges into positions; `parsePayload` reports the paths.
package struct PayloadTree: Sendable {
  /// The top-level value; nil when the text holds no value at all.
  package var root: PayloadNode?
  /// Syntax problems, in text order (at most `PayloadReader.maxErrors`).
  package var syntax: [PayloadFinding] = []
  /// Text that is JSON but not sendable: invalid UTF-8, unpaired `\u` surrogates (codes
  /// `invalid-utf8`, `lone-surrogate`). The values still read, with U+FFFD in their place.
  package var encoding: [PayloadFinding] = []
  /// False when recovery skipped text: rules about absent keys then stay silent.
  package var complete: Bool { syntax.isEmpty }
  /// The source's length in bytes.
  package var byteCount = 0

  package init() {}
}

/// One value, with its byte range `start..<end` in the source.
package struct PayloadNode: Sendable {
  package enum Kind: Sendable, Equatable {
    case object, array, string, number, bool, null
  }

  package var kind: Kind
  package var start: Int
  package var end: Int
  /// A string's decoded text; a number's or literal's source text.
  package var text: String = ""
  package var members: [PayloadMember] = []
  package var elements: [PayloadNode] = []

  package init(kind: Kind, start: Int, end: Int) {
    self.kind = kind
    self.start = start
    self.end = end
  }

  /// The JSON type name, as `JSONValue.typeName` spells it.
  package var typeName: String {
    switch kind {
    case .object: "object"
    case .array: "array"
    case .string: "string"
    case .bool: "boolean"
    case .null: "null"
    case .number: isInteger ? "integer" : "number"
    }
  }

  package var isInteger: Bool {
    kind == .number && !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }
  }

  /// The value of a number, for range checks.
  package var number: Double? { kind == .number ? Double(text) : nil }

  /// An integer that fits Int64.
  package var integer: Int64? { isInteger ? Int64(text) : nil }

  /// The last member named `key` (as Apple's and Braze's parsers keep the last of duplicates).
  package subscript(key: String) -> PayloadNode? { member(key)?.value }

  package func member(_ key: String) -> PayloadMember? {
    members.last { sameText($0.key, key) }
  }

  /// The length of this value as compact UTF-8 JSON (how APNs measures a payload).
  package var compactSize: Int {
    switch kind {
    case .null, .bool, .number: return text.utf8.count
    case .string: return JSONSize.string(text)
    case .array: return elements.reduce(max(1, elements.count) + 1) { $0 + $1.compactSize }
    case .object:
      return members.reduce(max(1, members.count) + 1) { $0 + JSONSize.string($1.key) + 1 + $1.value.compactSize }
    }
  }
}

/// One `"key": value` member, with where its key starts and ends and where the previous value ended
/// (for removing the member with the comma before it).
package struct PayloadMember: Sendable {
  package var key: String
  package var keyStart: Int
  package var keyEnd: Int
  package var value: PayloadNode
  /// The end of the previous member's value, or the object's `{` + 1 for the first member.
  package var previousEnd: Int
}

extension PayloadTree {
  /// Reads `bytes` (UTF-8 JSON text), recovering from syntax errors where it can.
  package static func read(_ bytes: UnsafeBufferPointer<UInt8>) -> PayloadTree {
    var reader = PayloadReader(bytes)
    return reader.document()
  }

  package static func read(_ bytes: [UInt8]) -> PayloadTree {
    bytes.withUnsafeBufferPointer { read($0) }
  }

  /// The node at `path` (keys from the root), if every step is an object member.
  package func node(at path: [String]) -> PayloadNode? {
    var node = root
    for key in path { node = node?[key] }
    return node
  }
}
