import Testing

@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport

@Suite struct MetricsTests {
  @Test func addresses() {
    #expect(MetricsAddress.parse("9464") == MetricsAddress(host: "127.0.0.1", port: 9464, v6: false))
    #expect(MetricsAddress.parse(":9464") == MetricsAddress(host: "127.0.0.1", port: 9464, v6: false))
    #expect(MetricsAddress.parse("localhost:0") == MetricsAddress(host: "127.0.0.1", port: 0, v6: false))
    #expect(MetricsAddress.parse("[::1]:80") == MetricsAddress(host: "::1", port: 80, v6: true))
    #expect(MetricsAddress.parse("0.0.0.0:9464")?.isLoopback == false)
    #expect(MetricsAddress.parse("127.0.0.2:1")?.isLoopback == true)
  }

  @Test func loopbackIncludesIPv4MappedLoopback() {
    for loopback in ["127.0.0.1:1", "127.9.8.7:1", "[::1]:1", "[::ffff:127.0.0.1]:1", "[::ffff:127.255.0.9]:1"] {
      #expect(MetricsAddress.parse(loopback)?.isLoopback == true, "\(loopback)")
    }
    for remote in ["0.0.0.0:1", "10.0.0.1:1", "[::]:1", "[::ffff:10.0.0.1]:1", "[::ffff:128.0.0.1]:1", "[::2]:1"] {
      #expect(MetricsAddress.parse(remote)?.isLoopback == false, "\(remote)")
    }
    for bad in ["", ":", "x:1", "example.com:80", "1.2.3.4:65536", "1.2.3.4:-1", "[::1]80", "[::1", "1.2.3.4:1e3"] {
      #expect(MetricsAddress.parse(bad) == nil, "\(bad)")
    }
  }

  @Test func requestHeads() {
    let good = head("GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n\r\n")
    #expect(good?.method == "GET" && good?.target == "/metrics" && good?.accept == " text/plain")
    for bad in [
      "GET /metrics\r\n\r\n", "get /metrics HTTP/1.1\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
      "GET /metrics HTTP/1.1\r\nno colon\r\n\r\n", "GET /\u{1} HTTP/1.1\r\n\r\n",
    ] {
      #expect(HTTPRequestHead.parse(Array(bad.utf8), limit: 8192) == .malformed, "\(bad)")
    }
    #expect(MetricsFormat.negotiate(accept: "application/openmetrics-text; version=1.0.0") == .openMetrics)
    #expect(MetricsFormat.negotiate(accept: nil) == .prometheus)
  }

  /// Only the head is read: a pipelined request or a body after it, in the same bytes, changes
  /// nothing, and a head split anywhere is incomplete until its blank line.
  @Test func requestHeadEndsAtItsBlankLine() {
    let first = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    let length = first.utf8.count
    for after in ["", "GET /metrics HTTP/1.1\r\n\r\n", "hello, a body\u{0}\u{ff}", "\r\n\r\n"] {
      let parsed = HTTPRequestHead.parse(Array((first + after).utf8), limit: 8192)
      #expect(parsed == .head(HTTPRequestHead(method: "GET", target: "/metrics", accept: nil), length: length))
    }
    let post = HTTPRequestHead.parse(Array("POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello".utf8), limit: 8192)
    #expect(post == .head(HTTPRequestHead(method: "POST", target: "/x", accept: nil), length: 39))
    for cut in 0..<length {
      #expect(HTTPRequestHead.parse(Array(first.utf8.prefix(cut)), limit: 8192) == .incomplete)
    }
    #expect(HTTPRequestHead.parse(Array(repeating: 65, count: 64), limit: 64) == .tooLarge)
    #expect(HTTPRequestHead.parse(Array(first.utf8), limit: length - 1) == .tooLarge)
    #expect(HTTPRequestHead.parse(Array("GET / HTTP/1.0\n\n".utf8), limit: 16) != .tooLarge)
  }

  private func head(_ text: String) -> HTTPRequestHead? {
    guard case .head(let head, _) = HTTPRequestHead.parse(Array(text.utf8), limit: 8192) else { return nil }
    return head
  }

  @Test func textEscapesLabelsAndClosesOpenMetrics() {
    var s = MetricsSnapshot()
    s.deadLetters = ["a \"quoted\"\\ reason\nnext": 2]
    s.version = "1.0"
    let text = MetricsText.render(s, format: .prometheus, nowMs: 0)
    #expect(text.contains(#"push_outbox_dead_letters{reason="a \"quoted\"\\ reason\nnext"} 2"#))
    #expect(!text.contains("# EOF"))
    let open = MetricsText.render(s, format: .openMetrics, nowMs: 0)
    #expect(open.hasSuffix("# EOF\n") && open.contains("# TYPE push_outbox_saves counter"))
  }

  @Test func histogramBuckets() {
    let h = DurationHistogram()
    h.observe(seconds: 0.003)
    h.observe(seconds: 100)
    h.observe(seconds: -.infinity)
    let v = h.value
    #expect(v.count == 3 && v.buckets.reduce(0, +) == 2 && v.sum == 100.003)
  }
}
