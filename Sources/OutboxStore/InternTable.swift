import OutboxSupport

/// Byte strings held once, each with a count of the rows that use it: the users and event names a
/// store repeats millions of times, kept once each (`StoredBody`).
///
/// Entries live one after another in `storage` (`InternBytes`, blocks that never move); an entry's
/// number is stable while any row uses it.
/// When the last row lets go, its number is reused and its bytes become garbage that a later
/// compaction of `storage` drops. The index is open addressing with linear probing. A slot holds all
/// that interning reads (the hash, the number, where the bytes are, the count of uses), so a save
/// touches one slot and the entry's bytes: with many users those are cache misses, and fewer misses
/// is the point. Hashes are seeded per process, so no input can choose its collisions in advance.
struct InternTable {
  /// The longest entry held; longer strings stay in the row's own bytes.
  static let maxLength = 255
  /// Entries at most; past it new strings stay in the rows (this bounds the table's memory whatever
  /// the count of distinct users in the input). Numbers fit in a slot's 24 bits.
  static let maxEntries = 1 << 22

  /// One index slot: `entry` is the number + 1 in the low 24 bits (0: empty) and the length above.
  /// An empty slot is all zeros (`ZeroedArray`).
  private struct Slot {
    var hash: UInt32 = 0
    var entry: UInt32 = 0
    var start: UInt32 = 0
    var uses: UInt32 = 0

    var number: Int { Int(entry & 0xFF_FFFF) - 1 }
    var length: Int { Int(entry >> 24) }
  }

  /// Where an entry's bytes are (for reading a row back), and its hash (to find its slot).
  private struct Entry {
    var start: UInt32
    var hash: UInt32
    var length: UInt8
  }

  private var storage = InternBytes()
  private var entries: [Entry] = []
  /// The count is a power of two at least twice the entries.
  private var slots = ZeroedArray<Slot>(count: 64)
  private var free: [UInt32] = []
  private var garbage = 0
  /// How many times `storage` was compacted (for tests).
  private(set) var compactions = 0
  /// Where `warm` leaves what it read, so its loads are kept.
  private var warmSink: UInt64 = 0
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
    var index = Int(hash) & mask
    while true {  // `index` is masked to the power-of-two count: reads need no bounds check
      let slot = slots[unchecked: index]
      guard slot.entry != 0 else { break }
      if slot.hash == hash && slot.length == bytes.count && equals(Int(slot.start), bytes) {
        slots[index].uses = slot.uses + 1
        return UInt32(slot.number)
      }
      index = (index + 1) & mask
    }
    guard count < Self.maxEntries, storage.canAppend(bytes.count) else { return nil }
    let entry = add(bytes, hash: hash)
    slots[index] = Slot(
      hash: hash, entry: UInt32(entry + 1) | UInt32(bytes.count) << 24, start: entries[entry].start, uses: 1)
    if count * 2 > slots.count { grow() }
    return UInt32(entry)
  }

  /// Reads the slots and bytes that interning strings of these hashes will read, in two passes whose
  /// loads do not wait on each other (the first slot of each only: a hint, never a change).
  mutating func warm(_ hashes: [UInt32]) {
    let mask = slots.count - 1
    var sink: UInt64 = 0
    for hash in hashes { sink &+= UInt64(slots[Int(hash) & mask].start) }
    for hash in hashes {
      let slot = slots[Int(hash) & mask]
      guard slot.entry != 0, slot.hash == hash else { continue }
      // both ends: most entries cross a cache line
      let bytes = storage.pointer(Int(slot.start))
      sink &+= UInt64(bytes.load(as: UInt8.self)) &+ UInt64(bytes.load(fromByteOffset: slot.length - 1, as: UInt8.self))
    }
    warmSink = sink
  }

  /// Reads ahead what `bytes` of these entries will read: where each entry is, then both ends of
  /// its bytes, in passes whose loads do not wait on each other (a hint, never a change). Changes
  /// nothing, so threads may call it at once; returns a sum of what it read, for the caller to keep.
  func warm(reading numbers: [UInt32]) -> UInt64 {
    var sink: UInt64 = 0
    for number in numbers { sink &+= UInt64(entries[Int(number)].start) }
    for number in numbers {
      let held = entries[Int(number)]
      let bytes = storage.pointer(Int(held.start))
      sink &+=
        UInt64(bytes.load(as: UInt8.self)) &+ UInt64(bytes.load(fromByteOffset: Int(held.length) - 1, as: UInt8.self))
    }
    return sink
  }

  /// Reads ahead what `release` of these entries will read: each entry's hash, then its home slot.
  mutating func warm(releasing numbers: [UInt32]) {
    let mask = slots.count - 1
    var sink: UInt64 = 0
    for number in numbers { sink &+= UInt64(entries[Int(number)].hash) }
    for number in numbers { sink &+= UInt64(slots[Int(entries[Int(number)].hash) & mask].uses) }
    warmSink = sink
  }

  /// One use fewer; the entry goes when none is left.
  mutating func release(_ entry: UInt32) {
    let entry = Int(entry)
    let index = slotIndex(entry)
    slots[index].uses -= 1
    guard slots[index].uses == 0 else { return }
    unlink(index)
    garbage += Int(entries[entry].length)
    free.append(UInt32(entry))
    if garbage > 1 << 16 && garbage * 2 > storage.held { compact() }
  }

  /// The entry's byte count.
  @inline(__always) func length(_ entry: UInt32) -> Int { Int(entries[Int(entry)].length) }

  /// The entry's bytes (none for nil), valid until the table changes (a release may compact it).
  @inline(__always)
  func bytes(_ entry: UInt32?) -> UnsafeRawBufferPointer {
    guard let entry else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    let held = entries[Int(entry)]
    return storage.bytes(Int(held.start), Int(held.length))
  }

  /// Appends the entry's bytes to `out`.
  @inline(__always) func append(_ entry: UInt32, to out: inout [UInt8]) {
    let entry = entries[Int(entry)]
    out.appendBytes(storage.bytes(Int(entry.start), Int(entry.length)))
  }

  // MARK: - Load image (`LoadImage`)

  /// Each entry number in order, with its bytes (nil: a free number).
  func forEachEntry(_ body: (UnsafeRawBufferPointer?) throws(FileError) -> Void) throws(FileError) {
    var isFree = [Bool](repeating: false, count: entries.count)
    for number in free { isFree[Int(number)] = true }
    for (number, entry) in entries.enumerated() {
      try body(isFree[number] ? nil : storage.bytes(Int(entry.start), Int(entry.length)))
    }
  }

  /// Adds the next entry number of a table being rebuilt (nil: a free number), with no use yet;
  /// false when the table is full. `finishRestoring` makes the index.
  mutating func restore(_ bytes: UnsafeRawBufferPointer?) -> Bool {
    guard entries.count < Self.maxEntries else { return false }
    guard let bytes else {
      entries.append(Entry(start: 0, hash: 0, length: 0))
      return true
    }
    guard storage.canAppend(bytes.count) else { return false }
    entries.append(Entry(start: UInt32(storage.append(bytes)), hash: Self.hash(bytes), length: UInt8(bytes.count)))
    return true
  }

  /// Builds the index of a rebuilt table with the uses of each entry, as the rows counted them: an
  /// entry no row uses is free (its bytes are garbage).
  mutating func finishRestoring(uses: [UInt32]) {
    var size = 64
    while size < uses.count * 2 { size *= 2 }
    slots = ZeroedArray<Slot>(count: size)
    let mask = size - 1
    for (number, count) in uses.enumerated() {
      let entry = entries[number]
      guard count > 0 else {
        free.append(UInt32(number))
        garbage += Int(entry.length)
        continue
      }
      var index = Int(entry.hash) & mask
      while slots[index].entry != 0 { index = (index + 1) & mask }
      slots[index] = Slot(
        hash: entry.hash, entry: UInt32(number + 1) | UInt32(entry.length) << 24, start: entry.start, uses: count)
    }
  }

  /// Entry numbers handed out (free ones included): a record may name only those below it.
  var numbers: Int { entries.count }

  /// Compares eight bytes at a time (entries are short: no call out).
  @inline(__always)
  private func equals(_ start: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
    let held = UnsafeRawPointer(storage.pointer(start))
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

  private mutating func add(_ bytes: UnsafeRawBufferPointer, hash: UInt32) -> Int {
    let new = Entry(start: UInt32(storage.append(bytes)), hash: hash, length: UInt8(bytes.count))
    if !free.isEmpty, let reused = free.popLast() {
      entries[Int(reused)] = new
      return Int(reused)
    }
    entries.append(new)
    return entries.count - 1
  }

  /// The slot of a held entry.
  private func slotIndex(_ entry: Int) -> Int {
    let mask = slots.count - 1
    var index = Int(entries[entry].hash) & mask
    while slots[index].number != entry { index = (index + 1) & mask }
    return index
  }

  /// Empties a slot, moving later slots of its run back (no tombstones).
  private mutating func unlink(_ index: Int) {
    let mask = slots.count - 1
    var hole = index
    var next = hole
    while true {
      next = (next + 1) & mask
      guard slots[next].entry != 0 else { break }
      let home = Int(slots[next].hash) & mask
      // The slot at `next` stays when its home lies cyclically in (hole, next]; else it fills the hole.
      let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
      if stays { continue }
      slots[hole] = slots[next]
      hole = next
    }
    slots[hole] = Slot()
  }

  private mutating func grow() {
    var bigger = ZeroedArray<Slot>(count: slots.count * 2)
    let mask = bigger.count - 1
    bigger.withUnsafeMutableBufferPointer { bigger in
      for index in slots.indices where slots[index].entry != 0 {
        let slot = slots[index]
        var index = Int(slot.hash) & mask
        while bigger[index].entry != 0 { index = (index + 1) & mask }
        bigger[index] = slot
      }
    }
    slots = bigger
  }

  /// Drops the bytes of entries no longer used; entry numbers stay as they are.
  private mutating func compact() {
    let packed = InternBytes()
    for index in slots.indices where slots[index].entry != 0 {
      let entry = slots[index].number
      let held = storage.bytes(Int(entries[entry].start), Int(entries[entry].length))
      entries[entry].start = UInt32(packed.append(held))
      slots[index].start = entries[entry].start
    }
    storage = packed
    garbage = 0
    compactions += 1
  }
}

// MARK: - Hash

extension InternTable {
  /// A seeded multiply-mix hash, eight bytes at a time: the one `intern` uses.
  static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt32 { hash(bytes, seed: seed) }

  /// `hash` with the seed read once by the caller (reading the lazy global costs a call each time).
  @inline(__always)
  static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt32 {
    let n = bytes.count
    var h = seed ^ UInt64(truncatingIfNeeded: n)
    var tail: UInt64 = 0
    if let p = bytes.baseAddress {
      var i = 0
      while i &+ 8 <= n {
        h = (h ^ p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
        h ^= h >> 29
        i &+= 8
      }
      if i < n && n >= 8 {  // the last eight bytes, overlapping the words before
        tail = p.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)
      } else {
        while i < n {
          tail = tail << 8 | UInt64(p.load(fromByteOffset: i, as: UInt8.self))
          i &+= 1
        }
      }
    }
    h = (h ^ tail) &* 0x9E37_79B9_7F4A_7C15
    h ^= h >> 32
    return UInt32(truncatingIfNeeded: h)
  }
}
