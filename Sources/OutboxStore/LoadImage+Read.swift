import OutboxSupport

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
