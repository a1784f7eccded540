import OutboxJSON
package import OutboxSupport

/// What a snapshot holds: the items, and the seq numbers it covers.
package struct SnapshotState: Sendable {
  package var items: ArraySlice<PendingItem>
  package var nextSeq: UInt64
  /// The highest seq whose effect this snapshot includes (journal records up to it are redundant).
  package var coversSeq: UInt64
  /// When the snapshot was written (read back from its header).
  package var createdAt: Int64? = nil
}

/// Why a snapshot could not be loaded. Startup stops; the file is never replaced by an empty store.
package enum SnapshotError: Error, Sendable, Equatable {
  case unreadable(FileError)
  case corrupt(path: String, reason: String)
  case newerVersion(path: String, version: Int64)
}

/// The snapshot file: one header line, one JSON line per item, and a trailer line with a CRC-32C
/// of everything before it. Written atomically with mode 0600.
///
/// `{"format":"push-outbox-snapshot","version":1,"coversSeq":9,"nextSeq":10,"items":2,"createdAt":"…"}`
package enum SnapshotFileV1 {
  static let formatName = "push-outbox-snapshot"
  package static let version: Int64 = 1
  static let fileName = "snapshot.json"

  /// Serializes `state` into the file's bytes.
  package static func encode(_ state: SnapshotState, createdAt: Int64) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(256)
    out.appendASCII("{\"format\":\"push-outbox-snapshot\",\"version\":1,\"coversSeq\":")
    out.appendUInt(state.coversSeq)
    out.appendASCII(",\"nextSeq\":")
    out.appendUInt(state.nextSeq)
    out.appendASCII(",\"items\":")
    out.appendInt(Int64(state.items.count))
    out.appendASCII(",\"createdAt\":\"")
    UTCTime.append(ms: createdAt, to: &out)
    out.appendASCII("\"}\n")
    var savedAtText = UTCTimeText()
    for item in state.items {
      item.encodeJSON(into: &out, savedAtText: &savedAtText)
      out.append(0x0A)
    }
    let crc = CRC32C.checksum(out)
    out.appendASCII("{\"end\":true,\"items\":")
    out.appendInt(Int64(state.items.count))
    out.appendASCII(",\"crc32c\":")
    out.appendUInt(UInt64(crc))
    out.appendASCII("}\n")
    return out
  }

  /// Loads and verifies a snapshot's bytes.
  package static func decode(_ bytes: [UInt8], path: String) throws(SnapshotError) -> SnapshotState {
    func corrupt(_ reason: String) -> SnapshotError { .corrupt(path: path, reason: reason) }
    var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    guard lines.last?.isEmpty == true, lines.count >= 3 else { throw corrupt("truncated: no trailer line") }
    lines.removeLast()
    let header = try parseLine(lines.first!, path: path)
    if case .int(let v)? = header["version"], v > version { throw .newerVersion(path: path, version: v) }
    guard header["format"] == .string(formatName), header["version"] == .int(version),
      case .int(let covers)? = header["coversSeq"], case .int(let next)? = header["nextSeq"],
      case .int(let count)? = header["items"], covers >= 0, next >= 1, covers < next, count >= 0
    else { throw corrupt("bad header") }
    let trailer = try parseLine(lines.removeLast(), path: path)
    let bodyLength = lines.last!.endIndex + 1  // the trailer starts after the last item line's newline
    guard case .int(let crc)? = trailer["crc32c"], trailer["items"] == .int(count),
      crc == Int64(CRC32C.checksum(Array(bytes[0..<bodyLength])))
    else { throw corrupt("checksum or trailer mismatch") }
    guard lines.count - 1 == count else { throw corrupt("item count mismatch") }
    var items: [PendingItem] = []
    items.reserveCapacity(Int(count))
    for line in lines.dropFirst() {
      do { items.append(try PendingItem(decoding: try parseLine(line, path: path))) } catch {
        throw corrupt("bad item line")
      }
    }
    let createdAt = header["createdAt"]?.stringValue.flatMap(ISO8601.parseDateTime)
    return SnapshotState(items: items[...], nextSeq: UInt64(next), coversSeq: UInt64(covers), createdAt: createdAt)
  }

  private static func parseLine(_ line: ArraySlice<UInt8>, path: String) throws(SnapshotError) -> JSONValue {
    do {
      return try line.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> JSONValue in
        var reader = JSONReader(buffer, maxDepth: 1000)
        return try reader.parseDocument()
      }
    } catch {
      throw .corrupt(path: path, reason: "invalid JSON at byte \(error.offset) of a line: \(error.reason)")
    }
  }
}
