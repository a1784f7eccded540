import OutboxDomain
import OutboxJSON
import OutboxSupport

/// How a save's item body is written, by the general path (`SaveCustomEvent`, `SaveCustomAttribute`,
/// `SaveUserAttribute`) and by the fast tiers alike: its `time` and `user` members.
extension Array where Element == UInt8 {
  /// Appends the item's `,"time":"2026-01-02T03:04:05.678Z"` member for `ms` since the epoch (years
  /// 0000–9999), reusing `text` (`Service.timeText`) while the millisecond stays the same: one
  /// capacity check, the pieces written through a cursor.
  @inline(__always)
  mutating func appendTimeMember(ms: Int64, _ text: inout UTCTimeText) {
    ByteCursor.append(to: &self, capacity: 10 + UTCTimeText.length) { out in
      out.put(",\"time\":\"")
      text.write(ms: ms, to: out.p)
      out.advance(by: UTCTimeText.length)
      out.put(UInt8(ascii: "\""))
    }
  }

  /// Appends `,"key":` for an item body.
  mutating func appendMember(_ key: StaticString) {
    append(UInt8(ascii: ","))
    append(UInt8(ascii: "\""))
    appendASCII(key)
    appendASCII("\":")
  }

  /// Appends text known at compile time, such as `,"name":` (one copy instead of four appends).
  @inline(__always)
  mutating func appendRaw(_ text: StaticString) {
    appendBytes(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
  }

  /// Appends the item's `user` member from the request: the sent text itself when it is already
  /// the wire form (`UserIdentifier.isWireForm`).
  mutating func appendUser(_ user: (user: UserIdentifier, node: Int)?, from tape: JSONTape) {
    guard let user else { return }
    guard UserIdentifier.isWireForm(tape, user.node) else { return appendUser(user.user) }
    appendWireUser(user.node, from: tape)
  }

  /// Appends the `user` member as its node's text, which must be in the wire form.
  mutating func appendWireUser(_ node: Int, from tape: JSONTape) {
    appendRaw(",\"user\":")
    appendBytes(tape.text(node))
  }

  /// Appends the item's `user` member when there is one.
  mutating func appendUser(_ user: UserIdentifier?) {
    guard let user else { return }
    appendRaw(",\"user\":")
    user.appendJSON(to: &self)
  }
}
