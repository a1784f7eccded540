import Dispatch
import OutboxSupport
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
  /// Monotonic seconds after which the request must not leave (a fleet leader's lease): checked on
  /// the HTTP thread right before it is handed to libcurl; past it, the result is `.notSent`.
  var notAfter = Double.infinity

  /// Why a request was not sent.
  static let late = "not sent: its time to leave (the fleet leader's lease, less a margin) had passed"
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
package typealias PostResult = Result<HTTPResponse, DeliveryFailure>

/// Sends requests: `start` hands one over and returns at once, `done` gets the result once, from
/// any thread. `post` sends one and waits for it.
package protocol HTTPPoster: Sendable {
  func post(_ request: HTTPRequest) -> Result<HTTPResponse, DeliveryFailure>
  func start(_ request: HTTPRequest, done: @escaping @Sendable (PostResult) -> Void)
}

extension HTTPPoster {
  /// For posters that only know how to wait (the tests'): each request on a background queue.
  package func start(_ request: HTTPRequest, done: @escaping @Sendable (PostResult) -> Void) {
    blockingPosts.async {
      guard Clock.monotonicSeconds() < request.notAfter else { return done(.failure(.notSent(HTTPRequest.late))) }
      done(post(request))
    }
  }
}

private let blockingPosts = DispatchQueue(label: "push-outbox.blocking-posts", attributes: .concurrent)

/// `HTTPPoster` over libcurl: every request goes to the one `CurlEngine`. HTTPS with certificate
/// verification (libcurl's default, never turned off), http/https only, no redirects followed, no
/// signals; connections kept alive and reused, HTTP/2 multiplexed where the server offers it.
package struct CurlPoster: HTTPPoster {
  package init() {}

  package func start(_ request: HTTPRequest, done: @escaping @Sendable (PostResult) -> Void) {
    switch CurlEngine.shared {
    case .success(let engine): engine.submit(request, done)
    case .failure(let error): done(.failure(error))
    }
  }

  /// One request, waited for on the calling thread.
  package func post(_ request: HTTPRequest) -> PostResult {
    let answer = Mutex<PostResult?>(nil)
    let arrived = DispatchSemaphore(value: 0)
    start(request) { result in
      answer.withLock { $0 = result }
      arrived.signal()
    }
    arrived.wait()
    return answer.withLock { $0 } ?? .failure(.transport("no answer"))
  }
}

/// Collects a response inside libcurl's callbacks (on the engine's thread).
final class ResponseSink {
  var body: [UInt8] = []
  var headers: [String: String] = [:]
  /// The blank line after the final response's headers arrived.
  var headersDone = false
}

let onBody: Curl.Callback = { data, size, count, user in
  guard let data, let user else { return 0 }
  let sink = Unmanaged<ResponseSink>.fromOpaque(user).takeUnretainedValue()
  let n = size * count
  guard sink.body.count + n <= 1 << 20 else { return 0 }  // Braze answers are small; refuse a flood
  data.withMemoryRebound(to: UInt8.self, capacity: n) {
    sink.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: n))
  }
  return n
}

let onHeader: Curl.Callback = { data, size, count, user in
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
