/// The format-1 journal (`journal.<first seq, 20 digits>`): the record framing of format 2
/// (`SegmentFormat`, read with `SegmentReader.readFrame`) with format 1's own record types and
/// JSON payloads.
///
/// A file starts with a 16-byte header: the magic `POUTJRNL`, the format version (u32 LE, 1) and
/// four reserved bytes. Then records, each:
///
///     u32 length | u32 crc32c | u8 type | u64 seq | payload (length bytes, UTF-8 JSON)
///
/// all little-endian; the CRC-32C covers type, seq and payload. Unlike format 2, seq 0 is readable.
package enum JournalFormatV1 {
  package static let version: UInt32 = 1
  package static let headerSize = SegmentFormat.headerSize

  /// Record types. Unknown types are damage.
  package enum RecordType: UInt8, Sendable {
    /// An item was saved; the payload is the item as a flush writes it.
    case add = 1
    /// Items left the store (drain or ack); the payload is the array of their seqs.
    case remove = 2
  }

  package static var header: [UInt8] {
    var out = SegmentFormat.magic
    out.appendLE(version)
    out.appendLE(UInt32(0))
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
    SegmentFormat.appendFrame(type: type.rawValue, seq: seq, to: &out, writePayload)
  }

  /// One record read back.
  package struct Record {
    package var type: RecordType
    package var seq: UInt64
    package var payload: UnsafeRawBufferPointer
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

  /// The format-1 record at `offset`: the shared frame, then format 1's types and seq range.
  static func readRecord(_ reader: SegmentReader, at offset: Int) -> ReadResult {
    switch reader.readFrame(at: offset) {
    case .end: return .end
    case .torn: return .torn
    case .damaged(let reason): return .damaged(reason)
    case .frame(let frame):
      guard let type = RecordType(rawValue: frame.type) else { return .damaged("unknown record type") }
      guard frame.seq < SegmentFormat.seqLimit else { return .damaged("record seq \(frame.seq) is out of range") }
      return .record(Record(type: type, seq: frame.seq, payload: frame.payload, end: frame.end))
    }
  }

  /// True when an intact record starts somewhere after `offset`: then what looks torn at `offset`
  /// (a length past the end, a zeroed header) is damage in the middle, not a write cut short.
  package static func validRecordFollows(_ reader: SegmentReader, after offset: Int) -> Bool {
    let found = reader.nextRecord(after: offset, isType: { RecordType(rawValue: $0) != nil }) {
      if case .record = readRecord(reader, at: $0) { true } else { false }
    }
    return found != nil
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
