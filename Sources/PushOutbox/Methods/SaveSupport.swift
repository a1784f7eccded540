/// Shared pieces of the three save methods.
extension Params {
  /// The optional client-supplied item id: a non-empty string of at most 255 characters.
  package mutating func clientID() -> String? {
    guard let id = string("id") else { return nil }
    if id.isEmpty || id.unicodeScalars.count > 255 {
      issues.error("id", "invalid_id", "id must be a non-empty string of at most 255 characters")
      return nil
    }
    return id
  }
}

extension Array where Element == UInt8 {
  /// Appends `,"key":` for an item body.
  package mutating func appendMember(_ key: StaticString) {
    append(UInt8(ascii: ","))
    append(UInt8(ascii: "\""))
    appendASCII(key)
    appendASCII("\":")
  }

  /// Appends the item's `user` member when there is one.
  package mutating func appendUser(_ user: UserIdentifier?) {
    guard let user else { return }
    appendMember("user")
    user.json.encodeJSON(into: &self)
  }
}
