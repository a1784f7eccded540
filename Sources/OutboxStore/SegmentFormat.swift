import OutboxSupport

/// The binary layout of the store's log segments (format version 2).
///
/// A segment file `segment.<first seq, 20 digits>` starts with a 16-byte header: the magic `POUTJRNL`,
/// the format version (u32 LE, 2) and four zero bytes. Then records, each:
///
///     u32 length | u32 crc32c | u8 type | u64 seq | payload (length bytes)
///
/// all little-endian; the CRC-32C covers type, seq and payload. Payloads are fixed binary fields
/// followed by the item's JSON body bytes, so loading is a scan and a copy, never a JSON parse.
package enum SegmentFormat {
  static let magic: [UInt8] = Array("POUTJRNL".utf8)
  package static let version: UInt32 = 2
  static let headerSize = 16
  static let recordHeaderSize = 17
  /// No record is larger; a length above it means a damaged length field.
  static let maxPayload = 1 << 30
  package static let prefix = "segment."
  /// Seqs are below 2^63, so no arithmetic on one (or on a count of them) can overflow.
  static let seqLimit: UInt64 = 1 << 63

  package enum RecordType: UInt8, Sendable {
    /// An item: i64 savedAt, u32 deliveryCount, u8 kind, u8 flags, u8 idLength, id, JSON body.
    case item = 16
    /// Items left the store: u32 count, u64 seqs.
    case remove = 17
    /// A lease began: i64 expiresAt, u8 flushId length, flushId, u32 count, u64 seqs, u32 note length, note,
    /// u8 origin.
    case lease = 18
    /// A lease ended: u8 outcome, u8 flushId length, flushId, u32 count, then (u64 seq, u32 deliveryCount) pairs.
    case leaseEnd = 19
    /// Items became dead letters: u32 count, then (u64 seq, u16 reason length, reason) each.
    /// A compaction writes one right after a dead item's record, with the item's seq.
    case deadLetter = 20
    /// Dead letters went back to pending: u32 count, u64 seqs.
    case requeue = 21
  }

  package static var header: [UInt8] {
    var out = magic
    out.appendLE(version)
    out.appendLE(UInt32(0))
    return out
  }

  /// The file name of the segment whose first record has seq `first`.
  package static func name(first: UInt64) -> String {
    let digits = String(first)
    return prefix + String(repeating: "0", count: max(0, 20 - digits.count)) + digits
  }

  /// The first seq encoded in a segment file name, or nil for any other name.
  package static func first(ofName name: String) -> UInt64? {
    guard name.hasPrefix(prefix), name.utf8.count == prefix.utf8.count + 20 else { return nil }
    let digits = name.utf8.dropFirst(prefix.utf8.count)
    guard digits.allSatisfy({ $0 >= 48 && $0 <= 57 }), let first = UInt64(String(decoding: digits, as: UTF8.self)),
      first > 0 && first < seqLimit
    else { return nil }
    return first
  }

  // MARK: - Writing

  /// Appends one record, its payload written in place by `writePayload`.
  static func appendRecord(
    _ type: RecordType, seq: UInt64, to out: inout [UInt8], _ writePayload: (inout [UInt8]) -> Void
  ) {
    appendFrame(type: type.rawValue, seq: seq, to: &out, writePayload)
  }

  /// Appends one frame of the record framing format 1's journal shares (see `SegmentReader.Frame`):
  /// any type byte, the payload written in place by `writePayload`.
  static func appendFrame(
    type: UInt8, seq: UInt64, to out: inout [UInt8], _ writePayload: (inout [UInt8]) -> Void
  ) {
    let start = out.count
    out.appendLE(UInt64(0))  // length and CRC, filled in below
    out.append(type)
    out.appendLE(seq)
    writePayload(&out)
    let length = out.count - start - recordHeaderSize
    let crc = out.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(start + 8)...])) }
    out.withUnsafeMutableBytes { bytes in
      bytes.storeBytes(of: UInt32(length).littleEndian, toByteOffset: start, as: UInt32.self)
      bytes.storeBytes(of: crc.littleEndian, toByteOffset: start + 4, as: UInt32.self)
    }
  }

  /// The bytes of an item record with a body and client id of these lengths (0: a generated id).
  package static func itemRecordBytes(body: Int, clientID: Int) -> Int {
    recordHeaderSize + 8 + 4 + 3 + (clientID == 0 ? 16 : clientID) + body
  }

  /// Appends an item record, written in place in one pass: the 17-byte record header (length,
  /// checksum, type, seq), the fixed fields, the id, the body, then the checksum over them. With
  /// `checksum: false` the checksum is left 0 for `fillItemChecksums` to write (the journal's
  /// writer thread does, before the bytes reach the file).
  static func appendItem(
    seq: UInt64, savedAt: Int64, deliveries: UInt32, kind: ItemKind, hasUser: Bool, id: ItemID,
    body: UnsafeRawBufferPointer, to out: inout [UInt8], checksum: Bool = true
  ) {
    let generated = id.client.isEmpty
    let length = 8 + 4 + 3 + (generated ? 16 : id.clientLength) + body.count
    let total = recordHeaderSize + length
    ByteCursor.append(to: &out, capacity: total) { cursor in
      let raw = UnsafeMutableRawPointer(cursor.p)
      raw.storeBytes(of: UInt32(length).littleEndian, as: UInt32.self)
      raw.storeBytes(of: RecordType.item.rawValue, toByteOffset: 8, as: UInt8.self)
      raw.storeBytes(of: seq.littleEndian, toByteOffset: 9, as: UInt64.self)
      raw.storeBytes(of: UInt64(bitPattern: savedAt).littleEndian, toByteOffset: 17, as: UInt64.self)
      raw.storeBytes(of: deliveries.littleEndian, toByteOffset: 25, as: UInt32.self)
      raw.storeBytes(of: kind.rawValue, toByteOffset: 29, as: UInt8.self)
      raw.storeBytes(of: hasUser ? 1 : 0, toByteOffset: 30, as: UInt8.self)
      raw.storeBytes(of: UInt8(id.clientLength), toByteOffset: 31, as: UInt8.self)
      var at = recordHeaderSize + 15
      if generated {
        raw.storeBytes(of: id.high.littleEndian, toByteOffset: at, as: UInt64.self)
        raw.storeBytes(of: id.low.littleEndian, toByteOffset: at + 8, as: UInt64.self)
        at += 16
      } else {
        id.client.withUnsafeBytes { (raw + at).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        at += id.clientLength
      }
      if let source = body.baseAddress { (raw + at).copyMemory(from: source, byteCount: body.count) }
      let crc = checksum ? CRC32C.checksum(UnsafeRawBufferPointer(start: raw + 8, count: total - 8)) : 0
      raw.storeBytes(of: crc.littleEndian, toByteOffset: 4, as: UInt32.self)
      cursor.advance(by: total)
    }
  }

  /// Writes the checksum of every item record in `records` (whole records, as `appendItem` with
  /// `checksum: false` left them); other records already carry theirs and are left as they are.
  /// Three records at a time (`CRC32C.checksums`).
  static func fillItemChecksums(_ records: UnsafeMutableRawBufferPointer) {
    guard let base = records.baseAddress else { return }
    // What each checksum covers: the record from its type byte to its end.
    func covered(_ record: Range<Int>) -> UnsafeRawBufferPointer {
      UnsafeRawBufferPointer(start: base + record.lowerBound + 8, count: record.count - 8)
    }
    func store(_ crc: UInt32, _ record: Range<Int>) {
      records.storeBytes(of: crc.littleEndian, toByteOffset: record.lowerBound + 4, as: UInt32.self)
    }
    var waiting: [Range<Int>] = []
    waiting.reserveCapacity(3)
    forEachRecord(in: UnsafeRawBufferPointer(records)) { record, type in
      guard type == RecordType.item.rawValue else { return }
      waiting.append(record)
      guard waiting.count == 3 else { return }
      let (a, b, c) = CRC32C.checksums(covered(waiting[0]), covered(waiting[1]), covered(waiting[2]))
      store(a, waiting[0])
      store(b, waiting[1])
      store(c, waiting[2])
      waiting.removeAll(keepingCapacity: true)
    }
    for record in waiting { store(CRC32C.checksum(covered(record)), record) }
  }

  /// Calls `body` with each whole record of `records` (its byte range and type), walked by the
  /// lengths in their headers, without reading checksums: for records this process gathered.
  static func forEachRecord(in records: UnsafeRawBufferPointer, _ body: (Range<Int>, UInt8) -> Void) {
    var offset = 0
    while offset + recordHeaderSize <= records.count {
      let length = Int(UInt32(littleEndian: records.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
      let end = offset + recordHeaderSize + length
      guard end <= records.count else { return }
      body(offset..<end, records[offset + 8])
      offset = end
    }
  }

  static func appendRemove(_ seqs: [UInt64], recordSeq: UInt64, to out: inout [UInt8]) {
    appendRecord(.remove, seq: recordSeq, to: &out) { out in
      out.appendLE(UInt32(seqs.count))
      for seq in seqs { out.appendLE(seq) }
    }
  }

  static func appendLease(_ lease: Lease, recordSeq: UInt64, to out: inout [UInt8]) {
    appendRecord(.lease, seq: recordSeq, to: &out) { out in
      out.appendLE(UInt64(bitPattern: lease.expiresAt))
      out.appendShort(Array(lease.flushId.utf8))
      out.appendLE(UInt32(lease.seqs.count))
      for seq in lease.seqs { out.appendLE(seq) }
      out.appendLE(UInt32(lease.note.count))
      out.append(contentsOf: lease.note)
      out.append(lease.origin.rawValue)
    }
  }

  static func appendLeaseEnd(
    flushId: String, outcome: LeaseOutcome, counts: [(UInt64, UInt32)], recordSeq: UInt64, to out: inout [UInt8]
  ) {
    appendRecord(.leaseEnd, seq: recordSeq, to: &out) { out in
      out.append(outcome.rawValue)
      out.appendShort(Array(flushId.utf8))
      out.appendLE(UInt32(counts.count))
      for (seq, count) in counts {
        out.appendLE(seq)
        out.appendLE(count)
      }
    }
  }
}

extension SegmentFormat {
  /// The longest dead-letter reason kept, in memory and on disk (`Store` cuts it the same way).
  static let maxReasonBytes = 4096

  static func appendDeadLetter(_ entries: [(UInt64, String)], recordSeq: UInt64, to out: inout [UInt8]) {
    appendRecord(.deadLetter, seq: recordSeq, to: &out) { out in
      out.appendLE(UInt32(entries.count))
      for (seq, reason) in entries {
        let bytes = Array(reason.prefix(utf8Bytes: maxReasonBytes).utf8)
        out.appendLE(seq)
        out.appendLE(UInt16(bytes.count))
        out.append(contentsOf: bytes)
      }
    }
  }

  static func appendRequeue(_ seqs: [UInt64], recordSeq: UInt64, to out: inout [UInt8]) {
    appendRecord(.requeue, seq: recordSeq, to: &out) { out in
      out.appendLE(UInt32(seqs.count))
      for seq in seqs { out.appendLE(seq) }
    }
  }
}

/// How a lease ended.
enum LeaseOutcome: UInt8, Sendable {
  case acked = 0, released = 1, expired = 2
}

extension Array where Element == UInt8 {
  mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
    Swift.withUnsafeBytes(of: value.littleEndian) { appendBytes($0) }
  }

  /// Appends a u8 length and up to 255 bytes.
  mutating func appendShort(_ bytes: [UInt8]) {
    let count = Swift.min(bytes.count, 255)
    append(UInt8(count))
    append(contentsOf: bytes[0..<count])
  }
}
