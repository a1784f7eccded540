package import OutboxSupport

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
  public let base: UnsafePointer<UInt8>
  public let count: Int
  @usableFromInline let nodes: UnsafeMutablePointer<JSONNode>
  let nodeCount: Int
  /// True when some object held a key twice.
  package let sawDuplicateKey: Bool
  /// The nodes belong to a `TapeScratch`, not to this tape.
  private let borrowsNodes: Bool

  /// Reads one whole JSON text; trailing non-whitespace is an error.
  ///
  /// - Parameters:
  ///   - maxBatch: when the text is an array, the most members it may have.
  ///   - scratch: node memory to reuse instead of allocating it. The tape is then valid only until
  ///     the next read with the same scratch (the hot save reads every line into one).
  package init(
    _ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = 128, maxBatch: Int = .max, scratch: TapeScratch? = nil
  ) throws(JSONParseError) {
    var builder = TapeBuilder(bytes, maxDepth: maxDepth, maxBatch: maxBatch, reusing: scratch?.take())
    do {
      try builder.document()
    } catch {
      if scratch?.keep(builder.nodes, builder.capacity) != true { builder.nodes.deallocate() }
      throw error
    }
    base = builder.base
    count = builder.count
    nodes = builder.nodes
    nodeCount = builder.nodeCount
    sawDuplicateKey = builder.sawDuplicateKey
    borrowsNodes = scratch?.keep(builder.nodes, builder.capacity) == true
  }

  deinit { if !borrowsNodes { nodes.deallocate() } }

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

/// Node memory kept from one tape read to the next, so a loop reading one line after another
/// allocates it once. Not thread-safe: one reader at a time.
package final class TapeScratch {
  private var nodes: UnsafeMutablePointer<JSONNode>? = nil
  private var capacity = 0

  package init() {}

  deinit { nodes?.deallocate() }

  /// The memory, now owned by the caller until it hands it back with `keep`.
  func take() -> (UnsafeMutablePointer<JSONNode>, Int)? {
    defer { nodes = nil }
    return nodes.map { ($0, capacity) }
  }

  /// Takes the memory back and returns true; memory grown past `keptCapacity` nodes by one big text
  /// stays the caller's (false).
  func keep(_ nodes: UnsafeMutablePointer<JSONNode>, _ capacity: Int) -> Bool {
    self.nodes?.deallocate()
    self.nodes = nil
    guard capacity <= Self.keptCapacity else { return false }
    self.nodes = nodes
    self.capacity = capacity
    return true
  }

  static let keptCapacity = 4096
}
