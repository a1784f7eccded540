/// Where an item's bytes live in the `Arena`: chunk slot in the high 32 bits, offset in the low 32.
package typealias ArenaLocation = UInt64

/// Item bytes, packed one after another into large chunks (1 MiB, or one chunk per larger item).
///
/// A chunk is freed as soon as none of its bytes are live, so removing items from the head returns
/// memory in proportion to what was removed. Freed slots are reused.
///
/// An append that fits in the chunk being filled touches no array: where its bytes go, what is
/// left and what was appended since are kept apart (`next`, `room`, `unsettled`), and added to
/// `live` before anything reads it (`settle`).
package final class Arena {
  package static let chunkSize = 1 << 20

  private var chunks: [UnsafeMutableRawPointer?] = []
  private var live: [Int] = []
  private var freeSlots: [Int] = []
  /// The chunk being filled (-1: none yet).
  private var current = -1
  /// Where the next bytes go in it, at `offset`, with `room` bytes left (-1 before the first chunk, so
  /// that any append, even of nothing, starts one).
  private var next: UnsafeMutableRawPointer? = nil
  private var offset = 0
  private var room = -1
  /// Bytes appended to the current chunk that `live` does not count yet.
  private var unsettled = 0

  package init() {}

  deinit {
    for chunk in chunks { chunk?.deallocate() }
  }

  /// Takes over everything `other` holds (an empty arena's, filled elsewhere: `LoadImage`), leaving
  /// it empty.
  func take(_ other: Arena) {
    for chunk in chunks { chunk?.deallocate() }
    (chunks, live, freeSlots, current) = (other.chunks, other.live, other.freeSlots, other.current)
    (next, offset, room, unsettled) = (other.next, other.offset, other.room, other.unsettled)
    (other.chunks, other.live, other.freeSlots, other.current) = ([], [], [], -1)
    (other.next, other.offset, other.room, other.unsettled) = (nil, 0, -1, 0)
  }

  /// Bytes held in chunks (for `status` and the memory benchmark).
  var liveBytes: Int { live.reduce(0, +) + unsettled }

  /// Chunks allocated and not freed (for tests).
  var heldChunks: Int { chunks.count - freeSlots.count }

  /// Copies `first`, `second` then `third` into the arena, contiguously, and returns where they start.
  package func append(
    _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer,
    _ third: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)
  ) -> ArenaLocation {
    let length = first.count + second.count + third.count
    if length > room {
      if length > Self.chunkSize { return appendAlone(first, second, third, length: length) }
      startChunk()
    }
    let base = next.unsafelyUnwrapped
    Self.copy(first, to: base)
    Self.copy(second, to: base + first.count)
    Self.copy(third, to: base + first.count + second.count)
    let location = ArenaLocation(current) << 32 | ArenaLocation(offset)
    next = base + length
    offset += length
    room -= length
    unsettled += length
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
    settle()
    let slot = Int(location >> 32)
    live[slot] -= length
    guard live[slot] == 0 else { return }
    if slot == current {  // reuse the current chunk from its start
      (next, offset, room) = (chunks[slot], 0, Self.chunkSize)  // the current chunk is never a large item's
      return
    }
    free(slot)
  }

  /// Brings `live` up to date with the appends to the current chunk.
  private func settle() {
    guard unsettled > 0 else { return }
    live[current] += unsettled
    unsettled = 0
  }

  /// Makes a new chunk the one being filled; the previous one is freed if nothing in it is live.
  private func startChunk() {
    settle()
    let memory = UnsafeMutableRawPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
    let previous = current
    current = place(memory)
    (next, offset, room) = (memory, 0, Self.chunkSize)
    if previous >= 0 && live[previous] == 0 { free(previous) }
  }

  /// An item larger than a chunk, in a chunk of its own that is never the one being filled.
  private func appendAlone(
    _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, _ third: UnsafeRawBufferPointer, length: Int
  ) -> ArenaLocation {
    let memory = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 16)
    Self.copy(first, to: memory)
    Self.copy(second, to: memory + first.count)
    Self.copy(third, to: memory + first.count + second.count)
    let slot = place(memory)
    live[slot] = length
    return ArenaLocation(slot) << 32
  }

  /// A slot for a new chunk at `memory`, nothing in it live yet: a freed one if any.
  private func place(_ memory: UnsafeMutableRawPointer) -> Int {
    if let slot = freeSlots.popLast() {
      (chunks[slot], live[slot]) = (memory, 0)
      return slot
    }
    chunks.append(memory)
    live.append(0)
    return chunks.count - 1
  }

  private func free(_ slot: Int) {
    chunks[slot]?.deallocate()
    chunks[slot] = nil
    freeSlots.append(slot)
  }
}
