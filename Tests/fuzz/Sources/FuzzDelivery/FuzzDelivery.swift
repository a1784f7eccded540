// Fuzz target: what delivery takes from outside (issue 17). Byte 0 picks the part (modulo 3):
//
// 0. The endpoint parser (`EndpointURL`), differentially against `Reference`, a strict grammar
//    written here from the README's rules: both accept or both refuse, and agree on the URL; plain
//    http is only ever accepted for a loopback host.
// 1. The key redaction: the rest is split into a key and server text with the key spliced in;
//    `ServerText.clean` never returns the key, a control character or more than its byte limit.
// 2. Braze's answer: two bytes of status and a body, through `Verdict.of`: never traps, and every
//    reason it carries is clean.
import FuzzSupport
import OutboxCommandLine
import OutboxDelivery
import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxServer
import OutboxStore
import OutboxSupport
import OutboxTransport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDelivery(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
  let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  guard let selector = input.first else { return 0 }
  let rest = Array(input.dropFirst())
  switch selector % 3 {
  case 0: checkEndpoint(rest, input)
  case 1: checkRedaction(rest, input)
  default: checkVerdict(rest, input)
  }
  return 0
}

func checkEndpoint(_ bytes: [UInt8], _ input: [UInt8]) {
  let text = String(decoding: bytes, as: UTF8.self)
  let ours = try? EndpointURL(text)
  let reference = Reference.parse(text)
  switch (ours, reference) {
  case (nil, nil): return
  case (let ours?, let reference?):
    guard ours.text == reference.text, ours.secure || reference.loopback else {
      fuzzFailure("FuzzDelivery", "endpoint \(text): ours \(ours.text), reference \(reference.text)", input)
    }
  default:
    fuzzFailure(
      "FuzzDelivery", "endpoint \(text): ours \(ours?.text ?? "refused"), reference \(reference?.text ?? "refused")",
      input)
  }
}

func checkRedaction(_ bytes: [UInt8], _ input: [UInt8]) {
  guard let length = bytes.first else { return }
  let keyBytes = bytes.dropFirst().prefix(Int(length % 48) + 4).filter { $0 > 0x20 && $0 < 0x7F }
  guard keyBytes.count >= 4 else { return }
  let key = String(decoding: keyBytes, as: UTF8.self)
  let pieces = String(decoding: bytes.dropFirst(1 + keyBytes.count), as: UTF8.self).split(separator: "\u{1}")
  let text = pieces.joined(separator: key) + (pieces.count < 2 ? key : "")
  let clean = ServerText.clean(text, key: Secret(key))
  guard !containsBytes(clean, key),
    !clean.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }),
    clean.utf8.count <= ServerText.maxBytes
  else { fuzzFailure("FuzzDelivery", "redaction of \(text.debugDescription) gave \(clean.debugDescription)", input) }
}

func checkVerdict(_ bytes: [UInt8], _ input: [UInt8]) {
  guard bytes.count >= 2 else { return }
  let status = Int(bytes[0]) << 8 | Int(bytes[1])
  let key = Secret("fuzz-key-0123")
  let response = HTTPResponse(status: status, body: Array(bytes.dropFirst(2)))
  let reasons: [String]
  switch Verdict.of(.success(response), TrackBatch(), nowMs: 0, key: key) {
  case .delivered(let dead): reasons = Array(dead.values)
  case .retry(_, let reason), .split(let reason), .stop(let reason): reasons = [reason]
  }
  for reason in reasons where containsBytes(reason, "fuzz-key-0123") || reason.utf8.count > ServerText.maxBytes + 64 {
    fuzzFailure("FuzzDelivery", "status \(status): reason \(reason.debugDescription)", input)
  }
}

@_cdecl("FuzzDelivery_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
  runFuzzer(argc, argv, fuzzDelivery)
}

/// Byte-wise containment: the key must not appear in the bytes, whatever characters surround it.
func containsBytes(_ text: String, _ key: String) -> Bool {
  let (bytes, needle) = (Array(text.utf8), Array(key.utf8))
  guard bytes.count >= needle.count else { return false }
  return (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
}
