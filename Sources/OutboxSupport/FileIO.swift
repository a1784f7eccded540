/// A failed file operation: what was tried, on which path, and the errno.
package struct FileError: Error, Sendable, Equatable, CustomStringConvertible {
  package var operation: String
  package var path: String
  package var code: Int32

  package init(operation: String, path: String, code: Int32) {
    self.operation = operation
    self.path = path
    self.code = code
  }

  package var description: String { "\(operation) \(path): \(errnoText(code))" }
}

/// Thin POSIX file helpers. Every function retries EINTR and reports errno.
package enum FileIO {
  /// Reads a whole file, or its first `limit` bytes, or returns nil if it does not exist (through
  /// `ReadBuffer`, the one reading loop).
  package static func read(_ path: String, limit: Int = .max) throws(FileError) -> [UInt8]? {
    try ReadBuffer().read(path, limit: limit) { Array($0) }
  }

  /// Opens a file for reading when it is a regular file, never through a symlink, and nil when it
  /// does not exist. O_NONBLOCK: a FIFO planted in the store must not block the open; it is refused.
  package static func openRegular(_ path: String) throws(FileError) -> Int32? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    if fd < 0 {
      if errno == ENOENT { return nil }
      throw FileError(operation: "open", path: path, code: errno)
    }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
      close(fd)
      throw FileError(operation: "open (not a regular file)", path: path, code: EINVAL)
    }
    return fd
  }

  /// Writes all bytes to `fd`, waiting with `poll` if the descriptor is non-blocking.
  package static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(FileError) {
    let failure: Int32? = bytes.withUnsafeBytes { raw in
      var offset = 0
      while offset < raw.count {
        let n = posixWrite(fd, raw.baseAddress! + offset, raw.count - offset)
        if n > 0 {
          offset += n
        } else if n < 0 && errno == EINTR {
          continue
        } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
          var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]  // a non-blocking fd we did not open
          _ = poll(&fds, 1, -1)
        } else {
          return n < 0 ? errno : EIO
        }
      }
      return nil
    }
    if let failure { throw FileError(operation: "write", path: path, code: failure) }
  }

  /// Flushes a file to stable storage (`F_FULLFSYNC` on macOS).
  package static func sync(_ fd: Int32, path: String) throws(FileError) {
    #if canImport(Darwin)
    if fcntl(fd, F_FULLFSYNC) == 0 { return }
    #endif
    if fsync(fd) != 0 { throw FileError(operation: "fsync", path: path, code: errno) }
  }

  /// Writes the file's dirty pages to disk and waits for them, without flushing its metadata or the
  /// disk's cache: a flush after it has little left to do, and the pages are clean for `dropCache`.
  /// `bytes`: the file's bytes from `offset` (0: to its end). Does nothing where there is no such
  /// call (`writesBack` false: the flush does it all). A failure is thrown: the call takes the file's
  /// write-back error, and a later `sync` would not see it again.
  package static func writeBack(_ fd: Int32, offset: Int = 0, bytes: Int = 0, path: String) throws(FileError) {
    #if os(Linux)
    // SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER
    if let syncFileRange, syncFileRange(fd, Int64(offset), Int64(bytes), 7) != 0 {
      throw FileError(operation: "sync_file_range", path: path, code: errno)
    }
    #endif
  }

  /// True where `writeBack` writes (Linux).
  package static var writesBack: Bool {
    #if os(Linux)
    return syncFileRange != nil
    #else
    return false
    #endif
  }

  #if os(Linux)
  /// glibc's `sync_file_range`.
  private static let syncFileRange = glibcFunction(
    "sync_file_range", as: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32).self)

  /// A glibc function that Swift's Glibc module does not declare (it needs `_GNU_SOURCE`), looked up
  /// by name; nil where this libc has none.
  private static func glibcFunction<Function>(_ name: String, as type: Function.Type) -> Function? {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
    return unsafeBitCast(symbol, to: type)
  }
  #endif

  /// Flushes every file of the filesystem that holds `fd`, with their directories (Linux `syncfs`):
  /// one call and one flush of the disk's cache for many files. False, with nothing flushed, where it
  /// does not apply: not Linux, or a kernel before 5.8, whose `syncfs` said nothing of a failed
  /// write-back. Thrown on a failure, which may be another file's on the same filesystem (the kernel
  /// reports any write-back error since `fd` was opened): flush each file to find out.
  package static func syncFilesystem(_ fd: Int32, path: String) throws(FileError) -> Bool {
    #if os(Linux)
    guard let syncfs = syncfsCall else { return false }
    if syncfs(fd) != 0 { throw FileError(operation: "syncfs", path: path, code: errno) }
    return true
    #else
    return false
    #endif
  }

  /// The dirty page cache the whole system holds (`Dirty` in `/proc/meminfo`): any program's written
  /// data not yet on its way to disk, which a `syncfs` would write out too. Nil where it cannot be
  /// read (not Linux, or no such line).
  package static func systemDirtyBytes() -> Int? {
    #if os(Linux)
    guard case .some(.some(let bytes)) = try? read("/proc/meminfo", limit: 1 << 16) else { return nil }
    return dirtyBytes(meminfo: String(decoding: bytes, as: UTF8.self))
    #else
    return nil
    #endif
  }

  /// The `Dirty:` figure of a `/proc/meminfo` text, in bytes (the file gives kB).
  static func dirtyBytes(meminfo: String) -> Int? {
    for line in meminfo.split(separator: "\n") where line.hasPrefix("Dirty:") {
      let fields = line.split(separator: " ")
      guard fields.count >= 2, let kB = Int(fields[1]), kB >= 0 else { return nil }
      let (bytes, overflow) = kB.multipliedReportingOverflow(by: 1024)
      return overflow ? nil : bytes
    }
    return nil
  }

  #if os(Linux)
  /// glibc's `syncfs`, on kernels that report write-back failures through it.
  private static let syncfsCall =
    kernelReportsSyncfsFailures() ? glibcFunction("syncfs", as: (@convention(c) (Int32) -> Int32).self) : nil

  /// True on Linux 5.8 or later, where `syncfs` returns write-back errors (errseq on the superblock).
  static func kernelReportsSyncfsFailures(release: String? = nil) -> Bool {
    let text = release ?? kernelRelease()
    let numbers = text.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
    guard numbers.count == 2 else { return false }
    return numbers[0] > 5 || (numbers[0] == 5 && numbers[1] >= 8)
  }

  private static func kernelRelease() -> String {
    var name = utsname()
    guard uname(&name) == 0 else { return "" }
    return withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
  }
  #endif

  /// Lets the kernel drop the file's cached pages, once they are on disk (after `sync`): a written
  /// segment is not read again while the store serves, and its cache would otherwise grow with the
  /// store (2 GB for 10M items), each new page a fresh one to the machine. `bytes`: the file's first
  /// bytes (0: all of it); only whole pages inside them are dropped. Linux only; a hint.
  package static func dropCache(_ fd: Int32, bytes: Int = 0) {
    #if os(Linux)
    _ = posix_fadvise(fd, 0, off_t(bytes), Int32(POSIX_FADV_DONTNEED))
    #endif
  }

  /// Flushes a directory, making renames and creations inside it durable.
  package static func syncDirectory(_ path: String) throws(FileError) {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 { throw FileError(operation: "open", path: path, code: errno) }
    defer { close(fd) }
    try sync(fd, path: path)
  }

  /// Writes a file atomically: temp file (mode 0600), fsync, rename, fsync of the directory.
  /// With `keepingPrevious`, the file being replaced is first renamed there.
  package static func writeAtomically(
    _ bytes: [UInt8], to path: String, directory: String, keepingPrevious previous: String? = nil, sync: Bool = true
  ) throws(FileError) {
    let (fd, temp) = try createTemporary(beside: path)
    do throws(FileError) {
      try writeAll(fd, bytes, path: temp)
      if sync { try FileIO.sync(fd, path: temp) }
    } catch {
      close(fd)
      unlink(temp)
      throw error
    }
    close(fd)
    KillPoint.reach(.temp)
    if let previous, rename(path, previous) != 0 && errno != ENOENT {
      let code = errno
      unlink(temp)
      throw FileError(operation: "rename", path: path, code: code)
    }
    if rename(temp, path) != 0 {
      let code = errno
      unlink(temp)
      throw FileError(operation: "rename", path: temp, code: code)
    }
    if sync {
      KillPoint.reach(.renamed)
      try syncDirectory(directory)
    }
  }

  /// Creates a new file (mode 0600) that must not exist yet; a symlink in its place is never followed.
  package static func createExclusive(_ path: String, append: Bool = true) throws(FileError) -> Int32 {
    let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | (append ? O_APPEND : 0)
    let fd = open(path, flags, 0o600)
    if fd < 0 { throw FileError(operation: "create", path: path, code: errno) }
    return fd
  }

  /// A name for a temporary file beside `path`: `PATH.tmp.` and 16 random hex digits, so nothing can
  /// be planted at it in advance (`.tmp.` marks what `StoreFiles.removeTemporaries` removes).
  package static func temporaryName(beside path: String) -> String {
    let suffix = String(UInt64.random(in: .min ... .max), radix: 16)
    return path + ".tmp." + String(repeating: "0", count: 16 - suffix.utf8.count) + suffix
  }

  /// Creates a new temporary file beside `path` under a fresh random name (`temporaryName`), with
  /// `O_EXCL | O_NOFOLLOW`: whatever is planted in the directory (a FIFO, a symlink) is never opened,
  /// so the open cannot block or write elsewhere. Returns its descriptor and its path.
  package static func createTemporary(
    beside path: String, mode: Int = 0o600
  ) throws(FileError) -> (fd: Int32, path: String) {
    var attempts = 0
    while true {
      let temp = temporaryName(beside: path)
      let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(mode))
      if fd >= 0 { return (fd, temp) }
      attempts += 1
      guard errno == EEXIST || errno == EINTR, attempts < 8 else {
        throw FileError(operation: "create", path: temp, code: errno)
      }
    }
  }

  /// Creates a directory and its parents (mode 0700 for new ones).
  package static func makeDirectories(_ path: String) throws(FileError) {
    var prefix = path.hasPrefix("/") ? "" : "."
    for part in path.split(separator: "/") {
      prefix += "/" + part
      if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
        throw FileError(operation: "mkdir", path: prefix, code: errno)
      }
    }
  }

  /// The size of a file in bytes (0 if it cannot be read).
  package static func size(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : 0
  }

  /// Names in a directory (without `.` and `..`).
  package static func list(_ path: String) throws(FileError) -> [String] {
    guard let dir = opendir(path) else { throw FileError(operation: "opendir", path: path, code: errno) }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }
}
