import OutboxSupport

/// `store.id`: the store's identity, 16 random bytes (32 hex digits and a newline), written when the
/// store is created, or at the first open of a store made before it existed (or whose `store.id` is
/// unreadable: a new one only makes an image beside it unusable). A `load.image` records
/// it and is used only beside the same identity, so an image copied from another store, even one
/// with an identical checkpoint, is never taken for this store's (`LoadImage`).
enum StoreIdentity {
  static let fileName = "store.id"
  static let byteCount = 16

  /// The identity in `directory`; nil when there is none or it cannot be read.
  static func read(directory: String) -> [UInt8]? {
    (try? FileIO.read(directory + "/" + fileName, limit: 64)).flatMap { $0.flatMap(parse) }
  }

  /// Writes a new identity (once the store opened: a start that is refused changes nothing). nil when
  /// it cannot be written: no image is then written or used.
  static func create(directory: String, log: Log) -> [UInt8]? {
    var identity = [UInt8](repeating: 0, count: byteCount)
    var generator = SystemRandomNumberGenerator()
    for i in identity.indices { identity[i] = generator.next() }
    do {
      try FileIO.writeAtomically(
        Array((hex(identity) + "\n").utf8), to: directory + "/" + fileName, directory: directory)
    } catch {
      log.warn("cannot write \(fileName) (\(error)); no load image is written or used")
      return nil
    }
    return identity
  }

  /// 32 lowercase hex digits and a newline.
  static func parse(_ bytes: [UInt8]) -> [UInt8]? {
    guard bytes.count == 2 * byteCount + 1, bytes.last == 10 else { return nil }
    var out: [UInt8] = []
    for pair in stride(from: 0, to: 2 * byteCount, by: 2) {
      guard let high = digit(bytes[pair]), let low = digit(bytes[pair + 1]) else { return nil }
      out.append(high << 4 | low)
    }
    return out
  }

  static func hex(_ identity: [UInt8]) -> String {
    identity.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
  }

  private static func digit(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 48...57: byte - 48
    case 97...102: byte - 87
    default: nil
    }
  }
}
