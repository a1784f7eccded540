import OutboxDomain
import OutboxJSON
import OutboxStore
import OutboxSupport

/// Shared by the dead-letter methods: finding dead letters by item id, and writing them.
enum DeadLetters {
  /// The seqs of the dead letters with these ids (compared by their text); unknown ids are skipped.
  static func seqs(ids: [String], in store: HeldItems) -> [UInt64] {
    let wanted = Set(ids)
    return store.deadRows(max: Int.max).filter { wanted.contains(store.id(row: $0).text) }.map(store.seq(row:))
  }

  /// Reads the `fleet` param: true asks for the dead letters of the fleet's stream (`<stream>_DEAD`).
  static func fleet(_ params: inout Params) -> Bool {
    guard let value = params.value("fleet") else { return false }
    guard let flag = value.boolValue else {
      params.issues.error("fleet", "wrong_type", "fleet must be true or false")
      return false
    }
    return flag
  }

  /// Reads the `ids` param: an array of item id strings.
  static func ids(_ params: inout Params, required: Bool) -> [String]? {
    guard let values = params.array("ids", required: required) else { return nil }
    let ids = values.compactMap(\.stringValue)
    if ids.count != values.count { params.issues.error("ids", "wrong_type", "ids must be an array of strings") }
    return ids
  }
}

/// `listDeadLetters` result: each dead letter as `{reason, item}`, in seq order.
struct DeadLetterList: JSONEncodable {
  var rows: [Int]
  var store: HeldItems

  package func encodeJSON(into out: inout [UInt8]) {
    out.appendASCII("{\"deadLetters\":[")
    for (n, row) in rows.enumerated() {
      if n > 0 { out.append(UInt8(ascii: ",")) }
      let item = store.item(row: row)
      out.appendASCII("{\"reason\":")
      out.appendJSONString(store.deadReasons[item.seq] ?? "unknown")
      out.appendASCII(",\"item\":")
      item.encodeJSON(into: &out)
      out.append(UInt8(ascii: "}"))
    }
    out.appendASCII("],\"total\":")
    out.appendInt(Int64(store.deadCount))
    out.append(UInt8(ascii: "}"))
  }
}
