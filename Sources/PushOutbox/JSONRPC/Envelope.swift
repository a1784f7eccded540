/// A valid JSON-RPC 2.0 request or notification.
package struct Request: Sendable {
  /// nil for a notification (no `id` member at all); `.null` for an explicit `"id": null`.
  package var id: RequestID?
  package var method: String
  /// The `params` member: absent, an object (by name) or an array (by position).
  package var params: JSONValue?
  /// Set when the document held a duplicate key below the envelope; params are then searched.
  package var mayHaveDuplicateKeys: Bool

  package var isNotification: Bool { id == nil }
}

/// What one JSON value read from the wire turned out to be.
package enum Envelope: Sendable {
  case request(Request)
  /// Not a valid request. Answered with `-32600` (or the given error), echoing the id when readable.
  case invalid(id: RequestID?, RPCError)
  /// A response object (`result` or `error`, no `method`). This server sends no requests,
  /// so such input is logged and ignored; replying could loop between two peers.
  case response

  /// Classifies one request-shaped value (a whole line, or one member of a batch).
  package static func classify(_ value: JSONValue, duplicateKeys: Bool) -> Envelope {
    guard case .object(let members) = value else {
      return .invalid(id: .null, .invalidRequest("a request must be a JSON object"))
    }
    if duplicateKeys, let key = firstDuplicateKey(members) {
      return .invalid(id: .null, .invalidRequest("duplicate member \"\(key)\" in the request object"))
    }
    var id: RequestID? = nil
    if let rawID = members["id"] {
      guard let valid = RequestID(rawID) else {
        return .invalid(id: .null, .invalidRequest("id must be a string, a number or null"))
      }
      id = valid
    }
    let method = members["method"]
    if method == nil, members["result"] != nil || members["error"] != nil { return .response }
    guard members["jsonrpc"] == .string("2.0") else {
      return .invalid(id: id ?? .null, .invalidRequest("jsonrpc must be exactly \"2.0\""))
    }
    guard case .string(let name)? = method else {
      return .invalid(id: id ?? .null, .invalidRequest("method must be a string"))
    }
    let params = members["params"]
    switch params {
    case nil, .object?, .array?: break
    default: return .invalid(id: id ?? .null, .invalidRequest("params must be an object or an array when present"))
    }
    return .request(Request(id: id, method: name, params: params, mayHaveDuplicateKeys: duplicateKeys))
  }

  /// The first key that appears twice among `members`.
  package static func firstDuplicateKey(_ members: [JSONMember]) -> String? {
    var seen = Set<String>()
    for member in members where !seen.insert(member.key).inserted { return member.key }
    return nil
  }
}

/// Finds the path of the first duplicate key anywhere inside `value`, e.g. `properties.step`.
package func duplicateKeyPath(in value: JSONValue, path: String = "") -> String? {
  switch value {
  case .object(let members):
    if let key = Envelope.firstDuplicateKey(members) { return joinPath(path, key) }
    for member in members {
      if let found = duplicateKeyPath(in: member.value, path: joinPath(path, member.key)) { return found }
    }
  case .array(let items):
    for (n, item) in items.enumerated() {
      if let found = duplicateKeyPath(in: item, path: joinPath(path, index: n)) { return found }
    }
  default: break
  }
  return nil
}
