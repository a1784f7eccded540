import OutboxJSON
import OutboxStore
import OutboxSupport

extension TrackObject {
  /// Appends a custom event's object from its body as the store holds it (`HeldParts`), none of it
  /// put back together: a save's layout `,"user":{…}` + `,"name":"…","properties":` + the
  /// properties value, with its saved time dropped. The object is the bytes `append` writes from the
  /// whole body. Unless `known`, every part is checked canonical as it is read, so a rendered body
  /// is one `CanonicalJSON.isMembers` accepts. Any other layout is `.unknown` and nothing is appended.
  static func appendEvent(
    _ parts: HeldParts, savedAt: Int64, known: Bool, time: inout UTCTimeText, into out: inout [UInt8]
  ) -> Outcome {
    guard parts.timeFollows, let nameEnd = labelNameEnd(parts.label, known: known),
      let end = known ? CanonicalJSON.knownValueEnd(parts.rest, 0) : CanonicalJSON.valueEnd(parts.rest, 0),
      end == parts.rest.count, parts.user.count > userKey.utf8CodeUnitCount, hasPrefix(parts.user, userKey)
    else { return .unknown }
    let start = out.count
    out.append(UInt8(ascii: "{"))
    guard appendIdentifier(UnsafeRawBufferPointer(rebasing: parts.user[userKey.utf8CodeUnitCount...]), into: &out)
    else {
      out.removeSubrange(start...)
      return .unknown
    }
    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: parts.label[0..<nameEnd]))  // ,"name":"…"
    out.appendASCII(",\"time\":\"")
    time.append(ms: savedAt, to: &out)
    out.append(UInt8(ascii: "\""))
    if !isEmptyObject(parts.rest[...]) {  // an event without properties is sent without the key
      out.appendASCII(",\"properties\":")
      out.append(contentsOf: parts.rest)
    }
    out.append(UInt8(ascii: "}"))
    return .rendered
  }

  /// The end of `,"name":"…"` in a label that is exactly that and `,"properties":`.
  private static func labelNameEnd(_ label: UnsafeRawBufferPointer, known: Bool) -> Int? {
    let at = nameKey.utf8CodeUnitCount
    guard label.count > at + propertiesKey.utf8CodeUnitCount, hasPrefix(label, nameKey),
      label[at] == UInt8(ascii: "\""),
      let end = known ? CanonicalJSON.knownStringEnd(label, at) : CanonicalJSON.stringEnd(label, at),
      end + propertiesKey.utf8CodeUnitCount == label.count,
      memcmp(label.baseAddress! + end, propertiesKey.utf8Start, propertiesKey.utf8CodeUnitCount) == 0
    else { return nil }
    return end
  }

  /// `{}`, perhaps with spaces inside: properties that say nothing.
  static func isEmptyObject(_ value: Slice<UnsafeRawBufferPointer>) -> Bool {
    guard value.first == UInt8(ascii: "{"), value.last == UInt8(ascii: "}") else { return false }
    return value.dropFirst().dropLast().allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
  }

  private static let userKey: StaticString = #","user":"#
  private static let nameKey: StaticString = #","name":"#
  private static let propertiesKey: StaticString = #","properties":"#
}
