import OutboxSupport

/// Duplicate-key detection for the object being read: a linear scan while it has at most 16
/// keys, then an open-addressing table of key node indices. Keys are equal when their decoded
/// code points are equal (`"\u00c5"` and `"A\u030a"` are two keys; so are `"K"` and the Kelvin sign).
struct KeyIndex: ~Copyable {
  private var seen = 0
  /// One bit per (length, first byte, last byte) hash of the plain keys seen: a clear bit proves a key new.
  private var bloom: UInt64 = 0
  private var sawEscaped = false
  private var slots: UnsafeMutablePointer<Int32>? = nil
  private var capacity = 0

  static let linearLimit = 16

  /// Records key node `key` of the object at node `object`; true when an earlier key was equal.
  @inline(__always)
  mutating func isDuplicate(_ key: Int, object: Int, builder: borrowing TapeBuilder) -> Bool {
    if slots == nil, seen < Self.linearLimit, !sawEscaped {
      let node = builder.nodes[key]
      if node.aux & JSONNode.escaped == 0 {
        let length = Int(node.end &- node.start) &- 2
        let first = length > 0 ? UInt64(builder.base[Int(node.start) + 1]) : 0
        let last = length > 0 ? UInt64(builder.base[Int(node.end) - 2]) : 0
        let bit: UInt64 = 1 << ((UInt64(length) &* 0x9E37 ^ first &* 31 ^ last &* 7) & 63)
        let known = bloom & bit != 0
        bloom |= bit
        if !known {
          seen += 1
          return false
        }
      }
    }
    return search(key, object: object, builder: builder)
  }

  /// The full check: every earlier key compared (small objects) or looked up in the table.
  private mutating func search(_ key: Int, object: Int, builder: borrowing TapeBuilder) -> Bool {
    defer { seen += 1 }
    if builder.nodes[key].aux & JSONNode.escaped != 0 { sawEscaped = true }
    if slots == nil {
      if seen < Self.linearLimit {
        var k = object + 1
        while k < key {
          if Self.equal(k, key, builder) { return true }
          k = builder.next(k + 1)
        }
        return false
      }
      var k = object + 1
      grow(to: 64, builder)
      while k < key {
        _ = insert(k, builder)
        k = builder.next(k + 1)
      }
    }
    if (seen + 1) * 2 > capacity { grow(to: capacity * 2, builder) }
    return !insert(key, builder)
  }

  /// Adds `key`; false when an equal key is already there.
  private mutating func insert(_ key: Int, _ builder: borrowing TapeBuilder) -> Bool {
    guard let slots else { return true }
    let mask = capacity - 1
    var s = Int(truncatingIfNeeded: Self.hash(key, builder)) & mask
    while slots[s] >= 0 {
      if Self.equal(Int(slots[s]), key, builder) { return false }
      s = (s + 1) & mask
    }
    slots[s] = Int32(truncatingIfNeeded: key)
    return true
  }

  private mutating func grow(to newCapacity: Int, _ builder: borrowing TapeBuilder) {
    let old = slots
    let oldCapacity = capacity
    let fresh = UnsafeMutablePointer<Int32>.allocate(capacity: newCapacity)
    fresh.initialize(repeating: -1, count: newCapacity)
    slots = fresh
    capacity = newCapacity
    guard let old else { return }
    for s in 0..<oldCapacity where old[s] >= 0 { _ = insert(Int(old[s]), builder) }
    old.deallocate()
  }

  func release() { slots?.deallocate() }

  // MARK: - Key bytes

  private static func equal(_ a: Int, _ b: Int, _ builder: borrowing TapeBuilder) -> Bool {
    let na = builder.nodes[a]
    let nb = builder.nodes[b]
    if na.aux & JSONNode.escaped == 0 && nb.aux & JSONNode.escaped == 0 {
      let length = Int(na.end &- na.start)
      return length == Int(nb.end &- nb.start)
        && memcmp(builder.base + Int(na.start), builder.base + Int(nb.start), length) == 0
    }
    return decoded(a, builder) == decoded(b, builder)
  }

  private static func hash(_ key: Int, _ builder: borrowing TapeBuilder) -> UInt64 {
    let node = builder.nodes[key]
    if node.aux & JSONNode.escaped == 0 {
      return fnv1a(
        UnsafeBufferPointer(start: builder.base + Int(node.start) + 1, count: Int(node.end &- node.start) - 2))
    }
    return decoded(key, builder).withUnsafeBufferPointer { fnv1a($0) }
  }

  private static func decoded(_ key: Int, _ builder: borrowing TapeBuilder) -> [UInt8] {
    let node = builder.nodes[key]
    var out: [UInt8] = []
    JSONString.decode(
      UnsafeBufferPointer(start: builder.base + Int(node.start) + 1, count: Int(node.end &- node.start) - 2), into: &out
    )
    return out
  }

  static func fnv1a(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
    return h ^ (h >> 29)
  }
}

extension TapeBuilder {
  /// The index after node `n`'s subtree (for finished nodes).
  func next(_ n: Int) -> Int {
    let node = nodes[n]
    let b = base[Int(node.start)]
    if b == UInt8(ascii: "{") || b == UInt8(ascii: "[") { return Int(node.aux & JSONNode.skipMask) }
    return n + 1
  }
}
