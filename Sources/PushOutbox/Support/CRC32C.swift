/// CRC-32C (Castagnoli), the checksum of iSCSI, ext4 and LevelDB, computed slice-by-8 in software.
package enum CRC32C {
  private static let tables: [[UInt32]] = {
    var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
    for n in 0..<256 {
      var c = UInt32(n)
      for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
      tables[0][n] = c
    }
    for n in 0..<256 {
      for k in 1..<8 { tables[k][n] = (tables[k - 1][n] >> 8) ^ tables[0][Int(tables[k - 1][n] & 0xFF)] }
    }
    return tables
  }()

  /// The checksum of `bytes`, continuing from `crc` (pass 0 to start).
  package static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
    var c = ~crc
    var i = 0
    let n = bytes.count
    tables.withUnsafeBufferPointer { t in
      let t0 = t[0], t1 = t[1], t2 = t[2], t3 = t[3], t4 = t[4], t5 = t[5], t6 = t[6], t7 = t[7]
      while i + 8 <= n {
        let lo = c ^ (UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
        let hi = UInt32(bytes[i + 4]) | UInt32(bytes[i + 5]) << 8 | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 7]) << 24
        c = t7[Int(lo & 0xFF)] ^ t6[Int(lo >> 8 & 0xFF)] ^ t5[Int(lo >> 16 & 0xFF)] ^ t4[Int(lo >> 24)]
          ^ t3[Int(hi & 0xFF)] ^ t2[Int(hi >> 8 & 0xFF)] ^ t1[Int(hi >> 16 & 0xFF)] ^ t0[Int(hi >> 24)]
        i += 8
      }
      while i < n {
        c = t0[Int((c ^ UInt32(bytes[i])) & 0xFF)] ^ (c >> 8)
        i += 1
      }
    }
    return ~c
  }

  package static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
    bytes.withUnsafeBytes { checksum($0, continuing: crc) }
  }
}
