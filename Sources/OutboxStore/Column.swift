import OutboxSupport

/// A growable array of plain values, for the item table's columns: one value per held item, tens of
/// millions of them. It grows with `realloc`, which moves a block this large to a bigger mapping
/// without copying its pages (`mremap` on Linux; macOS grows large blocks in place or remaps them),
/// where an `Array` copies every element into fresh memory at each doubling: that copy, and the
/// page faults of touching the same rows twice, took about 0.1 s of the million saves around
/// 8.4M rows (README, "Performance"), and held the old and the new block at once.
///
/// A value with copy-on-write, as `Array` is: a copy shares the storage until either side changes.
package struct Column<Element: BitwiseCopyable>: RandomAccessCollection {
  private var storage = Storage()

  package init() {}

  /// The elements at `indices`, in their order.
  package func selecting(_ indices: [Int]) -> Column {
    var selected = Column()
    selected.reserveCapacity(indices.count)
    for index in indices { selected.append(self[index]) }
    return selected
  }

  /// The elements in `range`, copied as one block (what a compaction keeps when only the head went).
  package func selecting(_ range: Range<Int>) -> Column {
    precondition(range.lowerBound >= 0 && range.upperBound <= storage.count, "Column range out of bounds")
    var selected = Column()
    selected.reserveCapacity(range.count)
    if !range.isEmpty {
      selected.storage.base.unsafelyUnwrapped.initialize(
        from: storage.base.unsafelyUnwrapped + range.lowerBound, count: range.count)
    }
    selected.storage.count = range.count
    return selected
  }

  package var startIndex: Int { 0 }
  package var endIndex: Int { storage.count }
  package var capacity: Int { storage.capacity }

  @inline(__always)
  package subscript(index: Int) -> Element {
    get {
      precondition(index >= 0 && index < storage.count, "Column index out of range")
      return storage.base.unsafelyUnwrapped[index]
    }
    set {
      precondition(index >= 0 && index < storage.count, "Column index out of range")
      makeUnique()
      storage.base.unsafelyUnwrapped[index] = newValue
    }
  }

  @inline(__always)
  package mutating func append(_ element: Element) {
    makeUnique()
    if storage.count == storage.capacity { storage.grow() }
    (storage.base.unsafelyUnwrapped + storage.count).initialize(to: element)
    storage.count += 1
  }

  @discardableResult
  package mutating func removeLast() -> Element {
    precondition(storage.count > 0, "removeLast of an empty Column")
    makeUnique()
    storage.count -= 1
    return storage.base.unsafelyUnwrapped[storage.count]
  }

  /// Room for `n` elements in all, made at once (never less than what is held).
  package mutating func reserveCapacity(_ n: Int) {
    makeUnique()
    if n > storage.capacity { storage.resize(to: n) }
  }

  package func withUnsafeBufferPointer<T>(_ body: (UnsafeBufferPointer<Element>) throws -> T) rethrows -> T {
    try withExtendedLifetime(storage) { try body(UnsafeBufferPointer(start: $0.base, count: $0.count)) }
  }

  @inline(__always)
  private mutating func makeUnique() {
    if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
  }

  /// The elements, with the count and capacity they have room for. Freed with the last copy.
  private final class Storage {
    var base: UnsafeMutablePointer<Element>? = nil
    var count = 0
    var capacity = 0

    deinit { free(base) }

    /// Twice the room (out of line: the appends that need it are rare), and 256 KiB at first: a
    /// block that size comes as its own mapping, whose pages cost nothing until rows use them and
    /// which `realloc` moves without copying, where doubling from 16 copied the rows a dozen times.
    @inline(never)
    func grow() { resize(to: Swift.max((256 << 10) / MemoryLayout<Element>.stride, capacity * 2)) }

    /// Moves the elements to room for `capacity` (at least `count`) with `realloc`.
    func resize(to capacity: Int) {
      let (bytes, overflow) = capacity.multipliedReportingOverflow(by: MemoryLayout<Element>.stride)
      guard !overflow, let raw = realloc(base, Swift.max(bytes, 1)) else {
        fatalError("out of memory: a column of \(capacity) elements")  // as an Array that cannot grow
      }
      base = raw.bindMemory(to: Element.self, capacity: capacity)
      self.capacity = capacity
    }

    func copy() -> Storage {
      let copy = Storage()
      if capacity > 0 {
        copy.resize(to: capacity)
        copy.base.unsafelyUnwrapped.initialize(from: base.unsafelyUnwrapped, count: count)
      }
      copy.count = count
      return copy
    }
  }
}
