import OutboxSupport

/// `load.image`: the held items as memory holds them, written at a clean exit of a large store so
/// that the next start reads them in one pass instead of replaying every segment.
///
/// It is a cache of the segments, never the truth. It names its store (`StoreIdentity`, `store.id`),
/// the checkpoint it was written after (its length and checksum) and every segment with its size and
/// the CRC-32C of its last 64 KiB (`tailBytes`: its last records with their own CRCs); a start uses
/// it only beside that identity and when the files are exactly those, and deletes it either way
/// before anything is written, so it is read at most once. An image from another store (a twin with
/// the same checkpoint and sizes) or from before the binding (version 1) is not used, and the next
/// clean exit writes a new one.
/// A checksum covers it whole. Nothing in it is trusted: entry numbers, record headers, seq order,
/// kinds and lengths are checked as it is read, and counts, uses, client ids and the `leased` and
/// `verified` flags are rebuilt, not read. Any doubt and the start replays the segments as always.
///
///     "POLOADIM" u32 version, u32 0, 16 bytes store identity, u64 checkpoint length,
///     u32 checkpoint crc32c, u32 0, u64 nextSeq, u64 rows, u64 segments, u64 dead reasons
///     per segment: u64 first, bytes, items, dead, changed, otherBytes, damaged (0 or 1), tail crc32c
///     per dead reason: u64 seq, u32 length, its bytes
///     the user table, then the label table: u64 numbers, per number: u8 0 (free) or 1, u8 length, bytes
///     per row, in seq order: u64 seq, i64 savedAt, u32 deliveries, u32 length, u8 client id length,
///       u8 flags, then the client id and the record (`StoredBody`)
///     u32 crc32c of everything before, "POIMGEND"
///
/// All integers are little-endian.
enum LoadImage {
  static let fileName = "load.image"
  static let magic = Array("POLOADIM".utf8)
  static let endMagic = Array("POIMGEND".utf8)
  static let version: UInt32 = 2
  /// The bytes at a segment's end its recorded checksum covers (`tailChecksum`).
  static let tailBytes = 64 << 10
  /// A segment's entry in the header.
  static let segmentEntrySize = 64
  static let trailerSize = 12
  static let rowHeaderSize = 26
  /// Flags a row keeps from the image; `leased` comes from the checkpoint's leases and `verified`
  /// from checking the body again (`HeldItems.wellFormed`), as after a replay.
  static let keptFlags: ItemTable.Flags = [.hasUser, .clientID, .dead]

  /// The image's size for these items, about (the threshold of `FileOptions.loadImageMinBytes`).
  static func estimatedBytes(_ store: HeldItems) -> Int {
    store.table.seqs.count * rowHeaderSize + store.arena.liveBytes
  }

  /// Writes the image of `store` beside `checkpoint` (the bytes of the checkpoint file the
  /// segments were last described by), through a temporary file and a rename. No fsync: an image a
  /// crash tore fails its checksum, and the segments are replayed.
  static func write(
    _ store: HeldItems, segments: [SegmentInfo], checkpoint: [UInt8], identity: [UInt8], directory: String
  ) throws(FileError) {
    let path = directory + "/" + fileName
    let (fd, temp) = try FileIO.createTemporary(beside: path)
    var out = ImageOutput(fd: fd, path: temp)
    do throws(FileError) {
      let tails = try segments.map { (info) throws(FileError) in
        try tailChecksum(directory + "/" + SegmentFormat.name(first: info.first), bytes: info.bytes)
      }
      try writeBody(
        store, segments: zip(segments, tails).map { $0 }, checkpoint: checkpoint, identity: identity, to: &out)
      close(out.fd)
    } catch {
      close(out.fd)
      unlink(temp)
      throw error
    }
    if rename(temp, path) != 0 {
      let code = errno
      unlink(temp)
      throw FileError(operation: "rename", path: temp, code: code)
    }
  }

  private static func writeBody(
    _ store: HeldItems, segments: [(SegmentInfo, UInt32)], checkpoint: [UInt8], identity: [UInt8],
    to out: inout ImageOutput
  ) throws(FileError) {
    let table = store.table
    out.bytes(magic)
    out.int(UInt64(version), size: 4)
    out.int(0, size: 4)
    out.bytes(identity)
    out.int(UInt64(checkpoint.count))
    out.int(UInt64(CRC32C.checksum(checkpoint)), size: 4)
    out.int(0, size: 4)
    for value in [store.nextSeq, UInt64(table.liveCount), UInt64(segments.count), UInt64(store.deadReasons.count)] {
      out.int(value)
    }
    for (info, tail) in segments {
      for value in [info.first, UInt64(info.bytes), UInt64(info.items), UInt64(info.dead), UInt64(info.changed)] {
        out.int(value)
      }
      out.int(UInt64(info.otherBytes))
      out.int(info.damaged ? 1 : 0)
      out.int(UInt64(tail))
    }
    for (seq, reason) in store.deadReasons.sorted(by: { $0.key < $1.key }) {
      out.int(seq)
      out.int(UInt64(reason.utf8.count), size: 4)
      out.bytes(Array(reason.utf8))
    }
    for intern in [store.bodies.users, store.bodies.labels] {
      out.int(UInt64(intern.numbers))
      try intern.forEachEntry { (bytes) throws(FileError) in
        out.int(bytes == nil ? 0 : 1, size: 1)
        out.int(UInt64(bytes?.count ?? 0), size: 1)
        if let bytes { out.bytes(bytes) }
        try out.flushIfFull()
      }
    }
    for row in table.rows where !table.has(.removed, row) {
      out.int(table.seqs[row])
      out.int(UInt64(bitPattern: table.savedAt[row]))
      out.int(UInt64(table.deliveries[row]), size: 4)
      out.int(UInt64(table.lengths[row]), size: 4)
      out.int(UInt64(table.idLengths[row]), size: 1)
      out.int(UInt64(table.flags[row]), size: 1)
      out.bytes(
        store.arena.bytes(at: table.locations[row], length: Int(table.idLengths[row]) + Int(table.lengths[row])))
      try out.flushIfFull()
    }
    try out.finish()
  }
}

extension LoadImage {
  /// The CRC-32C of the last `tailBytes` of the segment's first `bytes` bytes (all of them when it is
  /// smaller): what binds an image to the segments' contents, not only their sizes, read in one
  /// `pread` per segment. Opened without following a symlink or blocking on a FIFO.
  static func tailChecksum(_ path: String, bytes: Int) throws(FileError) -> UInt32 {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    guard fd >= 0 else { throw FileError(operation: "open", path: path, code: errno) }
    defer { close(fd) }
    let count = min(max(0, bytes), tailBytes)
    var tail = [UInt8](repeating: 0, count: count)
    var done = 0
    while done < count {
      let n = tail.withUnsafeMutableBytes {
        pread(fd, $0.baseAddress! + done, count - done, off_t(bytes - count + done))
      }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { throw FileError(operation: "read", path: path, code: n < 0 ? errno : EIO) }
      done += n
    }
    return CRC32C.checksum(tail)
  }
}

/// The image being written: a buffer flushed to the file every few MiB, and the checksum so far.
private struct ImageOutput {
  let fd: Int32
  let path: String
  var buffer: [UInt8] = []
  var crc: UInt32 = 0

  init(fd: Int32, path: String) {
    self.fd = fd
    self.path = path
    buffer.reserveCapacity(Self.flushAt + (1 << 16))
  }

  static let flushAt = 4 << 20

  mutating func int(_ value: UInt64, size: Int = 8) {
    withUnsafeBytes(of: value.littleEndian) { buffer.appendBytes(UnsafeRawBufferPointer(rebasing: $0.prefix(size))) }
  }

  mutating func bytes(_ bytes: [UInt8]) { buffer.append(contentsOf: bytes) }
  mutating func bytes(_ bytes: UnsafeRawBufferPointer) { buffer.appendBytes(bytes) }

  mutating func flushIfFull() throws(FileError) {
    if buffer.count >= Self.flushAt { try flush() }
  }

  private mutating func flush() throws(FileError) {
    crc = CRC32C.checksum(buffer, continuing: crc)
    try FileIO.writeAll(fd, buffer, path: path)
    buffer.removeAll(keepingCapacity: true)
  }

  mutating func finish() throws(FileError) {
    try flush()
    int(UInt64(crc), size: 4)
    bytes(LoadImage.endMagic)
    try FileIO.writeAll(fd, buffer, path: path)
    buffer.removeAll()
  }
}
