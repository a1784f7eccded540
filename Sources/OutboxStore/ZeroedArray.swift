import OutboxSupport

/// A fixed count of plain values that start as all-zero bytes, in memory from `calloc`: a big one
/// comes as fresh zero pages, with no pass that writes them (`Array(repeating:count:)` writes every
/// element; for the intern index, each doubling wrote the whole new table). `InternTable` keeps its
/// slots here, where an empty slot is all zeros.
///
/// A value with copy-on-write, as `Array` is: a copy shares the memory until either side changes.
struct ZeroedArray<Element: BitwiseCopyable> {
  private var storage: Storage

  /// `count` elements of all-zero bytes.
  init(count: Int) { storage = Storage(count: count) }

  var count: Int { storage.count }
  var indices: Range<Int> { 0..<storage.count }

  @inline(__always)
  subscript(index: Int) -> Element {
    get {
      precondition(index >= 0 && index < storage.count, "ZeroedArray index out of range")
      return storage.base[index]
    }
    set {
      precondition(index >= 0 && index < storage.count, "ZeroedArray index out of range")
      if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
      storage.base[index] = newValue
    }
  }

  /// The element at `index`, read without a bounds check: for an index already masked to the count.
  @inline(__always)
  subscript(unchecked index: Int) -> Element { storage.base[index] }

  /// The elements to change in place, made unique once (for loops that write many).
  mutating func withUnsafeMutableBufferPointer<T>(_ body: (UnsafeMutableBufferPointer<Element>) -> T) -> T {
    if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    return withExtendedLifetime(storage) { body(UnsafeMutableBufferPointer(start: $0.base, count: $0.count)) }
  }

  private final class Storage {
    let base: UnsafeMutablePointer<Element>
    let count: Int

    init(count: Int) {
      guard let raw = calloc(Swift.max(count, 1), MemoryLayout<Element>.stride) else {
        fatalError("out of memory: \(count) zeroed elements")  // as an Array that cannot be made
      }
      base = raw.bindMemory(to: Element.self, capacity: count)
      self.count = count
    }

    deinit { free(base) }

    func copy() -> Storage {
      let copy = Storage(count: count)
      copy.base.update(from: base, count: count)
      return copy
    }
  }
}
