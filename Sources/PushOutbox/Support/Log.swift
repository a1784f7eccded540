/// How much goes to stderr. Nothing in the library writes to stdout except the transport.
package enum LogLevel: Int, Sendable, Comparable, CaseIterable {
  case error, warn, info, debug

  package var name: String {
    switch self {
    case .error: "error"
    case .warn: "warn"
    case .info: "info"
    case .debug: "debug"
    }
  }

  package init?(name: String) {
    guard let level = LogLevel.allCases.first(where: { $0.name == name }) else { return nil }
    self = level
  }

  package static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// A tiny stderr logger: one line per message, `push-outbox: warn: …`.
package struct Log: Sendable {
  package var level: LogLevel

  package init(level: LogLevel) { self.level = level }

  package func error(_ message: @autoclosure () -> String) { write(.error, message) }
  package func warn(_ message: @autoclosure () -> String) { write(.warn, message) }
  package func info(_ message: @autoclosure () -> String) { write(.info, message) }
  package func debug(_ message: @autoclosure () -> String) { write(.debug, message) }

  private func write(_ at: LogLevel, _ message: () -> String) {
    guard at <= level else { return }
    Log.stderr("push-outbox: \(at.name): \(message())")
  }

  /// Writes one line to stderr, ignoring failures (stderr may be closed).
  package static func stderr(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    bytes.withUnsafeMutableBytes { raw in
      var offset = 0
      while offset < raw.count {
        let n = posixWrite(2, raw.baseAddress! + offset, raw.count - offset)
        if n <= 0 { if n < 0 && errno == EINTR { continue }; return }
        offset += n
      }
    }
  }
}
