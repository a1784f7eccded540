/// CRC-32C (Castagnoli), the checksum of iSCSI, ext4 and LevelDB, computed slice-by-8 in software.
package enum CRC32C {
  /// Eight 256-entry tables, one after another: table k is at `k * 256`.
  private static let tables: [UInt32] = {
    var t = [UInt32](repeating: 0, count: 8 * 256)
    for n in 0..<256 {
      var c = UInt32(n)
      for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
      t[n] = c
    }
    for n in 0..<256 {
      for k in 1..<8 { t[k * 256 + n] = (t[(k - 1) * 256 + n] >> 8) ^ t[Int(t[(k - 1) * 256 + n] & 0xFF)] }
    }
    return t
  }()

  /// The checksum of `bytes`, continuing from `crc` (pass 0 to start).
  package static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
    #if arch(x86_64)
    return hardware(bytes, continuing: crc)
    #else
    return software(bytes, continuing: crc)
    #endif
  }

  /// The checksums of three byte ranges, computed together where the hardware can overlap them.
  package static func checksums(
    _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ c: UnsafeRawBufferPointer
  ) -> (UInt32, UInt32, UInt32) {
    #if arch(x86_64)
    return hardware(a, b, c)
    #else
    return (software(a), software(b), software(c))
    #endif
  }

  /// The table-driven checksum (also the reference the hardware one is tested against).
  static func software(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
    var c = ~crc
    var i = 0
    let n = bytes.count
    guard let p = bytes.baseAddress else { return crc }
    tables.withUnsafeBufferPointer { table in
      let t = table.baseAddress!
      while i + 8 <= n {
        let word = UInt64(littleEndian: (p + i).loadUnaligned(as: UInt64.self))
        let lo = c ^ UInt32(truncatingIfNeeded: word)
        let hi = UInt32(truncatingIfNeeded: word >> 32)
        c =
          t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int(lo >> 8 & 0xFF)] ^ t[5 * 256 + Int(lo >> 16 & 0xFF)]
          ^ t[4 * 256 + Int(lo >> 24)] ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int(hi >> 8 & 0xFF)]
          ^ t[256 + Int(hi >> 16 & 0xFF)] ^ t[Int(hi >> 24)]
        i += 8
      }
      while i < n {
        c = t[Int((c ^ UInt32(p.load(fromByteOffset: i, as: UInt8.self))) & 0xFF)] ^ (c >> 8)
        i += 1
      }
    }
    return ~c
  }

  package static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
    bytes.withUnsafeBytes { checksum($0, continuing: crc) }
  }
}
