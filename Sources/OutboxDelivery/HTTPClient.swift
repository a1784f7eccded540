import Synchronization

/// Why a request got no HTTP answer. Messages never hold the API key (it is only in a header).
package enum DeliveryFailure: Error, Sendable, Equatable {
  case timeout(String)
  case transport(String)
  /// The request never left: the caller's time to send had passed (a fleet leader's lease).
  case notSent(String)

  package var message: String {
    switch self {
    case .timeout(let text), .transport(let text), .notSent(let text): text
    }
  }
}

/// One `POST`: the URL, the secret bearer token and the JSON body.
package struct HTTPRequest: Sendable {
  package var url: String
  var bearer: Secret
  package var body: [UInt8]
  package var timeoutMs: Int
  var connectTimeoutMs: Int
}

/// An HTTP answer: status, body and the headers delivery reads (names lower-cased).
package struct HTTPResponse: Sendable, Equatable {
  package var status: Int
  package var body: [UInt8]
  var headers: [String: String]

  package init(status: Int, body: [UInt8] = [], headers: [String: String] = [:]) {
    self.status = status
    self.body = body
    self.headers = headers
  }
}

/// What one `POST` gave: an HTTP answer, or why there was none.
typealias PostResult = Result<HTTPResponse, DeliveryFailure>

/// Sends requests. Called from a background queue, one request per call.
package protocol HTTPPoster: Sendable {
  func post(_ request: HTTPRequest) -> Result<HTTPResponse, DeliveryFailure>
}

/// `HTTPPoster` over libcurl: HTTPS with certificate verification (libcurl's default, never turned
/// off), http/https only, no redirects followed, no signals.
///
/// Easy handles are kept in a pool and reused, so each keeps its connection (and TLS session) to
/// Braze open between requests instead of connecting and shaking hands for every one.
package struct CurlPoster: HTTPPoster {
  private let pool = CurlHandles()

  package init() {}

  package func post(_ request: HTTPRequest) -> Result<HTTPResponse, DeliveryFailure> {
    let curl: Curl
    switch Curl.shared {
    case .success(let loaded): curl = loaded
    case .failure(let error): return .failure(error)
    }
    guard let handle = pool.take(curl) else { return .failure(.transport("curl_easy_init failed")) }
    let (result, reusable) = post(request, curl, handle)
    if reusable { pool.give(handle, curl) } else { curl.easyCleanup(handle) }
    return result
  }

  /// The answer, and whether the handle's connection is still good for the next request.
  private func post(_ request: HTTPRequest, _ curl: Curl, _ handle: Curl.Handle) -> (PostResult, Bool) {
    let sink = ResponseSink()
    let box = Unmanaged.passRetained(sink)
    defer { box.release() }
    var headers: UnsafeMutableRawPointer? = nil
    headers = curl.slistAppend(headers, "Content-Type: application/json")
    headers = request.bearer.withHeader { curl.slistAppend(headers, $0) }
    defer { curl.slistFree(headers) }
    let code = request.url.withCString { url in
      request.body.withUnsafeBytes { body in
        _ = curl.set(handle, CurlOption.url, url)
        _ = curl.set(handle, CurlOption.httpHeader, headers)
        _ = curl.set(handle, CurlOption.post, long: 1)
        _ = curl.set(handle, CurlOption.postFieldSize, long: body.count)
        _ = curl.set(handle, CurlOption.postFields, body.baseAddress ?? UnsafeRawPointer(bitPattern: 1))
        _ = curl.set(handle, CurlOption.noSignal, long: 1)
        _ = curl.set(handle, CurlOption.timeoutMs, long: request.timeoutMs)
        _ = curl.set(handle, CurlOption.connectTimeoutMs, long: request.connectTimeoutMs)
        _ = curl.set(handle, CurlOption.protocols, long: CurlOption.httpAndHTTPS)
        _ = curl.set(handle, CurlOption.redirProtocols, long: CurlOption.httpAndHTTPS)
        _ = curl.set(handle, CurlOption.writeFunction, unsafeBitCast(onBody, to: UnsafeRawPointer.self))
        _ = curl.set(handle, CurlOption.writeData, box.toOpaque())
        _ = curl.set(handle, CurlOption.headerFunction, unsafeBitCast(onHeader, to: UnsafeRawPointer.self))
        _ = curl.set(handle, CurlOption.headerData, box.toOpaque())
        return "push-outbox".withCString { agent in
          _ = curl.set(handle, CurlOption.userAgent, agent)
          return curl.easyPerform(handle)
        }
      }
    }
    var status = 0
    _ = curl.info(handle, CurlOption.responseCode, &status)
    guard code == 0 else {
      // A complete status line and headers with a 2xx mean Braze accepted the batch, even when the
      // body was cut off (reset mid-body, or over the 1 MiB we read): sending it again would
      // duplicate it. What arrived is parsed for `errors`; an unreadable body counts as delivered.
      if sink.headersDone && (200..<300).contains(status) {
        return (.success(HTTPResponse(status: status, body: sink.body, headers: sink.headers)), false)
      }
      let text = curl.message(code)
      return (.failure(code == CurlOption.timedOut ? .timeout(text) : .transport(text)), false)
    }
    return (.success(HTTPResponse(status: status, body: sink.body, headers: sink.headers)), true)
  }
}

/// Idle easy handles (with their open connections), at most `limit` of them, held as addresses.
private final class CurlHandles: Sendable {
  private let idle = Mutex<[UInt]>([])
  private let limit = 64

  func take(_ curl: Curl) -> Curl.Handle? {
    idle.withLock { $0.popLast() }.flatMap { Curl.Handle(bitPattern: $0) } ?? curl.easyInit()
  }

  /// Back into the pool after a request that got an answer; a failed one's handle is dropped.
  func give(_ handle: Curl.Handle, _ curl: Curl) {
    let address = UInt(bitPattern: handle)
    let kept = idle.withLock { handles in
      guard handles.count < limit else { return false }
      handles.append(address)
      return true
    }
    if !kept { curl.easyCleanup(handle) }
  }
}

/// Collects a response inside libcurl's callbacks (on the one thread performing the request).
private final class ResponseSink {
  var body: [UInt8] = []
  var headers: [String: String] = [:]
  /// The blank line after the final response's headers arrived.
  var headersDone = false
}

private let onBody: Curl.Callback = { data, size, count, user in
  guard let data, let user else { return 0 }
  let sink = Unmanaged<ResponseSink>.fromOpaque(user).takeUnretainedValue()
  let n = size * count
  guard sink.body.count + n <= 1 << 20 else { return 0 }  // Braze answers are small; refuse a flood
  data.withMemoryRebound(to: UInt8.self, capacity: n) {
    sink.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: n))
  }
  return n
}

private let onHeader: Curl.Callback = { data, size, count, user in
  guard let data, let user else { return 0 }
  let sink = Unmanaged<ResponseSink>.fromOpaque(user).takeUnretainedValue()
  let n = size * count
  let line = data.withMemoryRebound(to: UInt8.self, capacity: n) {
    String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self)
  }
  if line.hasPrefix("HTTP/") {  // a new response (after 100 Continue)
    sink.headers.removeAll()
    sink.headersDone = false
  }
  if line == "\r\n" || line == "\n" { sink.headersDone = true }
  if let colon = line.firstIndex(of: ":") {
    let name = line[..<colon].lowercased()
    let value = line[line.index(after: colon)...].trimmedSpace()
    if sink.headers.count < 64 { sink.headers[name] = value }
  }
  return n
}

extension StringProtocol {
  /// The text without leading and trailing ASCII spaces, tabs, CRs and LFs.
  package func trimmedSpace() -> String {
    let bytes = Array(utf8)
    let isSpace = { (b: UInt8) in b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
    guard let start = bytes.firstIndex(where: { !isSpace($0) }), let end = bytes.lastIndex(where: { !isSpace($0) })
    else {
      return ""
    }
    return String(decoding: bytes[start...end], as: UTF8.self)
  }
}

/// The API key: only ever written into the `Authorization` header; never printed.
package struct Secret: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
  private let value: String
  package init(_ value: String) { self.value = value }
  package var description: String { "<redacted>" }
  package var debugDescription: String { "<redacted>" }
  package var isEmpty: Bool { value.isEmpty }

  /// `text` with every occurrence of the key replaced by `<redacted>`.
  /// Compared byte for byte (the key is printable ASCII), never as characters: a combining mark after
  /// the key would hide it from a character-wise search while its bytes stay in the text.
  func redact(_ text: String) -> String {
    let key = Array(value.utf8)
    var bytes = Array(text.utf8)
    guard key.count >= 4, bytes.count >= key.count else { return text }
    var out: [UInt8] = []
    var start = 0
    var found = false
    while start < bytes.count {
      if bytes.count - start >= key.count && bytes[start..<(start + key.count)].elementsEqual(key) {
        out.append(contentsOf: "<redacted>".utf8)
        start += key.count
        found = true
      } else {
        out.append(bytes[start])
        start += 1
      }
    }
    guard found else { return text }
    bytes = out
    return String(decoding: bytes, as: UTF8.self)
  }

  func withHeader<T>(_ body: (UnsafePointer<CChar>) -> T) -> T {
    ("Authorization: Bearer " + value).withCString(body)
  }
}
