import OutboxSupport

/// An item's id: a generated UUIDv7 held as two words, or the client's own id held as its UTF-8 bytes.
///
/// Client ids compare and hash by bytes (code points), never by Unicode canonical equivalence.
package struct ItemID: Sendable, Equatable {
  package var high: UInt64
  package var low: UInt64
  /// The client id's bytes; empty for a generated id.
  package var client: [UInt8]

  package init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
    self.client = []
  }

  package init(client: [UInt8]) {
    self.high = 0
    self.low = 0
    self.client = client
  }

  var clientLength: Int { client.count }

  /// Appends the id as JSON text (quoted).
  package func appendJSON(to out: inout [UInt8]) {
    if client.isEmpty {
      out.append(UInt8(ascii: "\""))
      IDGenerator.appendText(high: high, low: low, to: &out)
      out.append(UInt8(ascii: "\""))
    } else {
      client.withUnsafeBufferPointer { out.appendJSONString(utf8: $0) }
    }
  }

  /// The id as text.
  package var text: String {
    if !client.isEmpty { return String(decoding: client, as: UTF8.self) }
    var out: [UInt8] = []
    IDGenerator.appendText(high: high, low: low, to: &out)
    return String(decoding: out, as: UTF8.self)
  }
}

/// A hashable byte string: identity by bytes, for client ids and other wire keys. Hashed as one
/// run of bytes (an array's own hashing feeds the hasher a byte at a time).
package struct ByteKey: Hashable, Sendable {
  package var bytes: [UInt8]
  package init(_ bytes: [UInt8]) { self.bytes = bytes }
  package init(_ text: String) { self.bytes = Array(text.utf8) }

  package func hash(into hasher: inout Hasher) {
    hasher.combine(bytes.count)
    bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
  }
}
