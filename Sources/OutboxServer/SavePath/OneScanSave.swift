import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

/// The one-pass save, the fast path's first tier: the hot save read in one pass over its bytes
/// (`OneScan`), without a tape: a line that is exactly the compact, canonical text of a
/// `saveCustomEvent` request the fast path takes, with plain values.
///
/// It accepts only what it can decide at a glance, and what it accepts `FastSave.prepare`'s tape
/// (`TapeSave`) accepts too, with the same body: an envelope of `jsonrpc` "2.0", an integer `id`
/// (0 to 18 digits' worth), `method` and `params`, each once, in any order, nothing around them;
/// params `name` (no escape, passing every name rule on its raw bytes), optional `properties` and
/// `user`; properties whose keys pass every key rule on their raw bytes (no escape), each once, whose
/// values are numbers, booleans, strings that fit `TextLimit` without counting, or arrays of those
/// (no string in an array that could be a date-time); a `user` in its wire form. The rules are
/// `OutboxDomain`'s (`CustomEventRules.isPlainName`, `isPlainKey`, `mayBeDateTime`), asked here.
/// Every string is checked canonical (`CanonicalJSON`), so its text is what the tape path would
/// write. Anything else, whitespace included, gives nil, and the tape path reads the line and
/// decides as it always has. `DirectSaveTests` compares the two on seeded lines and their mutations.
enum OneScanSave {
  /// Reads `line` and appends the item's members (without `time`) to `body`; nil, with `body`
  /// untouched, for anything it does not take.
  static func prepare(
    _ line: UnsafeBufferPointer<UInt8>, limits: FastSave.Limits, into body: inout [UInt8]
  ) -> FastSave? {
    // The deepest value taken is at depth 4: an alias, or an array in the properties.
    guard limits.maxDepth >= 4 else { return nil }
    let bytes = UnsafeRawBufferPointer(line)
    var scan = OneScan(bytes)
    guard scan.request(maxPropertiesBytes: limits.domain.maxPropertiesBytes) else { return nil }
    let start = body.count
    let (user, properties) = (scan.user, scan.properties)
    let capacity = (user.map { 8 + $0.count } ?? 0) + 8 + scan.name.count + 14 + (properties?.count ?? 2)
    var userEnd = 0, labelEnd = 0  // from `start`
    // One capacity check and the pieces copied through a cursor (an append each cost some 70 instructions).
    ByteCursor.append(to: &body, capacity: capacity) { out in
      let base = line.baseAddress!
      if let user {
        out.put(",\"user\":")
        out.put(base + user.lowerBound, user.count)
      }
      userEnd = out.count
      out.put(",\"name\":")
      out.put(base + scan.name.lowerBound, scan.name.count)
      out.put(",\"properties\":")
      labelEnd = out.count
      if let properties {
        out.put(base + properties.lowerBound, properties.count)
      } else {
        out.put("{}")
      }
    }
    let parts = body.withUnsafeBytes {
      BodyParts(body: UnsafeRawBufferPointer(rebasing: $0[start...]), userEnd: userEnd, labelEnd: labelEnd)
    }
    return FastSave(id: .int(scan.id), hasUser: user != nil, parts: parts)
  }
}
