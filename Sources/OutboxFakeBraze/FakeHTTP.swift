/// HTTP/1.1 for the fake, just enough of it: one request from the front of a connection's bytes
/// (head, then a `Content-Length` body), and a response's bytes. Bounded: a head over
/// `maxHeadBytes` is 431 and a body over the settings' limit is 413, both ending the connection.
package struct FakeRequest: Sendable {
  package var method: String
  package var path: String
  package var query: String
  /// Header names lower-cased, in arrival order.
  package var headers: [(name: String, value: String)]
  package var body: [UInt8]
  /// The connection stays open after the answer (HTTP/1.1 without `Connection: close`).
  package var keepAlive: Bool

  package func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

  /// `name=value` pairs of the query string (no percent-decoding: the fake's own parameters are digits).
  package func parameter(_ name: String) -> String? {
    for pair in query.split(separator: "&") {
      let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      if parts.count == 2 && parts[0] == name { return String(parts[1]) }
    }
    return nil
  }
}

package enum FakeHTTP {
  static let maxHeadBytes = 16_384

  enum Parsed {
    /// More bytes are needed; `expectsContinue` when the head asked for `100 Continue`.
    case incomplete(expectsContinue: Bool)
    case request(FakeRequest, consumed: Int)
    /// Unreadable: answer `status` with `message`, then close.
    case bad(status: Int, message: String)
  }

  /// The first request in `bytes`, if whole.
  static func parse(_ bytes: [UInt8], maxBody: Int) -> Parsed {
    guard let headEnd = headEnd(bytes) else {
      return bytes.count > maxHeadBytes
        ? .bad(status: 431, message: "request head over \(maxHeadBytes) bytes") : .incomplete(expectsContinue: false)
    }
    guard headEnd <= maxHeadBytes else { return .bad(status: 431, message: "request head over \(maxHeadBytes) bytes") }
    guard bytes[0..<headEnd].allSatisfy({ $0 == 9 || $0 == 10 || $0 == 13 || ($0 >= 32 && $0 < 127) }) else {
      return .bad(status: 400, message: "request head is not ASCII text")
    }
    let lines = bytes[0..<headEnd].split(separator: 10, omittingEmptySubsequences: false).map { line in
      String(decoding: line.last == 13 ? line.dropLast() : line, as: UTF8.self)
    }
    let parts = lines[0].split(separator: " ", omittingEmptySubsequences: false)
    guard parts.count == 3, !parts[0].isEmpty, parts[1].hasPrefix("/"), parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0"
    else { return .bad(status: 400, message: "not an HTTP/1.x request line") }
    var headers: [(name: String, value: String)] = []
    for line in lines.dropFirst() where !line.isEmpty {
      guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
        return .bad(status: 400, message: "a header line without a name")
      }
      let value = line[line.index(after: colon)...].trimmingSpaces()
      headers.append((line[..<colon].lowercased(), value))
    }
    var request = FakeRequest(
      method: String(parts[0]), path: "", query: "", headers: headers, body: [], keepAlive: parts[2] == "HTTP/1.1")
    let target = parts[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    request.path = String(target[0])
    request.query = target.count > 1 ? String(target[1]) : ""
    let connection = request.header("connection")?.lowercased() ?? ""
    if connection.contains("close") { request.keepAlive = false }
    if connection.contains("keep-alive") { request.keepAlive = true }
    if request.header("transfer-encoding") != nil {
      return .bad(status: 411, message: "chunked bodies are not supported; send Content-Length")
    }
    var length = 0
    if let text = request.header("content-length") {
      guard !text.isEmpty, text.utf8.count <= 12, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = Int(text)
      else { return .bad(status: 400, message: "Content-Length is not a number") }
      length = n
    }
    guard length <= maxBody else { return .bad(status: 413, message: "body over \(maxBody) bytes") }
    let start = headEnd
    guard bytes.count - start >= length else {
      return .incomplete(expectsContinue: request.header("expect")?.lowercased() == "100-continue")
    }
    request.body = Array(bytes[start..<start + length])
    return .request(request, consumed: start + length)
  }

  /// The index just past the blank line ending the head, or nil.
  static func headEnd(_ bytes: [UInt8]) -> Int? {
    var i = 1
    let limit = min(bytes.count, maxHeadBytes + 4)
    while i < limit {
      if bytes[i] == 10 {
        if bytes[i - 1] == 10 { return i + 1 }
        if i >= 2 && bytes[i - 1] == 13 && bytes[i - 2] == 10 { return i + 1 }
      }
      i += 1
    }
    return nil
  }

  /// A whole response: status line, `Content-Length`, the headers given, the body.
  static func render(
    status: Int, headers: [(String, String)], body: [UInt8], keepAlive: Bool, type: String = "application/json"
  ) -> [UInt8] {
    var head = "HTTP/1.1 \(status) \(reason(status))\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    head += keepAlive ? "\r\n" : "Connection: close\r\n\r\n"
    return Array(head.utf8) + body
  }

  static func reason(_ status: Int) -> String {
    switch status {
    case 100: "Continue"
    case 200: "OK"
    case 201: "Created"
    case 202: "Accepted"
    case 204: "No Content"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 411: "Length Required"
    case 413: "Payload Too Large"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    default: "Status \(status)"
    }
  }
}

extension Substring {
  fileprivate func trimmingSpaces() -> String {
    var s = self
    while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
    while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
    return String(s)
  }
}
