/// `push-outbox fake-braze`'s settings, from its flags (Sources/OutboxCommandLine's option table).
package struct FakeBrazeSettings: Sendable {
  /// `--listen HOST:PORT`: a numeric IPv4 address (or `localhost`); loopback by default, port 0 chosen by the system.
  package var host = "127.0.0.1"
  package var port: UInt16 = 0
  /// `--api-key KEY`: the bearer key every request must carry (else any key is taken, but one must be sent).
  package var apiKey: String?
  /// `--record FILE`: every request as a JSON line.
  package var recordPath: String?
  /// `--delay-ms N`: every `/users/track` answer waits this long (other connections are served meanwhile).
  package var delayMs = 0
  /// `--script`, `--script-file`: the faults, in order.
  package var steps: [FaultStep] = []
  /// `--retry-after SECONDS`: the `Retry-After` of every scripted 429 and 5xx answer.
  package var retryAfter: Int?
  /// `--rate-limit N/S`.
  package var rateLimit: FakeRateLimit?
  /// `--max-objects N` and `--combined-limit`: Braze's 75 objects per array (or in all).
  package var maxObjects = FakeBrazeRules.limit("objects per array")
  package var combined = false
  /// `--max-body-bytes N`: larger bodies are 413 and end the connection.
  package var maxBodyBytes = 8 << 20
  /// `--keep N`: requests `GET /_fake/requests` remembers (the record file has all of them).
  package var keep = 100_000
  /// Connections served at once; more wait in the listen backlog.
  package var maxConnections = 4096
  /// `--stop-on-stdin-eof`: end when stdin closes (a harness that spawned the fake went away).
  package var stopOnStdinEOF = false

  package init() {}

  /// `HOST:PORT`, `:PORT` or `PORT`; nil when not a numeric IPv4 address and a port.
  package mutating func listen(_ text: String) -> Bool {
    var host = "127.0.0.1"
    var portText = Substring(text)
    if let colon = text.lastIndex(of: ":") {
      if colon != text.startIndex { host = String(text[..<colon]) }
      portText = text[text.index(after: colon)...]
    }
    if host == "localhost" { host = "127.0.0.1" }
    let octets = host.split(separator: ".", omittingEmptySubsequences: false)
    guard octets.count == 4, octets.allSatisfy({ $0.count <= 3 && UInt8($0) != nil }),
      !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCII), let port = UInt16(portText)
    else { return false }
    self.host = host
    self.port = port
    return true
  }
}
