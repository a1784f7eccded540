import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Memory for the store's big, long-lived blocks (the arena's 2 MiB chunks), made ready on another
/// thread.
///
/// Filling a store touches fresh memory all the time, and the kernel's work for it (a page fault
/// per 4 KiB, the page zeroed and mapped: an eighth of the request loop's time when saving into a
/// growing store, by `perf`) fell on the thread that answers requests. On Linux a block is one
/// mapping made with every page in place (`MAP_POPULATE`), and the next block is made in the
/// background as soon as one is taken, so the loop takes a ready one. Huge pages were measured and
/// left: on the virtual machines we run on, their first touch cost more than the small pages saved.
/// Elsewhere (macOS) a block is ordinary heap memory.
package enum LargeMemory {
  /// The size of a block.
  package static let blockSize = 1 << 21

  /// A ready block (its address; 0 when none), and whether one is being made.
  private static let spare = Atomic<Int>(0)
  private static let making = Atomic<Bool>(false)

  /// A block of `blockSize` bytes. Free it with `deallocate(_:)`. Like any allocation, it stops the
  /// process when the system has no memory left.
  package static func allocate() -> UnsafeMutableRawPointer {
    #if os(Linux)
    let ready = spare.exchange(0, ordering: .acquiring)
    defer { refill() }
    if ready != 0 { return UnsafeMutableRawPointer(bitPattern: ready)! }
    return map()
    #else
    return UnsafeMutableRawPointer.allocate(byteCount: blockSize, alignment: 16)
    #endif
  }

  /// Frees a block from `allocate()`.
  package static func deallocate(_ block: UnsafeMutableRawPointer) {
    #if os(Linux)
    munmap(block, blockSize)
    #else
    block.deallocate()
    #endif
  }

  #if os(Linux)
  /// Maps a block with its pages in place.
  private static func map() -> UnsafeMutableRawPointer {
    let flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE
    guard let block = mmap(nil, blockSize, PROT_READ | PROT_WRITE, flags, -1, 0), block != MAP_FAILED else {
      fatalError("out of memory: a \(blockSize)-byte block")
    }
    return block
  }

  /// Makes the next block in the background, unless one is ready or being made.
  private static func refill() {
    guard spare.load(ordering: .relaxed) == 0,
      making.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    else { return }
    DispatchQueue.global(qos: .utility).async {
      let block = Int(bitPattern: map())
      // Another refill may have left one meanwhile (after a take raced this one): keep one only.
      if !spare.compareExchange(expected: 0, desired: block, ordering: .releasing).exchanged {
        munmap(UnsafeMutableRawPointer(bitPattern: block), blockSize)
      }
      making.store(false, ordering: .releasing)
    }
  }
  #endif
}
