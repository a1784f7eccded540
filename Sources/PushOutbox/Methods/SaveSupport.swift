/// Shared pieces of the three save methods.
extension Params {
  /// The optional client-supplied item id: a non-empty string of at most 255 characters.
  package mutating func clientID() -> String? {
    guard let n = node("id", "string") else { return nil }
    let fits = tape.withString(n) { !$0.isEmpty && TextLimit.fits($0) }
    if !fits {
      issues.error("id", "invalid_id", "id must be a non-empty string of at most 255 characters")
      return nil
    }
    return tape.string(n)
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
    user.appendJSON(to: &self)
  }
}
