/// One buffer reused to read many files in turn (recovery reads every segment through it), so the
/// memory is allocated and faulted in once, not once per file.
package final class ReadBuffer {
  private var memory: UnsafeMutableRawPointer? = nil
  private var capacity = 0

  package init() {}

  deinit { memory?.deallocate() }

  /// Reads a whole regular file (never through a symlink), or its first `limit` bytes, and calls
  /// `body` with its bytes, which are valid only during the call. A missing file is nil.
  package func read<T>(
    _ path: String, limit: Int = .max, _ body: (UnsafeRawBufferPointer) -> T
  ) throws(FileError) -> T? {
    try load(path, limit: limit).map(body)
  }

  /// Reads a whole regular file (never through a symlink), or its first `limit` bytes, into the
  /// buffer: its bytes, valid until the next load. A missing file is nil. A file read whole leaves
  /// the page cache (a store's segments are read once, at start).
  package func load(_ path: String, limit: Int = .max) throws(FileError) -> UnsafeRawBufferPointer? {
    guard let fd = try FileIO.openRegular(path) else { return nil }
    defer { close(fd) }
    var info = stat()
    _ = fstat(fd, &info)
    var filled = 0
    reserve(min(max(0, Int(info.st_size)) + 1, max(1, limit)))
    while true {
      let n = posixRead(fd, memory! + filled, min(capacity, limit) - filled)
      if n > 0 {
        filled += n
        if filled == limit { return UnsafeRawBufferPointer(start: memory, count: filled) }
        if filled == capacity { reserve(capacity * 2, keeping: filled) }  // the file grew while being read
      } else if n == 0 {
        FileIO.dropCache(fd)
        return UnsafeRawBufferPointer(start: memory, count: filled)
      } else if errno != EINTR {
        throw FileError(operation: "read", path: path, code: errno)
      }
    }
  }

  private func reserve(_ size: Int, keeping kept: Int = 0) {
    guard size > capacity else { return }
    let grown = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    if let memory, kept > 0 { grown.copyMemory(from: memory, byteCount: kept) }
    memory?.deallocate()
    memory = grown
    capacity = size
  }
}
