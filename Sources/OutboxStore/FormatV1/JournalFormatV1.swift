package import OutboxJSON
package import OutboxSupport

/// The journal's binary layout.
///
/// A segment file starts with a 16-byte header: the magic `POUTJRNL`, the format version (u32 LE)
/// and four reserved bytes. Then records, each:
///
///     u32 length | u32 crc32c | u8 type | u64 seq | payload (length bytes, UTF-8 JSON)
///
/// all little-endian; the CRC-32C covers type, seq and payload.
package enum JournalFormatV1 {
  static let magic: [UInt8] = Array("POUTJRNL".utf8)
  package static let version: UInt32 = 1
  static let headerSize = 16
  static let recordHeaderSize = 17
  /// No record is larger; a length above it means a damaged length field.
  static let maxPayload = 1 << 30

  /// Record types. Unknown types are damage.
  package enum RecordType: UInt8, Sendable {
    /// An item was saved; the payload is the item as a flush writes it.
    case add = 1
    /// Items left the store (drain or ack); the payload is the array of their seqs.
    case remove = 2
  }

  package static var header: [UInt8] {
    var out = magic
    appendLE(version, to: &out)
    appendLE(UInt32(0), to: &out)
    return out
  }

  /// Appends one record to `out`.
  static func appendRecord(_ type: RecordType, seq: UInt64, payload: [UInt8], to out: inout [UInt8]) {
    appendRecord(type, seq: seq, to: &out) { $0.append(contentsOf: payload) }
  }

  /// Appends one record to `out`, its payload written in place by `writePayload` (no copy of it is made).
  static func appendRecord(
    _ type: RecordType, seq: UInt64, to out: inout [UInt8], _ writePayload: (inout [UInt8]) -> Void
  ) {
    let start = out.count
    appendLE(UInt64(0), to: &out)  // length and CRC, filled in below
    out.append(type.rawValue)
    appendLE(seq, to: &out)
    writePayload(&out)
    let length = out.count - start - recordHeaderSize
    let crc = out.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(start + 8)...])) }
    out.withUnsafeMutableBytes { bytes in
      bytes.storeBytes(of: UInt32(length).littleEndian, toByteOffset: start, as: UInt32.self)
      bytes.storeBytes(of: crc.littleEndian, toByteOffset: start + 4, as: UInt32.self)
    }
  }

  /// One record read back.
  package struct Record: Sendable {
    package var type: RecordType
    package var seq: UInt64
    package var payload: ArraySlice<UInt8>
    /// Offset just past the record.
    package var end: Int
  }

  /// What reading a record at an offset found.
  package enum ReadResult {
    case record(Record)
    case end
    /// Not enough bytes for the record its header announces (or for a header): a torn write.
    case torn
    /// The bytes are all there but do not check out.
    case damaged(String)
  }

  static func readRecord(_ bytes: [UInt8], at offset: Int) -> ReadResult {
    if offset == bytes.count { return .end }
    guard offset + recordHeaderSize <= bytes.count else { return .torn }
    let length = Int(readLE32(bytes, offset))
    let crc = readLE32(bytes, offset + 4)
    if length == 0 && crc == 0 && bytes[offset + 8] == 0 { return .torn }  // zero-filled tail
    guard length <= maxPayload else { return .damaged("record length \(length) is implausible") }
    let end = offset + recordHeaderSize + length
    guard end <= bytes.count else { return .torn }
    let actual = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(offset + 8)..<end])) }
    guard actual == crc else { return .damaged("checksum mismatch at byte \(offset)") }
    guard let type = RecordType(rawValue: bytes[offset + 8]) else { return .damaged("unknown record type") }
    var seq: UInt64 = 0
    for k in 0..<8 { seq |= UInt64(bytes[offset + 9 + k]) << (8 * UInt64(k)) }
    guard seq < SegmentFormat.seqLimit else { return .damaged("record seq \(seq) is out of range") }
    return .record(Record(type: type, seq: seq, payload: bytes[(offset + recordHeaderSize)..<end], end: end))
  }

  /// True when an intact record starts somewhere after `offset`: then what looks torn at `offset`
  /// (a length past the end, a zeroed header) is damage in the middle, not a write cut short.
  static func validRecordFollows(_ bytes: [UInt8], after offset: Int) -> Bool {
    var position = offset + 1
    while position + recordHeaderSize <= bytes.count {
      let type = bytes[position + 8]
      if type == RecordType.add.rawValue || type == RecordType.remove.rawValue,
        position + recordHeaderSize + Int(readLE32(bytes, position)) <= bytes.count,
        case .record = readRecord(bytes, at: position)
      {
        return true
      }
      position += 1
    }
    return false
  }

  /// Checks a segment header; returns the format version it declares, or nil if it is not a journal.
  static func headerVersion(_ bytes: [UInt8]) -> UInt32? {
    guard bytes.count >= headerSize, Array(bytes[0..<8]) == magic else { return nil }
    return readLE32(bytes, 8)
  }

  static func appendLE<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
    for k in 0..<(T.bitWidth / 8) { out.append(UInt8(truncatingIfNeeded: value >> (8 * k))) }
  }

  static func readLE32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
    (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
  }

  /// The file name of the segment whose first record has seq `first`: `journal.00000000000000000042`.
  package static func segmentName(first: UInt64) -> String {
    let digits = String(first)
    return "journal." + String(repeating: "0", count: max(0, 20 - digits.count)) + digits
  }

  /// The first seq encoded in a segment file name.
  static func segmentFirst(_ name: String) -> UInt64? {
    guard name.hasPrefix("journal."), name.count == 28, let first = UInt64(name.dropFirst(8)),
      first < SegmentFormat.seqLimit
    else { return nil }
    return first
  }
}
