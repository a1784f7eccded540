import Testing

@testable import OutboxJSON
@testable import OutboxNATS

/// What the client believes of a NATS server's replies (issue 40 #5, #6): a publish ack counts as
/// stored only when it names the stream published to and a positive sequence; INFO's `max_payload`
/// must be a size in 1...64 MiB. The fleet suite's fake server (`Tests/fleet/fake_nats.py`) sends
/// the same replies to the real binary.
@Suite struct NATSServerWordTests {
  func ack(_ json: String, status: Int? = nil) -> NATSMessage {
    NATSMessage(subject: "_INBOX.x.1", sid: "1", reply: nil, status: status, payload: Array(json.utf8))
  }

  @Test func anAckIsStoredOnlyForTheStreamPublishedToWithAPositiveSeq() {
    #expect(PublishAck.parse(ack(#"{"stream":"S","seq":7}"#), stream: "S") == .stored(seq: 7, duplicate: false))
    #expect(
      PublishAck.parse(ack(#"{"stream":"S","seq":7,"duplicate":true}"#), stream: "S")
        == .stored(seq: 7, duplicate: true))
    let cases: [(String, String)] = [
      (#"{"stream":"SOMETHING_ELSE","seq":7}"#, #"names the stream "SOMETHING_ELSE", not S"#),
      (#"{"stream":"S","seq":0}"#, "has seq 0"),
      (#"{"stream":"S","seq":-3}"#, "has seq -3"),
      (#"{"stream":"s","seq":7}"#, #"names the stream "s""#),
      (#"{"seq":7}"#, "has no stream and seq"),
      (#"{"stream":"S"}"#, "has no stream and seq"),
      (#"{"stream":"S","seq":"7"}"#, "has no stream and seq"),
      ("not json", "is not JSON"),
    ]
    for (json, said) in cases {
      guard case .refused(let text, _) = PublishAck.parse(ack(json), stream: "S") else {
        Issue.record("\(json) counted as stored")
        continue
      }
      #expect(text.contains(said), "\(json): \(text)")
    }
    #expect(PublishAck.parse(ack("", status: 503), stream: "S").isFull == false)
  }

  @Test func maxPayloadMustBeASizeTheClientCanTake() throws {
    for bad in ["0", "-1", "68719476736", #""1048576""#, "1.5", "null"] {
      let info = try JSONReader.parse(Array(#"{"max_payload":\#(bad)}"#.utf8), maxDepth: 4)
      #expect(throws: NATSError.self, "max_payload \(bad)") { try NATSConnection.checkMaxPayload(info) }
    }
    for good in ["1", "1048576", "67108864"] {
      let info = try JSONReader.parse(Array(#"{"max_payload":\#(good)}"#.utf8), maxDepth: 4)
      try NATSConnection.checkMaxPayload(info)
    }
    try NATSConnection.checkMaxPayload(try JSONReader.parse(Array("{}".utf8), maxDepth: 4))
  }

  /// The stream sequence and delivery count come from the ack subject's fields, counted from its end;
  /// any other shape (too few fields, not a number, past 64 bits) reads as 0, never a trap.
  @Test func theAckSubjectIsReadFromItsEnd() {
    func message(_ ack: String) -> FetchedMessage {
      FetchedMessage(subject: "s", headers: [], payload: [], ackSubject: ack)
    }
    let plain = message("$JS.ACK.PUSH_OUTBOX.deliver.3.4521.77.1732800000000000000.12")
    #expect(plain.streamSequence == 4521 && plain.deliveries == 3)
    let domain = message("$JS.ACK.hub.ACCHASH.PUSH_OUTBOX.deliver.1.18446744073709551615.9.1732800000000000000.0")
    #expect(domain.streamSequence == UInt64.max && domain.deliveries == 1)
    for bad in [
      "$JS.ACK.S.c.1.2.3.4", "", "........", "$JS.ACK.S.c.x.5.3.4.0", "$JS.ACK.S.c.1.18446744073709551616.3.4.0",
      "$JS.ACK.S.c.1..3.4.0", "$JS.ACK.S.c.1.-5.3.4.0",
    ] {
      #expect(message(bad).streamSequence == 0 || bad.hasPrefix("$JS.ACK.S.c.x"), "\(bad)")
    }
    #expect(message("$JS.ACK.S.c.x.5.3.4.0").deliveries == 0)
    #expect(message("$JS.ACK.S.c.x.5.3.4.0").streamSequence == 5)
  }
}
