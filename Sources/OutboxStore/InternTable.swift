/// Byte strings held once, each with a count of the rows that use it: the users and event names a
/// store repeats millions of times, kept once each (`StoredBody`).
///
/// Entries live one after another in `storage`; an entry's number is stable while any row uses it.
/// When the last row lets go, its number is reused and its bytes become garbage that a later
/// compaction of `storage` drops. The index is open addressing with linear probing; each slot keeps
/// the entry's hash beside its number, so a probe reads the entry only when the hashes agree. Hashes
/// are seeded per process, so no input can choose its collisions in advance.
struct InternTable {
  /// The longest entry held; longer strings stay in the row's own bytes.
  static let maxLength = 255
  /// Entries at most; past it new strings stay in the rows (this bounds the table's memory whatever
  /// the count of distinct users in the input).
  static let maxEntries = 1 << 22

  /// Where an entry's bytes are, and how many rows use it (0: the number is free).
  private struct Entry {
    var start: UInt32
    var uses: UInt32
    var hash: UInt32
    var length: UInt8
  }

  private var storage: [UInt8] = []
  private var entries: [Entry] = []
  /// Per slot: the entry's hash in the high 32 bits, its number + 1 in the low 32; 0 is empty. The
  /// count is a power of two at least twice the entries.
  private var slots: [UInt64] = Array(repeating: 0, count: 64)
  private var free: [UInt32] = []
  private var garbage = 0
  /// Where `warm` leaves what it read, so its loads are kept.
  private var warmSink: UInt64 = 0
  private var warmFound: [Int32] = []
  /// The hashes' seed: one per process, so a writer on another thread hashes as the table does
  /// (`BodyParts`).
  static let seed = UInt64.random(in: .min ... .max)

  /// Entries in use.
  var count: Int { entries.count - free.count }

  /// The number of `bytes`' entry, with one more use; nil when it is too long or the table is full.
  mutating func intern(_ bytes: UnsafeRawBufferPointer, hash: UInt32? = nil) -> UInt32? {
    guard bytes.count <= Self.maxLength else { return nil }
    let hash = hash ?? Self.hash(bytes)
    let mask = slots.count - 1
    var slot = Int(hash) & mask
    while slots[slot] != 0 {
      let value = slots[slot]
      if UInt32(truncatingIfNeeded: value >> 32) == hash {
        let entry = Int(UInt32(truncatingIfNeeded: value) - 1)
        if equals(entries[entry], bytes) {
          entries[entry].uses += 1
          return UInt32(entry)
        }
      }
      slot = (slot + 1) & mask
    }
    guard count < Self.maxEntries, storage.count + bytes.count <= Int(UInt32.max) else { return nil }
    let entry = add(bytes, hash: hash)
    slots[slot] = UInt64(hash) << 32 | UInt64(entry + 1)
    if count * 2 > slots.count { grow() }
    return UInt32(entry)
  }

  /// Reads the slots, entries and bytes that interning strings of these hashes will read, in three
  /// passes whose loads do not wait on each other (the first slot of each only: a hint, never a change).
  mutating func warm(_ hashes: [UInt32]) {
    let mask = slots.count - 1
    var sink: UInt64 = 0
    for hash in hashes { sink &+= slots[Int(hash) & mask] }
    var found = warmFound
    found.removeAll(keepingCapacity: true)
    defer { warmFound = found }
    for hash in hashes {
      let value = slots[Int(hash) & mask]
      let entry = UInt32(truncatingIfNeeded: value) &- 1
      guard value != 0, UInt32(truncatingIfNeeded: value >> 32) == hash else { continue }
      sink &+= UInt64(entries[Int(entry)].start)
      found.append(Int32(entry))
    }
    storage.withUnsafeBytes { all in
      for entry in found {  // both ends: most entries cross a cache line
        let entry = entries[Int(entry)]
        sink &+= UInt64(all[Int(entry.start)]) &+ UInt64(all[Int(entry.start) + Int(entry.length) - 1])
      }
    }
    warmSink = sink
  }

  /// One use fewer; the entry goes when none is left.
  mutating func release(_ entry: UInt32) {
    let entry = Int(entry)
    entries[entry].uses -= 1
    guard entries[entry].uses == 0 else { return }
    unlink(entry)
    garbage += Int(entries[entry].length)
    free.append(UInt32(entry))
    if garbage > 1 << 16 && garbage * 2 > storage.count { compact() }
  }

  /// The entry's byte count.
  @inline(__always) func length(_ entry: UInt32) -> Int { Int(entries[Int(entry)].length) }

  /// Appends the entry's bytes to `out`.
  @inline(__always) func append(_ entry: UInt32, to out: inout [UInt8]) {
    let entry = entries[Int(entry)]
    let start = Int(entry.start)
    out.append(contentsOf: storage[start..<start + Int(entry.length)])
  }

  /// Compares eight bytes at a time (entries are short: no call out).
  @inline(__always)
  private func equals(_ entry: Entry, _ bytes: UnsafeRawBufferPointer) -> Bool {
    guard Int(entry.length) == bytes.count else { return false }
    return storage.withUnsafeBytes { all in
      let held = all.baseAddress! + Int(entry.start)
      var i = 0
      while i + 8 <= bytes.count {
        let word = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        guard held.loadUnaligned(fromByteOffset: i, as: UInt64.self) == word else { return false }
        i += 8
      }
      while i < bytes.count {
        guard held.load(fromByteOffset: i, as: UInt8.self) == bytes[i] else { return false }
        i += 1
      }
      return true
    }
  }

  private mutating func add(_ bytes: UnsafeRawBufferPointer, hash: UInt32) -> Int {
    let new = Entry(start: UInt32(storage.count), uses: 1, hash: hash, length: UInt8(bytes.count))
    storage.append(contentsOf: bytes)
    if let reused = free.popLast() {
      entries[Int(reused)] = new
      return Int(reused)
    }
    entries.append(new)
    return entries.count - 1
  }

  /// Takes the entry out of the index, moving later entries of its run back (no tombstones).
  private mutating func unlink(_ entry: Int) {
    let mask = slots.count - 1
    var hole = Int(entries[entry].hash) & mask
    while UInt32(truncatingIfNeeded: slots[hole]) != UInt32(entry + 1) { hole = (hole + 1) & mask }
    var next = hole
    while true {
      next = (next + 1) & mask
      guard slots[next] != 0 else { break }
      let home = Int(UInt32(truncatingIfNeeded: slots[next] >> 32)) & mask
      // The entry at `next` stays when its home lies cyclically in (hole, next]; else it fills the hole.
      let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
      if stays { continue }
      slots[hole] = slots[next]
      hole = next
    }
    slots[hole] = 0
  }

  private mutating func grow() {
    var bigger = [UInt64](repeating: 0, count: slots.count * 2)
    let mask = bigger.count - 1
    for value in slots where value != 0 {
      var slot = Int(UInt32(truncatingIfNeeded: value >> 32)) & mask
      while bigger[slot] != 0 { slot = (slot + 1) & mask }
      bigger[slot] = value
    }
    slots = bigger
  }

  /// Drops the bytes of entries no longer used; entry numbers stay as they are.
  private mutating func compact() {
    var packed: [UInt8] = []
    packed.reserveCapacity(storage.count - garbage)
    for index in entries.indices where entries[index].uses > 0 {
      let start = Int(entries[index].start)
      entries[index].start = UInt32(packed.count)
      packed.append(contentsOf: storage[start..<start + Int(entries[index].length)])
    }
    storage = packed
    garbage = 0
  }

  /// A seeded multiply-mix hash, eight bytes at a time: the one `intern` uses.
  static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
    var h = seed ^ UInt64(bytes.count)
    var i = 0
    while i + 8 <= bytes.count {
      h = (h ^ bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
      h ^= h >> 29
      i += 8
    }
    var tail: UInt64 = 0
    if i < bytes.count && bytes.count >= 8 {  // the last eight bytes, overlapping the words before
      tail = bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self)
    } else {
      while i < bytes.count {
        tail = tail << 8 | UInt64(bytes[i])
        i += 1
      }
    }
    h = (h ^ tail) &* 0x9E37_79B9_7F4A_7C15
    h ^= h >> 32
    return UInt32(truncatingIfNeeded: h)
  }
}
