import OutboxSupport

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
