/// The bytes of an `InternTable`'s entries, in 1 MiB blocks that never move: the table grows without
/// copying what it holds. With a growing array, each doubling copied every entry into fresh pages,
/// on the thread that answers requests.
///
/// An entry never crosses a block; its offset is the block's number times the block size plus its
/// place in the block. A block's pages are touched as it fills. Bytes once written never change
/// (compaction writes a new `InternBytes`), so copies of a table may share them: each reads only its
/// own entries' offsets.
final class InternBytes {
  private var blocks: [UnsafeMutableRawPointer] = []
  /// Where the next entry starts.
  private(set) var end = 0
  /// The bytes appended (the ends of blocks an entry did not fit in are not counted).
  private(set) var held = 0

  private static let blockSize = 1 << 20

  deinit { for block in blocks { block.deallocate() } }

  /// True when `length` more bytes keep every offset within 32 bits.
  func canAppend(_ length: Int) -> Bool { end + length + Self.blockSize <= Int(UInt32.max) }

  /// Appends `bytes` (at most a block) and returns their offset.
  func append(_ bytes: UnsafeRawBufferPointer) -> Int {
    if blocks.isEmpty || blocks.count * Self.blockSize - end < bytes.count {
      end = blocks.count * Self.blockSize
      blocks.append(.allocate(byteCount: Self.blockSize, alignment: 16))
    }
    let start = end
    if let source = bytes.baseAddress { pointer(start).copyMemory(from: source, byteCount: bytes.count) }
    end += bytes.count
    held += bytes.count
    return start
  }

  /// Where the entry at `offset` starts.
  @inline(__always)
  func pointer(_ offset: Int) -> UnsafeMutableRawPointer {
    blocks[offset / Self.blockSize] + offset % Self.blockSize
  }

  /// The `length` bytes at `offset`.
  @inline(__always)
  func bytes(_ offset: Int, _ length: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: pointer(offset), count: length)
  }
}
