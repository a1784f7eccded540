// The platform's C library, once for every target: a file that imports OutboxSupport sees libc
// (Glibc, Musl or Darwin) through it, so this block is the only one (issue 43, "twins").
#if canImport(Glibc)
@_exported public import Glibc
#elseif canImport(Musl)
@_exported public import Musl
#elseif canImport(Darwin)
@_exported public import Darwin
#endif

/// `send(2)` on a socket whose peer may be gone, without SIGPIPE: `MSG_NOSIGNAL` on Linux; on macOS
/// each socket is opened with `SO_NOSIGPIPE`.
@inline(__always)
package func socketSend(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
  #if canImport(Darwin)
  send(fd, buffer, count, 0)
  #else
  send(fd, buffer, count, Int32(MSG_NOSIGNAL))
  #endif
}

/// `write(2)`, under a name that methods called `write` do not shadow.
@inline(__always)
package func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
  write(fd, buffer, count)
}

/// The text of an errno value, e.g. "No space left on device".
package func errnoText(_ code: Int32) -> String {
  String(cString: strerror(code))
}

/// `read(2)`, under a name that methods called `read` do not shadow.
@inline(__always)
func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
  read(fd, buffer, count)
}

/// `close(2)`, under a name that methods called `close` do not shadow.
package func closeFD(_ fd: Int32) {
  if fd >= 0 { close(fd) }
}

/// The machine's processors.
package enum Processors {
  /// How many are online (at least 1).
  package static var online: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
