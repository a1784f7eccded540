import OutboxCommandLine
import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxServer
import OutboxStore
// The store's files read back independently of the library's readers, from the documented formats
// (`SegmentFormat.swift`, `Checkpoint.swift`): segment records with this target's own CRC-32C, and
// checkpoint.json's header line checked against its trailer's CRC. Only JSON parsing is borrowed
// (`JSONReader`, fuzzed on its own by FuzzJSON and FuzzDiff).
import OutboxSupport
import OutboxTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What checkpoint.json says, as far as the invariant needs it.
struct CheckpointFile {
  var coversSeq: UInt64
  var items: Int
  var segments: [UInt64]
  /// Per listed segment (builds after 4eabb21); nil in older checkpoints.
  var held: [Int]?
  var leases: [String: [UInt64]]
}

enum Files {
  static func read(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    // Sized by fstat (the files are small; a 64 KiB chunk per read was most of this target's memset),
    // read to the end all the same.
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    var out = [UInt8](repeating: 0, count: Int(info.st_size) + 1)
    var count = 0
    while true {
      if count == out.count { out.append(contentsOf: repeatElement(0, count: out.count)) }
      let n = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
      if n < 0 { return nil }
      if n == 0 {
        out.removeLast(out.count - count)
        return out
      }
      count += n
    }
  }

  /// The first seqs of the `segment.<20 digits>` files in the directory, sorted.
  static func segmentFiles(_ directory: String) -> [UInt64] {
    guard let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var firsts: [UInt64] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
      }
      let digits = name.utf8.dropFirst(8)
      guard name.hasPrefix("segment."), digits.count == 20, digits.allSatisfy({ $0 >= 48 && $0 <= 57 }),
        let first = UInt64(String(decoding: digits, as: UTF8.self))
      else { continue }
      firsts.append(first)
    }
    return firsts.sorted()
  }

  static func segmentName(_ first: UInt64) -> String {
    let digits = String(first)
    return "segment." + String(repeating: "0", count: max(0, 20 - digits.count)) + digits
  }

  /// The CRC-valid item records of a segment file, seq to body, read from the 16-byte header on
  /// until the first record that does not check out (a torn tail). nil when the file is missing or
  /// its header is wrong.
  static func itemRecords(_ bytes: [UInt8]) -> [UInt64: [UInt8]]? {
    guard bytes.count >= 16, Array(bytes[0..<8]) == Array("POUTJRNL".utf8), le(bytes, 8, 4) == 2 else { return nil }
    var items: [UInt64: [UInt8]] = [:]
    var at = 16
    while at + 17 <= bytes.count {
      let length = Int(le(bytes, at, 4))
      guard length <= bytes.count - at - 17,
        UInt32(le(bytes, at + 4, 4)) == CRC32C.checksum(bytes[(at + 8)..<(at + 17 + length)])
      else { break }
      // An item (type 16): i64 savedAt, u32 deliveries, u8 kind, u8 flags, u8 idLength, id, body.
      if bytes[at + 8] == 16 && length >= 15 {
        let payload = at + 17
        let idLength = Int(bytes[payload + 14])
        let bodyStart = payload + 15 + (idLength == 0 ? 16 : idLength)
        if bodyStart <= payload + length { items[le(bytes, at + 9, 8)] = Array(bytes[bodyStart..<(payload + length)]) }
      }
      at += 17 + length
    }
    return items
  }

  /// checkpoint.json, or a description of what is wrong with it.
  static func checkpoint(_ directory: String) -> Result<CheckpointFile, Problem> {
    guard let bytes = read(directory + "/checkpoint.json") else { return .failure(Problem("no checkpoint.json")) }
    let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    guard lines.count == 3, lines[2].isEmpty else { return .failure(Problem("checkpoint.json is not two lines")) }
    let header = Array(bytes[0...lines[0].count])  // with its newline: what the trailer's CRC covers
    guard case .object(let end)? = try? JSONReader.parse(Array(lines[1])), case .int(let crc)? = end["crc32c"],
      crc == Int64(CRC32C.checksum(header))
    else { return .failure(Problem("checkpoint.json's trailer CRC does not match its header")) }
    guard case .object(let m)? = try? JSONReader.parse(Array(lines[0])),
      m["format"] == .string("push-outbox-checkpoint"),
      case .int(let covers)? = m["coversSeq"], case .int(let items)? = m["items"],
      case .array(let segments)? = m["segments"], case .array(let leases)? = m["leases"]
    else { return .failure(Problem("checkpoint.json's header lacks a field")) }
    var file = CheckpointFile(
      coversSeq: UInt64(covers), items: Int(items), segments: segments.compactMap { $0.uint }, held: nil, leases: [:])
    if case .array(let held)? = m["held"] { file.held = held.compactMap { $0.uint.map(Int.init) } }
    for lease in leases {
      guard case .string(let id)? = lease["flushId"], case .array(let seqs)? = lease["seqs"] else {
        return .failure(Problem("a lease in checkpoint.json lacks a field"))
      }
      file.leases[id] = seqs.compactMap { $0.uint }
    }
    return .success(file)
  }
}

struct Problem: Error {
  var text: String
  init(_ text: String) { self.text = text }
}

extension JSONValue {
  var uint: UInt64? { if case .int(let n) = self, n >= 0 { UInt64(n) } else { nil } }
}

func le(_ bytes: [UInt8], _ at: Int, _ count: Int) -> UInt64 {
  (0..<count).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * $1) }
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
