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
  private let path: String
  private var buffer: [UInt8] = []
  private var crc: UInt32 = 0

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

// MARK: - Input

/// The image file, read a few MiB at a time and checksummed as it is read.
final class ImageInput {
  private let fd: Int32
  private var memory: UnsafeMutableRawPointer
  private var capacity = 4 << 20
  private var start = 0
  private var end = 0
  /// File bytes not read yet, and how many of those the checksum covers (all but the trailer).
  private var unread: Int
  private var unsummed: Int
  private var crc: UInt32 = 0

  /// nil when there is no image (or no regular file by its name).
  init?(path: String) {
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    guard fd >= 0 else { return nil }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
      close(fd)
      return nil
    }
    unread = Int(info.st_size)
    unsummed = max(0, unread - LoadImage.trailerSize)
    memory = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
  }

  deinit {
    close(fd)
    memory.deallocate()
  }

  /// The next `count` bytes, valid until the next read.
  func bytes(_ count: Int) throws(LoadImage.Refusal) -> UnsafeRawBufferPointer {
    if end - start < count { try fill(count) }
    defer { start += count }
    return UnsafeRawBufferPointer(start: memory + start, count: count)
  }

  /// A little-endian unsigned integer of `size` bytes.
  func int(_ size: Int = 8) throws(LoadImage.Refusal) -> UInt64 {
    let bytes = try bytes(size)
    var value: UInt64 = 0
    for byte in bytes.reversed() { value = value << 8 | UInt64(byte) }
    return value
  }

  /// A count of things of at least `perItem` bytes each, which the rest of the file can hold.
  func count(perItem: Int) throws(LoadImage.Refusal) -> Int {
    let value = try int()
    guard value <= UInt64(unread + end - start) / UInt64(perItem) else { throw .damaged("a count past its end") }
    return Int(value)
  }

  /// A size or count kept for the store's bookkeeping.
  func count() throws(LoadImage.Refusal) -> Int {
    let value = try int()
    guard value < 1 << 48 else { throw .damaged("a count out of range") }
    return Int(value)
  }

  /// The trailer: the checksum of everything before it, then the end mark, then nothing.
  func finish() throws(LoadImage.Refusal) {
    let trailer = try bytes(LoadImage.trailerSize)
    guard unread == 0, start == end, unsummed == 0,
      trailer.loadUnaligned(as: UInt32.self).littleEndian == crc, trailer[4...].elementsEqual(LoadImage.endMagic)
    else { throw .damaged("its checksum does not match") }
  }

  private func fill(_ count: Int) throws(LoadImage.Refusal) {
    let kept = end - start
    guard count - kept <= unread else { throw .damaged("it ends early") }
    if count > capacity {
      let grown = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
      grown.copyMemory(from: memory + start, byteCount: kept)
      memory.deallocate()
      (memory, capacity) = (grown, count)
    } else if kept > 0 {
      memmove(memory, memory + start, kept)
    }
    (start, end) = (0, kept)
    while end < count {
      let n = read(fd, memory + end, min(capacity - end, unread))
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { throw .damaged("unreadable (\(n < 0 ? String(cString: strerror(errno)) : "short"))") }
      let summed = min(n, unsummed)
      crc = CRC32C.checksum(UnsafeRawBufferPointer(start: memory + end, count: summed), continuing: crc)
      (unsummed, unread, end) = (unsummed - summed, unread - n, end + n)
    }
  }
}

// MARK: - Read

/// What a load image held, checked and rebuilt, for `HeldItems.install`.
struct LoadedImage {
  var table = ItemTable()
  let arena = Arena()
  var bodies = StoredBody()
  var nextSeq: UInt64 = 1
  var bytes = 0
  var counts = [Int](repeating: 0, count: ItemKind.allCases.count)
  var deadCount = 0
  var deadReasons: [UInt64: String] = [:]
  var clientIDs: [ByteKey: UInt64] = [:]
  var segments: [SegmentInfo] = []
}

extension LoadImage {
  /// Why an image was not used: it does not describe these files, or it is not intact.
  enum Refusal: Error {
    case stale(String)
    case damaged(String)
  }

  /// Reads the image in `directory` if it describes exactly these files: `checkpoint` (its bytes,
  /// decoded as `decoded`) and the segments of these first seqs, in order, as large as they are now.
  /// nil when there is none (the segments are then not looked at).
  static func read(
    directory: String, checkpoint: [UInt8], decoded: Checkpoint, segments firsts: [UInt64], identity: [UInt8]
  ) throws(Refusal) -> LoadedImage? {
    guard let input = ImageInput(path: directory + "/" + fileName) else { return nil }
    let files = firsts.map { (first: $0, bytes: FileIO.size(directory + "/" + SegmentFormat.name(first: $0))) }
    var reader = ImageReader(input: input, directory: directory)
    let image = try reader.header(checkpoint: checkpoint, decoded: decoded, files: files, identity: identity)
    return try reader.body(image, decoded: decoded)
  }
}

/// The checks and rebuilding, section by section (the layout is in `LoadImage`).
private struct ImageReader {
  let input: ImageInput
  let directory: String
  var rows = 0
  var reasons = 0

  mutating func header(
    checkpoint: [UInt8], decoded: Checkpoint, files: [(first: UInt64, bytes: Int)], identity: [UInt8]
  ) throws(LoadImage.Refusal) -> LoadedImage {
    guard try input.bytes(8).elementsEqual(LoadImage.magic), try input.int(4) == UInt64(LoadImage.version),
      try input.int(4) == 0
    else { throw .stale("not a load image of this version") }
    guard try input.bytes(StoreIdentity.byteCount).elementsEqual(identity) else {
      throw .stale("written by another store (\(StoreIdentity.fileName))")
    }
    guard try input.int() == UInt64(checkpoint.count), try input.int(4) == UInt64(CRC32C.checksum(checkpoint)),
      try input.int(4) == 0
    else { throw .stale("written beside another checkpoint") }
    var image = LoadedImage()
    image.nextSeq = try input.int()
    rows = try input.count(perItem: LoadImage.rowHeaderSize)
    let segments = try input.count(perItem: LoadImage.segmentEntrySize)
    reasons = try input.count(perItem: 12)
    guard image.nextSeq == decoded.nextSeq, decoded.coversSeq &+ 1 == decoded.nextSeq, segments == files.count else {
      throw .stale("the checkpoint or the segments changed since it was written")
    }
    for file in files {
      var info = SegmentInfo(first: try input.int(), bytes: try input.count(), items: try input.count())
      (info.dead, info.changed, info.otherBytes) = (try input.count(), try input.count(), try input.count())
      let damaged = try input.int()
      let tail = try input.int()
      guard info.first == file.first, info.bytes == file.bytes, damaged <= 1, tail == tailChecksum(file) else {
        throw .stale("segment \(SegmentFormat.name(first: file.first)) changed since it was written")
      }
      info.damaged = damaged == 1
      image.segments.append(info)
    }
    return image
  }

  /// The segment's tail checksum now (never a checksum's value when it cannot be read).
  private func tailChecksum(_ file: (first: UInt64, bytes: Int)) -> UInt64 {
    let path = directory + "/" + SegmentFormat.name(first: file.first)
    return (try? LoadImage.tailChecksum(path, bytes: file.bytes)).map(UInt64.init) ?? .max
  }

  mutating func body(_ start: LoadedImage, decoded: Checkpoint) throws(LoadImage.Refusal) -> LoadedImage {
    var image = start
    for _ in 0..<reasons {
      let seq = try input.int()
      let length = Int(try input.int(4))
      guard length <= SegmentFormat.maxReasonBytes,
        let reason = String(validating: try input.bytes(length), as: UTF8.self)
      else { throw .damaged("a dead letter's reason is not text") }
      image.deadReasons[seq] = reason
    }
    var users = try intern()
    var labels = try intern()
    var userUses = [UInt32](repeating: 0, count: users.table.numbers)
    var labelUses = [UInt32](repeating: 0, count: labels.table.numbers)
    image.table.reserve(rows)
    var userRun: [UInt32] = []
    userRun.reserveCapacity(Self.run)
    var last: UInt64 = 0
    for _ in 0..<rows {
      let header = try input.bytes(LoadImage.rowHeaderSize)
      let seq = header.loadUnaligned(as: UInt64.self).littleEndian
      let savedAt = Int64(littleEndian: header.loadUnaligned(fromByteOffset: 8, as: Int64.self))
      let deliveries = header.loadUnaligned(fromByteOffset: 16, as: UInt32.self).littleEndian
      let length = Int(header.loadUnaligned(fromByteOffset: 20, as: UInt32.self).littleEndian)
      let idLength = Int(header[24])
      let flags = header[25]
      guard seq > last, seq < image.nextSeq, let kind = ItemKind(rawValue: flags & ItemTable.Flags.kindMask),
        flags & ItemTable.Flags.removed.rawValue == 0,
        (flags & ItemTable.Flags.clientID.rawValue != 0) == (idLength > 0), UTCTime.isRepresentable(savedAt)
      else { throw .damaged("row \(image.table.seqs.count): a seq out of order or flags no row has") }
      last = seq
      let bytes = try input.bytes(idLength + length)
      let record = UnsafeRawBufferPointer(rebasing: bytes[idLength...])
      guard let reader = StoredBody.Reader.checked(record) else { throw .damaged("seq \(seq): a record header") }
      // The entries' own bytes are counted once the uses are known (one pass, not a lookup a row).
      let body = record.count - reader.offset + (reader.header.contains(.time) ? StoredBody.timeMemberLength : 0)
      if let entry = reader.user {
        guard entry < userUses.count else { throw .damaged("seq \(seq): no such user entry") }
        userRun.append(entry)
        if userRun.count == Self.run { count(&userRun, into: &userUses) }
      }
      if let entry = reader.label {
        guard entry < labelUses.count else { throw .damaged("seq \(seq): no such label entry") }
        labelUses[Int(entry)] += 1
      }
      let location = image.arena.append(bytes, UnsafeRawBufferPointer(start: nil, count: 0))
      let extra = ItemTable.Flags(rawValue: flags & LoadImage.keptFlags.rawValue)
      image.table.append(
        seq: seq, savedAt: savedAt, location: location, length: length, clientIDLength: idLength, kind: kind,
        flags: extra, deliveries: deliveries)
      image.bytes += PendingItem.byteCount(body: body, clientID: idLength)
      if extra.contains(.dead) { image.deadCount += 1 } else { image.counts[Int(kind.rawValue)] += 1 }
      if idLength > 0 { image.clientIDs[ByteKey(Array(bytes[0..<idLength]))] = seq }
    }
    count(&userRun, into: &userUses)
    try input.finish()
    image.bytes += try users.bytes(uses: userUses) + labels.bytes(uses: labelUses)
    try check(image, decoded)
    users.table.finishRestoring(uses: userUses)
    labels.table.finishRestoring(uses: labelUses)
    image.bodies = StoredBody(users: users.table, labels: labels.table)
    return image
  }

  /// User entries counted at once: with many users each count is a cache miss, and a run of them in
  /// a loop of their own overlap (in the row loop, about one at a time did).
  static let run = 256

  private func count(_ run: inout [UInt32], into uses: inout [UInt32]) {
    for entry in run { uses[Int(entry)] += 1 }
    run.removeAll(keepingCapacity: true)
  }

  /// An intern table's entries, by number, with which are in use.
  private mutating func intern() throws(LoadImage.Refusal) -> RestoredTable {
    let numbers = try input.count(perItem: 2)
    guard numbers <= InternTable.maxEntries else { throw .damaged("an intern table over its limit") }
    var table = InternTable()
    var held = [Bool](repeating: false, count: numbers)
    for number in 0..<numbers {
      let used = try input.int(1)
      let length = Int(try input.int(1))
      guard used <= 1, used == 1 || length == 0 else { throw .damaged("intern entry \(number)") }
      let bytes = used == 1 ? try input.bytes(length) : nil
      guard table.restore(bytes) else { throw .damaged("an intern table over its limit") }
      held[number] = used == 1
    }
    return RestoredTable(table: table, held: held)
  }

  /// What the checkpoint counted must be what the image holds, and each dead letter's reason a
  /// dead letter's.
  private func check(_ image: LoadedImage, _ decoded: Checkpoint) throws(LoadImage.Refusal) {
    let table = image.table
    guard image.counts.reduce(0, +) == decoded.items else {
      throw .stale("it holds \(image.counts.reduce(0, +)) pending items; the checkpoint counts \(decoded.items)")
    }
    for seq in image.deadReasons.keys {
      guard let row = table.row(of: seq), table.has(.dead, row) else { throw .damaged("a reason for no dead letter") }
    }
    guard let held = decoded.held else { return }
    for (n, first) in decoded.segments.enumerated() where n < held.count {
      let next = n + 1 < decoded.segments.count ? table.lowerBound(decoded.segments[n + 1]) : table.seqs.count
      let items = image.segments.first { $0.first == first }?.items ?? -1
      guard next - table.lowerBound(first) == held[n], items >= held[n] else {
        throw .stale("segment \(SegmentFormat.name(first: first)): the checkpoint counts another number of rows")
      }
    }
  }
}

/// An intern table rebuilt from an image, with the numbers that hold an entry.
private struct RestoredTable {
  var table = InternTable()
  var held: [Bool] = []

  /// The bytes the rows hold of the entries, with these uses; a use of a free number is damage.
  func bytes(uses: [UInt32]) throws(LoadImage.Refusal) -> Int {
    var total = 0
    for (number, count) in uses.enumerated() where count > 0 {
      guard held[number] else { throw .damaged("a row names intern entry \(number), which is free") }
      total += Int(count) * table.length(UInt32(number))
    }
    return total
  }
}
