import OutboxSupport

/// Reads a segment's records back: a scan over bytes with every length checked, never a trap.
package struct SegmentReader {
  package let bytes: UnsafeRawBufferPointer

  package init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

  /// One record: its type, seq and payload bytes, and the offset just past it.
  package struct Record {
    package var type: SegmentFormat.RecordType
    package var seq: UInt64
    package var payload: UnsafeRawBufferPointer
    package var end: Int
  }

  package enum ReadResult {
    case record(Record)
    case end
    /// Not enough bytes for the record its header announces (or for a header): a torn write.
    case torn
    /// The bytes are all there but do not check out.
    case damaged(String)
  }

  /// The format version the header declares, or nil if this is not a segment.
  var headerVersion: UInt32? {
    guard bytes.count >= SegmentFormat.headerSize, bytes.prefix(8).elementsEqual(SegmentFormat.magic) else {
      return nil
    }
    return u32(8)
  }

  /// One frame of the record framing both journal formats share (format 2's segments and format 1's
  /// `journal.*` files): `u32 length | u32 crc32c | u8 type | u64 seq | payload`, the CRC-32C over
  /// type, seq and payload. What a type byte means and which seqs are valid is each format's own
  /// (`read(at:)` here, `JournalFormatV1.readRecord`).
  struct Frame {
    package var type: UInt8
    package var seq: UInt64
    package var payload: UnsafeRawBufferPointer
    /// Offset just past the frame.
    package var end: Int
  }

  enum FrameResult {
    case frame(Frame)
    case end
    /// Not enough bytes for the frame its header announces (or for a header): a torn write.
    case torn
    /// The bytes are all there but do not check out.
    case damaged(String)
  }

  /// Reads the frame at `offset`: its length and checksum checked, its type and seq not interpreted.
  @inline(__always)
  func readFrame(at offset: Int) -> FrameResult {
    if offset == bytes.count { return .end }
    guard offset + SegmentFormat.recordHeaderSize <= bytes.count else { return .torn }
    let length = Int(u32(offset))
    let crc = u32(offset + 4)
    if length == 0 && crc == 0 && bytes[offset + 8] == 0 { return .torn }  // zero-filled tail
    guard length <= SegmentFormat.maxPayload else { return .damaged("record length \(length) is implausible") }
    let end = offset + SegmentFormat.recordHeaderSize + length
    guard end <= bytes.count else { return .torn }
    let actual = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[(offset + 8)..<end]))
    guard actual == crc else { return .damaged("checksum mismatch at byte \(offset)") }
    let payload = UnsafeRawBufferPointer(rebasing: bytes[(offset + SegmentFormat.recordHeaderSize)..<end])
    return .frame(Frame(type: bytes[offset + 8], seq: u64(offset + 9), payload: payload, end: end))
  }

  package func read(at offset: Int) -> ReadResult {
    switch readFrame(at: offset) {
    case .end: return .end
    case .torn: return .torn
    case .damaged(let reason): return .damaged(reason)
    case .frame(let frame):
      guard let type = SegmentFormat.RecordType(rawValue: frame.type) else {
        return .damaged("unknown record type \(frame.type) at byte \(offset)")
      }
      let seq = frame.seq
      guard seq > 0 && seq < SegmentFormat.seqLimit else { return .damaged("record seq \(seq) is out of range") }
      return .record(Record(type: type, seq: seq, payload: frame.payload, end: frame.end))
    }
  }

  /// True when an intact record starts somewhere after `offset`: then what looks torn at `offset`
  /// is damage in the middle, not a write cut short.
  func validRecordFollows(after offset: Int) -> Bool { nextValidRecord(after: offset) != nil }

  /// The offset of the next intact record after `offset`, if any (resynchronizing after damage).
  func nextValidRecord(after offset: Int) -> Int? {
    nextRecord(after: offset, isType: { SegmentFormat.RecordType(rawValue: $0) != nil }) {
      if case .record = read(at: $0) { true } else { false }
    }
  }

  /// The offset of the next frame after `offset` with a type byte `isType` accepts, a length that
  /// fits, and that `isRecord` reads as an intact record of its format.
  func nextRecord(after offset: Int, isType: (UInt8) -> Bool, isRecord: (Int) -> Bool) -> Int? {
    var position = offset + 1
    while position + SegmentFormat.recordHeaderSize <= bytes.count {
      if isType(bytes[position + 8]),
        position + SegmentFormat.recordHeaderSize + Int(u32(position)) <= bytes.count,
        isRecord(position)
      {
        return position
      }
      position += 1
    }
    return nil
  }

  private func u32(_ offset: Int) -> UInt32 {
    UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
  }
  private func u64(_ offset: Int) -> UInt64 {
    UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
  }
}

/// Reads fixed fields off a payload; every read is bounds-checked and a short payload yields nil.
package struct PayloadCursor {
  private let bytes: UnsafeRawBufferPointer
  package private(set) var offset = 0

  package init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

  package var remaining: Int { bytes.count - offset }

  mutating func u8() -> UInt8? {
    guard remaining >= 1 else { return nil }
    defer { offset += 1 }
    return bytes[offset]
  }

  mutating func u32() -> UInt32? {
    guard remaining >= 4 else { return nil }
    defer { offset += 4 }
    return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
  }

  mutating func u64() -> UInt64? {
    guard remaining >= 8 else { return nil }
    defer { offset += 8 }
    return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
  }

  package mutating func take(_ count: Int) -> UnsafeRawBufferPointer? {
    guard count >= 0, remaining >= count else { return nil }
    defer { offset += count }
    return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
  }

  package mutating func rest() -> UnsafeRawBufferPointer { take(remaining)! }

  /// A u32 count followed by that many u64s (bounded by what is left, so a forged count cannot allocate).
  package mutating func seqs() -> [UInt64]? {
    guard let count = u32(), Int(count) <= remaining / 8 else { return nil }
    var out: [UInt64] = []
    out.reserveCapacity(Int(count))
    for _ in 0..<count { out.append(u64()!) }
    return out
  }
}

/// The fixed fields of an item record, decoded.
package struct ItemRecord {
  package var savedAt: Int64
  package var deliveries: UInt32
  package var kind: ItemKind
  package var hasUser: Bool
  /// The generated id's words (zero with a client id).
  private var high: UInt64 = 0
  private var low: UInt64 = 0
  /// The client id's bytes in the payload; empty for a generated id. Held as a view, not an array,
  /// so a record is plain bytes: recovery reads millions and copies and drops each without a
  /// reference count.
  private var client = UnsafeRawBufferPointer(start: nil, count: 0)
  package var body: UnsafeRawBufferPointer

  package var id: ItemID { client.isEmpty ? ItemID(high: high, low: low) : ItemID(client: Array(client)) }

  package init?(_ payload: UnsafeRawBufferPointer) {
    var cursor = PayloadCursor(payload)
    guard let saved = cursor.u64(), UTCTime.isRepresentable(Int64(bitPattern: saved)),
      let deliveries = cursor.u32(), let kindRaw = cursor.u8(),
      let kind = ItemKind(rawValue: kindRaw), let flags = cursor.u8(), flags <= 1, let idLength = cursor.u8()
    else { return nil }
    if idLength == 0 {
      guard let high = cursor.u64(), let low = cursor.u64() else { return nil }
      (self.high, self.low) = (high, low)
    } else {
      guard let client = cursor.take(Int(idLength)) else { return nil }
      self.client = client
    }
    self.savedAt = Int64(bitPattern: saved)
    self.deliveries = deliveries
    self.kind = kind
    self.hasUser = flags == 1
    self.body = cursor.rest()
  }
}
