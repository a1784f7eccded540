/// Where an item's bytes live in the `Arena`: chunk slot in the high 32 bits, offset in the low 32.
package typealias ArenaLocation = UInt64

/// Item bytes, packed one after another into large chunks (1 MiB, or one chunk per larger item).
///
/// A chunk is freed as soon as none of its bytes are live, so removing items from the head returns
/// memory in proportion to what was removed. Freed slots are reused.
package final class Arena {
  package static let chunkSize = 1 << 20

  private var chunks: [UnsafeMutableRawPointer?] = []
  private var used: [Int] = []
  private var live: [Int] = []
  private var freeSlots: [Int] = []
  /// The chunk being filled.
  private var current = -1

  package init() {}

  deinit {
    for chunk in chunks { chunk?.deallocate() }
  }

  /// Bytes held in chunks (for `status` and the memory benchmark).
  var liveBytes: Int { live.reduce(0, +) }

  /// Copies `first`, `second` then `third` into the arena, contiguously, and returns where they start.
  package func append(
    _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
    _ third: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)
  ) -> ArenaLocation {
    let length = first.count + second.count + third.count
    let slot = reserve(length)
    let base = chunks[slot]! + used[slot]
    Self.copy(first, to: base)
    Self.copy(second, to: base + first.count)
    Self.copy(third, to: base + first.count + second.count)
    let location = ArenaLocation(slot) << 32 | ArenaLocation(used[slot])
    used[slot] += length
    live[slot] += length
    return location
  }

  @inline(__always)
  private static func copy(_ part: UnsafeRawBufferPointer, to base: UnsafeMutableRawPointer) {
    if part.count > 0 { base.copyMemory(from: part.baseAddress!, byteCount: part.count) }
  }

  /// The `length` bytes stored at `location`.
  @inline(__always)
  package func bytes(at location: ArenaLocation, length: Int) -> UnsafeRawBufferPointer {
    let slot = Int(location >> 32)
    let offset = Int(location & 0xFFFF_FFFF)
    return UnsafeRawBufferPointer(start: chunks[slot]! + offset, count: length)
  }

  /// Marks `length` bytes at `location` as no longer needed; frees the chunk when nothing in it is live.
  package func release(_ location: ArenaLocation, length: Int) {
    let slot = Int(location >> 32)
    live[slot] -= length
    guard live[slot] == 0 else { return }
    if slot == current {
      used[slot] = 0  // reuse the current chunk from its start
      return
    }
    chunks[slot]?.deallocate()
    chunks[slot] = nil
    used[slot] = 0
    freeSlots.append(slot)
  }

  /// A slot with room for `length` more bytes.
  private func reserve(_ length: Int) -> Int {
    if current >= 0 && used[current] + length <= capacity(current) { return current }
    let size = max(Self.chunkSize, length)
    let memory = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    let slot: Int
    if let reused = freeSlots.popLast() {
      slot = reused
      chunks[slot] = memory
      used[slot] = 0
      live[slot] = 0
      sizes[slot] = size
    } else {
      slot = chunks.count
      chunks.append(memory)
      used.append(0)
      live.append(0)
      sizes.append(size)
    }
    // A chunk sized for one large item is never the one being filled.
    if size == Self.chunkSize || current < 0 { retire(current, next: slot) }
    return slot
  }

  private var sizes: [Int] = []

  private func capacity(_ slot: Int) -> Int { sizes[slot] }

  /// Makes `next` the chunk being filled; the previous one is freed if nothing in it is live.
  private func retire(_ previous: Int, next: Int) {
    current = next
    if previous >= 0 && live[previous] == 0 && previous != next {
      chunks[previous]?.deallocate()
      chunks[previous] = nil
      used[previous] = 0
      freeSlots.append(previous)
    }
  }
}
