import OutboxJSON

/// Where an item body's repeated parts end: its leading `,"user":{…}` member and its label (the
/// string member after it with the next member's key: `,"name":"purchase","properties":`), with
/// their hashes. `StoredBody` holds those parts once per store.
///
/// A save's writer knows them as it writes the body (`init(body:userEnd:labelEnd:)`, on whichever
/// thread writes it); the store finds them otherwise. Any split decodes to the same bytes (the parts
/// are put back in order), so parts that are wrong cost memory, never an item's bytes.
package struct BodyParts: Sendable {
  /// The user member is `0..<userEnd` (0: none).
  package private(set) var userEnd = 0
  /// The label is `userEnd..<labelEnd` (`labelEnd == userEnd`: none).
  package private(set) var labelEnd = 0
  package private(set) var userHash: UInt32 = 0
  package private(set) var labelHash: UInt32 = 0

  /// The parts of `body` as its writer placed them.
  package init(body: UnsafeRawBufferPointer, userEnd: Int, labelEnd: Int) {
    guard 0 <= userEnd, userEnd <= labelEnd, labelEnd <= body.count else { return }
    self.userEnd = userEnd
    self.labelEnd = labelEnd
    let seed = InternTable.seed
    userHash = InternTable.hash(UnsafeRawBufferPointer(rebasing: body[0..<userEnd]), seed: seed)
    labelHash = InternTable.hash(UnsafeRawBufferPointer(rebasing: body[userEnd..<labelEnd]), seed: seed)
  }

  /// The parts of `body[range]`, looked for (scans that assume canonical bytes and stay in bounds
  /// whatever the bytes are: in others they may find less, or other parts).
  init(finding body: UnsafeRawBufferPointer, _ range: Range<Int>) {
    let kept = UnsafeRawBufferPointer(rebasing: body[0..<range.upperBound])
    let userEnd = Self.userEnd(kept) ?? 0
    self.init(body: kept, userEnd: userEnd, labelEnd: Self.labelEnd(kept, userEnd..<kept.count) ?? userEnd)
  }

  /// True when the parts lie within `range` (a body whose `time` was taken off).
  func fits(_ range: Range<Int>) -> Bool { labelEnd <= range.upperBound }

  private static let userKey: StaticString = ",\"user\":"

  /// The end of a leading `,"user":{…}` member in canonical bytes.
  private static func userEnd(_ body: UnsafeRawBufferPointer) -> Int? {
    guard body.count > 8, body.loadUnaligned(as: UInt64.self) == StoredBody.word(userKey) else { return nil }
    return CanonicalJSON.knownValueEnd(body, 8)
  }

  /// The end of the member starting at `range.lowerBound` when its value is a string, with the key
  /// of the member after it (`,"name":"purchase","properties":`): together they repeat as often.
  private static func labelEnd(_ body: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
    guard let end = stringMemberEnd(body, range) else { return nil }
    let next = end..<range.upperBound
    guard next.count > 3, body[end] == UInt8(ascii: ","), body[end + 1] == 0x22,
      let keyEnd = CanonicalJSON.knownStringEnd(body, end + 1), keyEnd < next.upperBound,
      body[keyEnd] == UInt8(ascii: ":")
    else { return end }
    return keyEnd + 1
  }

  /// The end of the member starting at `range.lowerBound` when its value is a string.
  private static func stringMemberEnd(_ body: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
    let start = range.lowerBound
    guard range.count > 4, body[start] == UInt8(ascii: ","), body[start + 1] == 0x22,
      let keyEnd = CanonicalJSON.knownStringEnd(body, start + 1), keyEnd + 1 < range.upperBound,
      body[keyEnd] == UInt8(ascii: ":"), body[keyEnd + 1] == 0x22,
      let end = CanonicalJSON.knownStringEnd(body, keyEnd + 1), end <= range.upperBound
    else { return nil }
    return end
  }
}
