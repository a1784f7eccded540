/// The head of an HTTP/1.x request, as the metrics listener reads it: the request line and the
/// `Accept` header. A pure function of the bytes received so far (`parse`), fuzzed by `FuzzHTTPHead`.
///
/// Only the bytes up to the head's end (the first blank line) are read: whatever follows it in the
/// same read (a pipelined request, a body) is never looked at, so the answer does not depend on how
/// the bytes were split into TCP segments. A line ends with LF or CRLF.
package struct HTTPRequestHead: Sendable, Equatable {
  package var method: String
  package var target: String
  /// Every `Accept` header's value, joined with commas; nil without one.
  package var accept: String?

  /// What the bytes received so far hold.
  package enum Parse: Sendable, Equatable {
    /// No blank line yet, within the limit: wait for more.
    case incomplete
    /// No blank line within the limit (431).
    case tooLarge
    /// A head that is not an HTTP/1.0 or 1.1 request (400).
    case malformed
    /// A request head, and its length in bytes through its blank line.
    case head(HTTPRequestHead, length: Int)
  }

  /// Reads the head at the start of `bytes`; a head longer than `limit` bytes is `tooLarge`.
  package static func parse(_ bytes: [UInt8], limit: Int) -> Parse {
    guard let length = headLength(bytes, limit: limit) else {
      return bytes.count >= limit ? .tooLarge : .incomplete
    }
    guard let head = parseHead(bytes[..<length]) else { return .malformed }
    return .head(head, length: length)
  }

  /// The length through the first blank line (LF LF, or LF CR LF), if it ends within `limit` bytes.
  static func headLength(_ bytes: [UInt8], limit: Int) -> Int? {
    var i = 1
    let end = min(bytes.count, max(0, limit))
    while i < end {
      if bytes[i] == 10 && (bytes[i - 1] == 10 || (i >= 2 && bytes[i - 1] == 13 && bytes[i - 2] == 10)) {
        return i + 1
      }
      i += 1
    }
    return nil
  }

  /// The request line and the `Accept` headers of a complete head, or nil when it is not HTTP/1.x.
  private static func parseHead(_ head: ArraySlice<UInt8>) -> HTTPRequestHead? {
    guard head.allSatisfy({ $0 == 9 || $0 == 10 || $0 == 13 || ($0 >= 32 && $0 < 127) }) else { return nil }
    // Bytes, not Characters: "\r\n" is one Character in Swift.
    let lines = head.split(separator: 10, omittingEmptySubsequences: false).map { line in
      String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
    }
    guard let first = lines.first else { return nil }
    let parts = first.split(separator: " ", omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, parts[0].utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }),
      parts[1].hasPrefix("/"), parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0"
    else { return nil }
    var accept: String? = nil
    for line in lines.dropFirst() where !line.isEmpty {
      guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { return nil }
      if line[..<colon].lowercased() == "accept" {
        accept = (accept.map { $0 + "," } ?? "") + line[line.index(after: colon)...]
      }
    }
    return HTTPRequestHead(method: String(parts[0]), target: String(parts[1]), accept: accept)
  }
}
