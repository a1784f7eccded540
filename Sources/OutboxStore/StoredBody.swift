import OutboxJSON
import OutboxSupport

/// How an item's body is held in the arena: the bytes that repeat across items are held once.
///
/// A record is a header byte, then the generated id when it cannot be recomputed (16 bytes), the
/// entry numbers of an interned `user` member and of the label after it (the string member that
/// follows: the event `name`, the attribute `key` or `field`, with the next member's key), each as
/// a LEB128 varint, then the rest of the body as it was.
/// A `time` member that ends the body with the item's own `savedAt` is dropped and rendered again.
/// Decoding puts the parts back in order, so it gives back the body's bytes exactly however the
/// parts were found, in any bytes (`StoredBodyTests`): a body need not be checked to be split.
struct StoredBody {
  struct Header: OptionSet {
    let rawValue: UInt8
    static let explicitID = Header(rawValue: 1)
    static let user = Header(rawValue: 2)
    static let label = Header(rawValue: 4)
    static let time = Header(rawValue: 8)
  }

  /// What precedes the kept bytes in a record: at most 1 + 16 + 5 + 5 bytes.
  struct Prefix {
    var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    var count = 1
    var header: Header {
      get { withUnsafeBytes(of: bytes) { Header(rawValue: $0[0]) } }
      set { withUnsafeMutableBytes(of: &bytes) { $0[0] = newValue.rawValue } }
    }

    func with(_ header: Header) -> Prefix {
      var prefix = self
      prefix.header = header
      return prefix
    }

    mutating func append(_ word: UInt64) {
      withUnsafeMutableBytes(of: &bytes) { $0.storeBytes(of: word.bigEndian, toByteOffset: count, as: UInt64.self) }
      count += 8
    }

    mutating func appendVarint(_ value: UInt32) {
      var value = value
      withUnsafeMutableBytes(of: &bytes) { out in
        while value >= 0x80 {
          out[count] = UInt8(truncatingIfNeeded: value) | 0x80
          value >>= 7
          count += 1
        }
        out[count] = UInt8(value)
        count += 1
      }
    }
  }

  private(set) var users = InternTable()
  private(set) var labels = InternTable()
  private var timeText = UTCTimeText()

  init() {}

  /// Bodies whose intern tables were rebuilt (`LoadImage`).
  init(users: InternTable, labels: InternTable) {
    self.users = users
    self.labels = labels
  }
  private static let timeKey: StaticString = ",\"time\":\""
  /// `,"time":"2026-01-02T03:04:05.678Z"`
  static var timeMemberLength: Int { 9 + UTCTimeText.length + 1 }

  /// The record's prefix for `body`, and the range of `body` kept after it. `parts`: where the
  /// writer knows the user member and the label end; else they are looked for.
  mutating func encode(
    _ body: UnsafeRawBufferPointer, savedAt: Int64, explicitID: (UInt64, UInt64)?, parts: BodyParts? = nil
  ) -> (Prefix, Range<Int>) {
    var prefix = Prefix()
    var header: Header = []
    if let (high, low) = explicitID {
      header.insert(.explicitID)
      prefix.append(high)
      prefix.append(low)
    }
    var rest = 0..<body.count
    if endsWithTime(body, savedAt) {
      header.insert(.time)
      rest = 0..<body.count - Self.timeMemberLength
    }
    let parts = parts.flatMap { $0.fits(rest) ? $0 : nil } ?? BodyParts(finding: body, rest)
    if parts.userEnd > 0 {
      guard let entry = users.intern(UnsafeRawBufferPointer(rebasing: body[0..<parts.userEnd]), hash: parts.userHash)
      else { return (prefix.with(header), rest) }  // the label may not come before the user
      header.insert(.user)
      prefix.appendVarint(entry)
    }
    let label = UnsafeRawBufferPointer(rebasing: body[parts.userEnd..<parts.labelEnd])
    if parts.labelEnd > parts.userEnd, let entry = labels.intern(label, hash: parts.labelHash) {
      header.insert(.label)
      prefix.appendVarint(entry)
      rest = parts.labelEnd..<rest.upperBound
    } else {
      rest = parts.userEnd..<rest.upperBound
    }
    return (prefix.with(header), rest)
  }

  /// Appends the body of `record` (saved at `savedAt`) to `out`.
  mutating func decode(_ record: UnsafeRawBufferPointer, savedAt: Int64, to out: inout [UInt8]) {
    let reader = Reader(record)
    out.reserveCapacity(out.count + bodyLength(record, reader))  // one allocation for a new array
    if let entry = reader.user { users.append(entry, to: &out) }
    if let entry = reader.label { labels.append(entry, to: &out) }
    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: record[reader.offset...]))
    if reader.header.contains(.time) { appendTime(savedAt, to: &out) }
  }

  /// The parts of `record`'s body as they are held, none put back together: valid until the store
  /// changes (a release may compact the intern tables).
  func parts(_ record: UnsafeRawBufferPointer) -> HeldParts {
    let reader = Reader(record)
    return HeldParts(
      user: users.bytes(reader.user), label: labels.bytes(reader.label),
      rest: UnsafeRawBufferPointer(rebasing: record[reader.offset...]), timeFollows: reader.header.contains(.time))
  }

  /// Reads, ahead of their saves, the parts of the user table that the saves of these user hashes
  /// (`BodyParts.userHash`) will look at: all at once, so the cache misses of a table of many users
  /// overlap instead of coming one save at a time.
  mutating func warm(userHashes: [UInt32]) { users.warm(userHashes) }

  /// The user entry `record` names, if any: what `warm(reading:)` and `warm(releasing:)` take.
  static func userEntry(_ record: UnsafeRawBufferPointer) -> UInt32? { Reader(record).user }

  /// Reads ahead the user bytes that `withParts` of records naming these entries will read.
  func warm(reading users: [UInt32]) -> UInt64 { self.users.warm(reading: users) }

  /// Reads ahead the user table slots that `release` of records naming these entries will change.
  mutating func warm(releasing users: [UInt32]) { self.users.warm(releasing: users) }

  /// The byte count of the body `record` holds.
  func bodyLength(_ record: UnsafeRawBufferPointer) -> Int { bodyLength(record, Reader(record)) }

  private func bodyLength(_ record: UnsafeRawBufferPointer, _ reader: Reader) -> Int {
    var length = record.count - reader.offset
    if let entry = reader.user { length += users.length(entry) }
    if let entry = reader.label { length += labels.length(entry) }
    if reader.header.contains(.time) { length += Self.timeMemberLength }
    return length
  }

  /// The generated id a record holds, if it holds one.
  func explicitID(_ record: UnsafeRawBufferPointer) -> (UInt64, UInt64)? {
    guard Header(rawValue: record[0]).contains(.explicitID) else { return nil }
    return (
      UInt64(bigEndian: record.loadUnaligned(fromByteOffset: 1, as: UInt64.self)),
      UInt64(bigEndian: record.loadUnaligned(fromByteOffset: 9, as: UInt64.self))
    )
  }

  /// True when the body is held whole (nothing to put back): `record` minus its header is the body.
  static func isWhole(_ record: UnsafeRawBufferPointer) -> Bool { record[0] & ~Header.explicitID.rawValue == 0 }

  /// The row lets go of the entries its record uses. Returns the byte count of the body it held
  /// (`bodyLength`, with the record read once).
  @discardableResult
  mutating func release(_ record: UnsafeRawBufferPointer) -> Int {
    let reader = Reader(record)
    let length = bodyLength(record, reader)
    if let entry = reader.user { users.release(entry) }
    if let entry = reader.label { labels.release(entry) }
    return length
  }

  /// Where the kept bytes start in a record, and the entry numbers before them.
  struct Reader {
    let header: Header
    private(set) var user: UInt32?
    private(set) var label: UInt32?
    private(set) var offset = 1

    /// The reader of a record from a file that may be hostile, read once: nil unless its header is
    /// known and its id and entry numbers (varints of at most five bytes) lie within it.
    static func checked(_ record: UnsafeRawBufferPointer) -> Reader? {
      guard let first = record.first, first & ~0x0F == 0 else { return nil }
      var reader = Reader(header: Header(rawValue: first))
      reader.offset = reader.header.contains(.explicitID) ? 17 : 1
      if reader.header.contains(.user) {
        guard let entry = checkedVarint(record, &reader.offset) else { return nil }
        reader.user = entry
      }
      if reader.header.contains(.label) {
        guard let entry = checkedVarint(record, &reader.offset) else { return nil }
        reader.label = entry
      }
      return reader.offset <= record.count ? reader : nil
    }

    private init(header: Header) { self.header = header }

    init(_ record: UnsafeRawBufferPointer) {
      header = Header(rawValue: record[0])
      if header.contains(.explicitID) { offset += 16 }
      if header.contains(.user) { user = Self.varint(record, &offset) }
      if header.contains(.label) { label = Self.varint(record, &offset) }
    }

    /// `varint` within the record, and fitting 32 bits; nil otherwise.
    private static func checkedVarint(_ record: UnsafeRawBufferPointer, _ offset: inout Int) -> UInt32? {
      var value: UInt32 = 0
      for shift in stride(from: UInt32(0), through: 28, by: 7) {
        guard offset < record.count, shift < 28 || record[offset] < 0x10 else { return nil }
        let byte = record[offset]
        offset += 1
        value |= UInt32(byte & 0x7F) << shift
        if byte < 0x80 { return value }
      }
      return nil
    }

    private static func varint(_ record: UnsafeRawBufferPointer, _ offset: inout Int) -> UInt32 {
      var value: UInt32 = 0
      var shift: UInt32 = 0
      while true {
        let byte = record[offset]
        offset += 1
        value |= UInt32(byte & 0x7F) << shift
        if byte < 0x80 { return value }
        shift += 7
      }
    }
  }

  private mutating func appendTime(_ savedAt: Int64, to out: inout [UInt8]) {
    out.appendBytes(UnsafeRawBufferPointer(start: Self.timeKey.utf8Start, count: 9))
    timeText.append(ms: savedAt, to: &out)
    out.append(UInt8(ascii: "\""))
  }

  private mutating func endsWithTime(_ body: UnsafeRawBufferPointer, _ savedAt: Int64) -> Bool {
    let start = body.count - Self.timeMemberLength
    guard start >= 0, body[body.count - 1] == UInt8(ascii: "\""),
      body.loadUnaligned(fromByteOffset: start, as: UInt64.self) == Self.word(Self.timeKey), body[start + 8] == 0x22
    else { return false }
    var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
    withUnsafeMutableBytes(of: &text) {
      timeText.write(ms: savedAt, to: $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }
    return body.loadUnaligned(fromByteOffset: start + 9, as: UInt64.self) == text.0
      && body.loadUnaligned(fromByteOffset: start + 17, as: UInt64.self) == text.1
      && body.loadUnaligned(fromByteOffset: start + 25, as: UInt64.self) == text.2
  }

  /// The first eight bytes of `text`, as a load from memory gives them.
  static func word(_ text: StaticString) -> UInt64 {
    UnsafeRawPointer(text.utf8Start).loadUnaligned(as: UInt64.self)
  }
}
