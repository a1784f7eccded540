/// One JSON value of a tape: where its text sits in the input, and how to step over it.
///
/// The kind is the value's first byte (`{`, `[`, `"`, `t`, `f`, `n`, or a number). 12 bytes.
public struct JSONNode: Sendable {
  /// Offset of the first byte: the opening quote, brace or bracket, or the first character.
  public var start: UInt32
  /// Offset just past the last byte: past the closing quote, brace or bracket.
  public var end: UInt32
  /// Strings: `JSONNode.escaped`, `.lineSeparator`. Containers: the index of the node after the
  /// whole subtree (bits 0–29), plus `.duplicateKey` and `.nonCanonical`.
  public var aux: UInt32

  /// A string with at least one `\` escape.
  @usableFromInline static let escaped: UInt32 = 1
  /// A string holding U+2028 or U+2029 raw (the writer escapes them).
  @usableFromInline static let lineSeparator: UInt32 = 2
  /// An object with a key that appears more than once (by code points, not by canonical equivalence).
  @usableFromInline static let duplicateKey: UInt32 = 1 << 30
  /// A container whose text is not what `JSONWriter` would write: whitespace, or an escaped string inside.
  @usableFromInline static let nonCanonical: UInt32 = 1 << 31
  @usableFromInline static let skipMask: UInt32 = (1 << 30) - 1
}

/// A JSON text read in one pass into a flat list of nodes in document order ("ordered pairs":
/// an object node is followed by key, value, key, value…), validated completely and pointing into
/// the input bytes instead of copying them.
///
/// Nothing is decoded while reading: strings are validated (UTF-8, escapes, surrogate pairs) and
/// flagged, numbers checked against the grammar. Callers compare keys as bytes, copy canonical
/// text as it is, and build `JSONValue`s only where they need one.
///
/// Memory: one 12-byte node per value, and every value but the first takes at least 2 input
/// bytes with its separator, so the nodes take at most 6 bytes per input byte (`[0,0,…]`),
/// plus small per-object tables for duplicate checks of objects over 16 members (4 bytes per
/// slot, at most 2 slots per member). A top-level array longer than `maxBatch` stops the
/// read early (`JSONParseError.batchLimit`).
///
/// The tape borrows the input: use it only while the bytes it was read from are alive. For that
/// reason it is not `Sendable`: nothing ties those bytes' lifetime to another thread.
public final class JSONTape {
  public private(set) var base: UnsafePointer<UInt8>
  public private(set) var count: Int
  @usableFromInline private(set) var nodes: UnsafeMutablePointer<JSONNode>
  private(set) var nodeCount: Int
  /// True when some object held a key twice.
  package private(set) var sawDuplicateKey: Bool
  /// The nodes `nodes` has room for (this tape owns them).
  private var capacity: Int

  /// Reads one whole JSON text; trailing non-whitespace is an error.
  ///
  /// - Parameter maxBatch: when the text is an array, the most members it may have.
  package init(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = 128, maxBatch: Int = .max) throws(JSONParseError) {
    var builder = TapeBuilder(bytes, maxDepth: maxDepth, maxBatch: maxBatch)
    do {
      try builder.document()
    } catch {
      builder.nodes.deallocate()
      throw error
    }
    base = builder.base
    count = builder.count
    nodes = builder.nodes
    nodeCount = builder.nodeCount
    sawDuplicateKey = builder.sawDuplicateKey
    capacity = builder.capacity
  }

  deinit { nodes.deallocate() }

  /// Reads one whole JSON text into the tape `scratch` keeps, reusing the object and its node
  /// memory when nothing else holds it (the hot save reads every line into one, allocating
  /// nothing). The tape is valid until the next read with the same scratch.
  package static func read(
    _ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = 128, maxBatch: Int = .max, scratch: TapeScratch
  ) throws(JSONParseError) -> JSONTape {
    guard isKnownUniquelyReferenced(&scratch.tape), let tape = scratch.tape else {
      let tape = try JSONTape(bytes, maxDepth: maxDepth, maxBatch: maxBatch)
      scratch.tape = tape
      return tape
    }
    try tape.reread(bytes, maxDepth: maxDepth, maxBatch: maxBatch)
    return tape
  }

  /// Reads `bytes` into this tape's node memory. After a failure the tape holds no nodes.
  private func reread(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxBatch: Int) throws(JSONParseError) {
    shrink()
    var builder = TapeBuilder(bytes, maxDepth: maxDepth, maxBatch: maxBatch, reusing: (nodes, capacity))
    var failure: JSONParseError? = nil
    do throws(JSONParseError) { try builder.document() } catch { failure = error }
    nodes = builder.nodes  // grown, perhaps
    capacity = builder.capacity
    base = builder.base
    count = builder.count
    nodeCount = failure == nil ? builder.nodeCount : 0
    sawDuplicateKey = builder.sawDuplicateKey
    if let failure { throw failure }
  }

  /// Gives back node memory past `TapeScratch.keptCapacity`; the tape then holds no nodes.
  fileprivate func shrink() {
    guard capacity > TapeScratch.keptCapacity else { return }
    nodes.deallocate()
    capacity = 64
    nodes = .allocate(capacity: capacity)
    nodeCount = 0
  }

  /// The root value.
  package var root: Int { 0 }

  @inline(__always) package subscript(_ n: Int) -> JSONNode { nodes[n] }

  /// The first byte of node `n`, which tells its kind.
  @inlinable @inline(__always) public func lead(_ n: Int) -> UInt8 { base[Int(nodes[n].start)] }

  @inlinable @inline(__always) public func isObject(_ n: Int) -> Bool { lead(n) == UInt8(ascii: "{") }
  @inlinable @inline(__always) public func isArray(_ n: Int) -> Bool { lead(n) == UInt8(ascii: "[") }
  @inlinable @inline(__always) public func isString(_ n: Int) -> Bool { lead(n) == UInt8(ascii: "\"") }
  @inlinable @inline(__always) public func isNull(_ n: Int) -> Bool { lead(n) == UInt8(ascii: "n") }

  /// The index just past node `n` and everything inside it.
  @inlinable @inline(__always) public func next(_ n: Int) -> Int {
    let node = nodes[n]
    let b = base[Int(node.start)]
    if b == UInt8(ascii: "{") || b == UInt8(ascii: "[") { return Int(node.aux & JSONNode.skipMask) }
    return n + 1
  }

  /// The exact input text of node `n`.
  @inlinable @inline(__always) public func text(_ n: Int) -> UnsafeBufferPointer<UInt8> {
    let node = nodes[n]
    return UnsafeBufferPointer(start: base + Int(node.start), count: Int(node.end &- node.start))
  }

  /// The raw bytes between the quotes of string node `n` (decoded only when it has no escapes).
  @inlinable @inline(__always) public func rawContents(_ n: Int) -> UnsafeBufferPointer<UInt8> {
    let node = nodes[n]
    return UnsafeBufferPointer(start: base + Int(node.start) + 1, count: Int(node.end &- node.start) - 2)
  }

  @inlinable @inline(__always) public func isEscaped(_ n: Int) -> Bool { nodes[n].aux & JSONNode.escaped != 0 }

  /// True when the text of node `n` is exactly what `JSONWriter` writes for its value.
  package func isCanonical(_ n: Int) -> Bool {
    let node = nodes[n]
    switch base[Int(node.start)] {
    case UInt8(ascii: "\""): return node.aux == 0
    case UInt8(ascii: "{"), UInt8(ascii: "["): return node.aux & JSONNode.nonCanonical == 0
    default: return true
    }
  }

  /// True for an object node that holds a key twice.
  @inlinable @inline(__always) public func hasDuplicateKey(_ n: Int) -> Bool {
    isObject(n) && nodes[n].aux & JSONNode.duplicateKey != 0
  }

  /// The members of object `n`: (key node, value node) pairs in order. Also the elements of an
  /// array when used with `elements`.
  @inlinable public func members(_ n: Int) -> MemberSequence {
    MemberSequence(tape: self, index: n + 1, end: next(n), pairs: true)
  }

  @inlinable public func elements(_ n: Int) -> MemberSequence {
    MemberSequence(tape: self, index: n + 1, end: next(n), pairs: false)
  }

  /// The number of members or elements of container `n`.
  package func childCount(_ n: Int) -> Int {
    var k = 0
    var i = n + 1
    let end = next(n)
    let pairs = isObject(n)
    while i < end {
      i = pairs ? next(i + 1) : next(i)
      k += 1
    }
    return k
  }

  /// Iterates over a container's children without allocating.
  public struct MemberSequence: Sequence, IteratorProtocol {
    /// Iteration happens while the caller holds the tape; no reference counting per loop.
    @usableFromInline unowned(unsafe) let tape: JSONTape
    @usableFromInline var index: Int
    @usableFromInline let end: Int
    @usableFromInline let pairs: Bool

    @usableFromInline init(tape: JSONTape, index: Int, end: Int, pairs: Bool) {
      self.tape = tape
      self.index = index
      self.end = end
      self.pairs = pairs
    }

    /// `(key, value)` for objects; `(value, value)` for arrays.
    @inlinable public mutating func next() -> (key: Int, value: Int)? {
      guard index < end else { return nil }
      let key = index
      let value = pairs ? index + 1 : index
      index = tape.next(value)
      return (key, value)
    }
  }
}

/// A tape kept from one read to the next (`JSONTape.read(_:maxDepth:maxBatch:scratch:)`), so a loop
/// reading one line after another allocates neither the tape nor its nodes. Not thread-safe: one
/// reader at a time.
package final class TapeScratch {
  fileprivate var tape: JSONTape? = nil

  package init() {}

  /// The most nodes a kept tape holds on to between reads.
  static let keptCapacity = 4096

  /// Lets go of node memory one big text grew past `keptCapacity`: call once done with the tape, so
  /// what a hostile line took is not held while the next thing is read.
  package func trim() { tape?.shrink() }
}
