#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One buffer reused to read many files in turn (recovery reads every segment through it), so the
/// memory is allocated and faulted in once, not once per file.
package final class ReadBuffer {
  private var memory: UnsafeMutableRawPointer? = nil
  private var capacity = 0

  package init() {}

  deinit { memory?.deallocate() }

  /// Reads a whole regular file (never through a symlink) and calls `body` with its bytes, which are
  /// valid only during the call. A missing file is nil.
  package func read<T>(_ path: String, _ body: (UnsafeRawBufferPointer) -> T) throws(FileError) -> T? {
    try load(path).map(body)
  }

  /// Reads a whole regular file (never through a symlink) into the buffer: its bytes, valid until
  /// the next load. A missing file is nil.
  package func load(_ path: String) throws(FileError) -> UnsafeRawBufferPointer? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    if fd < 0 {
      if errno == ENOENT { return nil }
      throw FileError(operation: "open", path: path, code: errno)
    }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
      throw FileError(operation: "open (not a regular file)", path: path, code: EINVAL)
    }
    var filled = 0
    reserve(max(0, Int(info.st_size)) + 1)
    while true {
      let n = posixRead(fd, memory! + filled, capacity - filled)
      if n > 0 {
        filled += n
        if filled == capacity { reserve(capacity * 2, keeping: filled) }  // the file grew while being read
      } else if n == 0 {
        FileIO.dropCache(fd)  // read whole into memory: its cache pages can go back (a store's segments)
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
