/// Turns fuzz input into store files: segment files made of records (most with a correct CRC-32C,
/// so the fuzzer reaches the record decoders), raw garbage, and a checkpoint, either raw bytes or
/// well formed. Written independently of the library's writers, from the format's description in
/// Sources/OutboxStore/SegmentFormat.swift and Checkpoint.swift.
///
/// The input is a list of operations, each an opcode byte `o` and its operands:
/// - `o % 4 == 0`: a new segment file; u8 `first - 1`; bit 7 of `o` writes version byte u8 instead of 2.
/// - `o % 4 == 1`: a record: u8 type (16 + t % 6, or t itself with bit 6), u8 seq step, then an item
///   payload built from fields (bit 5: i32 savedAt seconds, u8 deliveries, u8 kind, u8 flags,
///   u8 id length, id, u8 body length, body) or u8 length and raw payload; bit 7 takes a u32 CRC from
///   the input instead of computing it.
/// - `o % 4 == 2`: u8 length and raw bytes appended to the current file.
/// - `o % 4 == 3`: a checkpoint: with bit 7, u16 length and raw bytes; else built from u8 fields
///   (coversSeq, nextSeq, firstSeq, items, a bit mask of the segments to list, a lease seq).
struct StoreBuilder {
  var files: [(name: String, bytes: [UInt8])] = []
  private var input: ArraySlice<UInt8>
  private var seq: UInt64 = 0

  init(_ input: [UInt8]) {
    self.input = input[...]
    while let op = byte() { apply(op) }
  }

  private mutating func byte() -> UInt8? { input.popFirst() }
  private mutating func take(_ n: Int) -> [UInt8] {
    let out = Array(input.prefix(n))
    input = input.dropFirst(n)
    return out
  }

  private mutating func apply(_ op: UInt8) {
    switch op % 4 {
    case 0:
      let first = UInt64(byte() ?? 0) + 1
      let version = op & 0x80 != 0 ? byte() ?? 2 : 2
      seq = first - 1
      let name = "segment." + String(repeating: "0", count: 20 - String(first).count) + String(first)
      files.removeAll { $0.name == name }
      files.append((name, Array("POUTJRNL".utf8) + [version, 0, 0, 0, 0, 0, 0, 0]))
    case 1: record(op)
    case 2: append(take(Int(byte() ?? 0)))
    default: checkpoint(op)
    }
  }

  private mutating func append(_ bytes: [UInt8]) {
    if files.last(where: { $0.name.hasPrefix("segment.") }) == nil {
      files.append(("segment.00000000000000000001", Array("POUTJRNL".utf8) + [2, 0, 0, 0, 0, 0, 0, 0]))
    }
    let n = files.lastIndex { $0.name.hasPrefix("segment.") }!
    files[n].bytes += bytes
  }

  private mutating func record(_ op: UInt8) {
    let t = byte() ?? 16
    let type = op & 0x40 != 0 ? t : 16 + t % 6
    seq += UInt64(byte() ?? 1)
    var payload: [UInt8] = []
    if op & 0x20 != 0 {
      let seconds = Int64(Int32(truncatingIfNeeded: le(take(4))))
      payload += le(UInt64(bitPattern: seconds * 1000), 8)
      payload += le(UInt64(byte() ?? 0), 4)
      payload += [(byte() ?? 0) % 4, (byte() ?? 0) % 3]
      let idLength = byte() ?? 0
      payload.append(idLength)
      payload += take(idLength == 0 ? 16 : Int(idLength))
      payload += take(Int(byte() ?? 0))
    } else {
      payload = take(Int(byte() ?? 0))
    }
    let checked = [type] + le(seq, 8) + payload
    let crc = op & 0x80 != 0 ? UInt32(truncatingIfNeeded: le(take(4))) : CRC32C.checksum(checked)
    append(le(UInt64(payload.count), 4) + le(UInt64(crc), 4) + checked)
  }

  private mutating func checkpoint(_ op: UInt8) {
    files.removeAll { $0.name == "checkpoint.json" }
    if op & 0x80 != 0 {
      let n = Int(le(take(2)))
      files.append(("checkpoint.json", take(n)))
      return
    }
    let f = take(6) + [0, 0, 0, 0, 0, 0]
    let segments = files.enumerated().filter {
      $0.element.name.hasPrefix("segment.") && f[4] & (1 << ($0.offset % 8)) != 0
    }
    .map { String(UInt64($0.element.name.dropFirst(8))!) }
    let lease =
      f[5] == 0
      ? "" : #"{"flushId":"f1","expiresAt":1767225660000,"seqs":[\#(f[5])],"note":"","origin":0}"#
    let header =
      #"{"format":"push-outbox-checkpoint","version":2,"createdAt":"2026-01-01T00:00:00.000Z","coversSeq":\#(f[0]),"#
      + #""nextSeq":\#(f[1]),"firstSeq":\#(f[2]),"items":\#(f[3]),"segments":[\#(segments.joined(separator: ","))],"#
      + #""leases":[\#(lease)],"finished":[]}"# + "\n"
    let bytes = Array(header.utf8)
    files.append(("checkpoint.json", bytes + Array("{\"end\":true,\"crc32c\":\(CRC32C.checksum(bytes))}\n".utf8)))
  }
}

/// Little-endian helpers.
func le(_ value: UInt64, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
func le(_ bytes: [UInt8]) -> UInt64 {
  bytes.prefix(8).enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * $1.offset) }
}

/// CRC-32C (Castagnoli, reflected 0x82F63B78), bitwise: this target's own, not the library's.
enum CRC32C {
  static let table: [UInt32] = (0..<256).map { n in
    var c = UInt32(n)
    for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
    return c
  }

  static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
    var crc: UInt32 = 0xFFFF_FFFF
    for b in bytes { crc = table[Int((crc ^ UInt32(b)) & 0xFF)] ^ (crc >> 8) }
    return crc ^ 0xFFFF_FFFF
  }
}

/// Every item body that some CRC-valid item record holds, wherever it starts in any segment file:
/// a superset of what recovery may legitimately load.
func validItemBodies(_ files: [(name: String, bytes: [UInt8])]) -> Set<[UInt8]> {
  var bodies = Set<[UInt8]>()
  for file in files where file.name.hasPrefix("segment.") {
    let b = file.bytes
    var at = 0
    while at + 17 <= b.count {
      defer { at += 1 }
      let length = Int(le(Array(b[at..<(at + 4)])))
      guard b[at + 8] == 16, length >= 15, at + 17 + length <= b.count,
        UInt32(le(Array(b[(at + 4)..<(at + 8)]))) == CRC32C.checksum(b[(at + 8)..<(at + 17 + length)])
      else { continue }
      let payload = b[(at + 17)..<(at + 17 + length)]
      let idLength = Int(payload[payload.startIndex + 14])
      let bodyStart = payload.startIndex + 15 + (idLength == 0 ? 16 : idLength)
      if bodyStart <= payload.endIndex { bodies.insert(Array(payload[bodyStart...])) }
    }
  }
  return bodies
}
