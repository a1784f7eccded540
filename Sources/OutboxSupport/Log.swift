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

/// The shape of a stderr line: `push-outbox: warn: …` (text) or one JSON object (json).
package enum LogFormat: String, Sendable, CaseIterable {
  case text, json
}

/// A tiny stderr logger: one line per message, `push-outbox: warn: …`, or with `--log-format json`
/// `{"time":"…","level":"warn","message":"…"}`.
package struct Log: Sendable {
  package var level: LogLevel

  /// Written only by the executable's top-level code (`main.swift`: from `PUSH_OUTBOX_LOG_FORMAT`,
  /// then from `--log-format`) on the main thread, before any work runs on another thread (the
  /// delivery, fsync and snapshot queues); read-only afterwards. Safe to read from any thread:
  /// handing work to a queue orders those writes before it. Tests never write it.
  nonisolated(unsafe) package static var format = LogFormat.text

  package init(level: LogLevel) { self.level = level }

  package func error(_ message: @autoclosure () -> String) { write(.error, message) }
  package func warn(_ message: @autoclosure () -> String) { write(.warn, message) }
  package func info(_ message: @autoclosure () -> String) { write(.info, message) }
  package func debug(_ message: @autoclosure () -> String) { write(.debug, message) }

  private func write(_ at: LogLevel, _ message: () -> String) {
    guard at <= level else { return }
    Log.line(at, message())
  }

  /// Writes one message at `level` in the chosen format, whatever the configured level.
  package static func line(_ level: LogLevel, _ message: String) {
    switch format {
    case .text: writeStderr("push-outbox: \(level.name): \(message.escapingControlCharacters)")
    case .json: writeStderr(jsonLine(level, message))
    }
  }

  /// A start-up or usage message: `push-outbox: message` as text, an error-level object as JSON.
  package static func stderr(_ line: String) {
    guard format == .json else { return writeStderr(line.escapingControlCharacters) }
    let prefix = "push-outbox: "
    Log.line(.error, line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : line)
  }

  private static func jsonLine(_ level: LogLevel, _ message: String) -> String {
    var out: [UInt8] = []
    out.appendASCII("{\"time\":\"")
    UTCTime.append(ms: Clock.system.now(), to: &out)
    out.appendASCII("\",\"level\":")
    out.appendJSONString(level.name)
    out.appendASCII(",\"message\":")
    out.appendJSONString(message)
    out.append(UInt8(ascii: "}"))
    return String(decoding: out, as: UTF8.self)
  }

  /// Writes one line to stderr, ignoring failures (stderr may be closed).
  private static func writeStderr(_ line: String) {
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
