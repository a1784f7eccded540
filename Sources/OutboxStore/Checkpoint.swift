import OutboxJSON
import OutboxSupport

/// The store's self-describing checkpoint, `checkpoint.json`, written atomically at every snapshot
/// interval while the store is dirty and at exit:
///
///     {"format":"push-outbox-checkpoint","version":2,"createdAt":"…","coversSeq":9,"nextSeq":10,
///      "firstSeq":3,"items":5,"segments":[1,7],"leases":[{"flushId":…,"expiresAt":…,"seqs":[…],"note":"…"}]}
///     {"end":true,"crc32c":N}
///
/// It names the segments that hold items (a missing one is data loss), the seq numbers handed out, and
/// the live leases. It holds no item data.
package struct Checkpoint: Sendable, Equatable {
  static let fileName = "checkpoint.json"
  static let formatName = "push-outbox-checkpoint"
  package static let version: Int64 = 2

  package var createdAt: Int64
  /// Every record with a seq up to this one is reflected here.
  package var coversSeq: UInt64
  package var nextSeq: UInt64
  /// The oldest held item's seq, or `nextSeq` when nothing is held.
  package var firstSeq: UInt64
  package var items: Int
  package var segments: [UInt64]
  /// Rows held (pending, leased or dead letter) in each listed segment when the checkpoint was taken;
  /// nil in checkpoints of earlier builds. Recovery checks the files against it.
  package var held: [Int]?
  package var leases: [Lease]
  /// Flush ids acked recently, so a repeated ack in a later process is still answered `acked: 0`.
  package var finished: [String] = []
  /// The key of the store's generated item ids (`HeldItems.idKey`), kept so the next process
  /// recomputes them too; nil in checkpoints of earlier builds.
  package var idKey: UInt64?

  package init(
    createdAt: Int64, coversSeq: UInt64, nextSeq: UInt64, firstSeq: UInt64, items: Int, segments: [UInt64],
    leases: [Lease], finished: [String] = [], held: [Int]? = nil
  ) {
    self.finished = finished
    self.held = held
    self.createdAt = createdAt
    self.coversSeq = coversSeq
    self.nextSeq = nextSeq
    self.firstSeq = firstSeq
    self.items = items
    self.segments = segments
    self.leases = leases
  }

  package enum DecodeError: Error, Equatable {
    case corrupt(String)
    /// A `version` this build does not know: the caller stops and touches nothing.
    case unsupportedVersion(String)
  }

  package func encode() -> [UInt8] {
    var out: [UInt8] = []
    out.appendASCII("{\"format\":\"push-outbox-checkpoint\",\"version\":2,\"createdAt\":\"")
    UTCTime.append(ms: createdAt, to: &out)
    out.appendASCII("\",\"coversSeq\":")
    out.appendUInt(coversSeq)
    out.appendASCII(",\"nextSeq\":")
    out.appendUInt(nextSeq)
    out.appendASCII(",\"firstSeq\":")
    out.appendUInt(firstSeq)
    out.appendASCII(",\"items\":")
    out.appendUInt(UInt64(items))
    out.appendASCII(",\"segments\":")
    JSONValue.array(segments.map { .int(Int64($0)) }).encodeJSON(into: &out)
    if let held {
      out.appendASCII(",\"held\":")
      JSONValue.array(held.map { .int(Int64($0)) }).encodeJSON(into: &out)
    }
    if let idKey {
      out.appendASCII(",\"idKey\":\"")
      IDGenerator.appendHex(idKey, to: &out)
      out.appendASCII("\"")
    }
    out.appendASCII(",\"leases\":")
    JSONValue.array(leases.map(Self.json)).encodeJSON(into: &out)
    out.appendASCII(",\"finished\":")
    JSONValue.array(finished.map(JSONValue.string)).encodeJSON(into: &out)
    out.appendASCII("}\n")
    let crc = CRC32C.checksum(out)
    out.appendASCII("{\"end\":true,\"crc32c\":")
    out.appendUInt(UInt64(crc))
    out.appendASCII("}\n")
    return out
  }

  private static func json(_ lease: Lease) -> JSONValue {
    .object([
      JSONMember("flushId", .string(lease.flushId)), JSONMember("expiresAt", .int(lease.expiresAt)),
      JSONMember("seqs", .array(lease.seqs.map { .int(Int64($0)) })),
      JSONMember("note", .string(String(decoding: lease.note, as: UTF8.self))),
      JSONMember("origin", .int(Int64(lease.origin.rawValue))),
    ])
  }

  /// Reads a checkpoint's bytes. The version is checked first: an unknown one is never "corrupt".
  package static func decode(_ bytes: [UInt8]) throws(DecodeError) -> Checkpoint {
    let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    guard let first = lines.first, let header = parse(first), case .object(let members) = header else {
      throw .corrupt("the header line is not a JSON object")
    }
    if let version = members["version"], version != .int(version_) {
      var text: [UInt8] = []
      version.encodeJSON(into: &text)
      throw .unsupportedVersion(String(decoding: text, as: UTF8.self))
    }
    guard members["format"] == .string(formatName), members["version"] != nil else {
      throw .corrupt("not a checkpoint")
    }
    guard lines.count == 3, lines[2].isEmpty, let trailer = parse(lines[1]), case .object(let end) = trailer,
      case .int(let crc)? = end["crc32c"], crc == Int64(CRC32C.checksum(Array(bytes[0..<(first.count + 1)])))
    else { throw .corrupt("checksum or trailer mismatch") }
    return try fields(members)
  }

  private static let version_ = version

  private static func fields(_ members: [JSONMember]) throws(DecodeError) -> Checkpoint {
    guard let covers = seq(members["coversSeq"]), let next = seq(members["nextSeq"]), next >= 1,
      let firstSeq = seq(members["firstSeq"]), case .int(let items)? = members["items"], items >= 0,
      case .string(let created)? = members["createdAt"], let createdAt = ISO8601.parseDateTime(created),
      case .array(let segmentValues)? = members["segments"], case .array(let leaseValues)? = members["leases"]
    else { throw .corrupt("a header field is missing or out of range") }
    let segments = segmentValues.compactMap(seq)
    let leases = leaseValues.compactMap(lease)
    guard segments.count == segmentValues.count, leases.count == leaseValues.count, covers < next, firstSeq <= next
    else { throw .corrupt("a segment or lease entry is malformed") }
    var finished: [String] = []
    if case .array(let values)? = members["finished"] { finished = values.compactMap(\.stringValue) }
    var held: [Int]? = nil
    if let value = members["held"] {
      guard case .array(let values) = value, values.count == segments.count else {
        throw .corrupt("the held counts do not match the segments")
      }
      held = values.compactMap { if case .int(let n) = $0, n >= 0 { Int(n) } else { nil } }
      guard held?.count == segments.count else { throw .corrupt("a held count is malformed") }
    }
    var checkpoint = Checkpoint(
      createdAt: createdAt, coversSeq: covers, nextSeq: next, firstSeq: firstSeq, items: Int(items),
      segments: segments, leases: leases, finished: finished, held: held)
    if let value = members["idKey"] {
      guard case .string(let text) = value, text.utf8.count == 16,
        text.utf8.allSatisfy({ $0 &- 48 < 10 || $0 &- 97 < 6 }), let key = UInt64(text, radix: 16)
      else {
        throw .corrupt("idKey is not 16 hex digits")
      }
      checkpoint.idKey = key
    }
    return checkpoint
  }

  private static func seq(_ value: JSONValue?) -> UInt64? {
    guard case .int(let n)? = value, n >= 0, n < Int64.max else { return nil }
    return UInt64(n)
  }

  private static func lease(_ value: JSONValue) -> Lease? {
    guard case .object(let m) = value, case .string(let flushId)? = m["flushId"],
      case .int(let expires)? = m["expiresAt"],
      UTCTime.isRepresentable(expires),
      case .array(let seqValues)? = m["seqs"], case .string(let note)? = m["note"]
    else { return nil }
    let seqs = seqValues.compactMap(seq)
    var origin = LeaseOrigin.flush
    if case .int(let raw)? = m["origin"] {
      guard let known = UInt8(exactly: raw).flatMap(LeaseOrigin.init(rawValue:)) else { return nil }
      origin = known
    }
    guard seqs.count == seqValues.count else { return nil }
    return Lease(flushId: flushId, seqs: seqs, expiresAt: expires, note: Array(note.utf8), origin: origin)
  }

  private static func parse(_ line: ArraySlice<UInt8>) -> JSONValue? {
    try? JSONReader.parse(Array(line), maxDepth: 16)
  }
}
