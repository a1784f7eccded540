import OutboxJSON
import OutboxSupport

/// A JetStream key-value bucket (the stream `KV_<bucket>` on subjects `$KV.<bucket>.>`, one value
/// per key, `discard: new`, a bucket-wide TTL as the stream's `max_age`), with what leader election
/// needs: `create` (only when the key is absent), `update` (only at the revision read: compare and
/// set), and `get` (the latest value and its revision).
package struct NATSKeyValue {
  package let stream: JetStream
  package let bucket: String

  package init(_ stream: JetStream, bucket: String) {
    self.stream = stream
    self.bucket = bucket
  }

  /// The bucket's value: its bytes and revision (the stream sequence that stored it).
  package struct Entry: Sendable, Equatable {
    package var value: [UInt8]
    package var revision: UInt64
  }

  package enum Write: Sendable, Equatable {
    case stored(revision: UInt64)
    /// Refused: the key exists (create) or moved past the revision (update).
    case conflict(String)
  }

  /// Creates the bucket when missing, with `ttlSeconds` as the age at which values expire.
  package func ensureBucket(ttlSeconds: Int64, deadline: Double) throws(NATSError) {
    guard try stream.streamConfig("KV_" + bucket, deadline: deadline) == nil else { return }
    let ns = ttlSeconds * 1_000_000_000
    let config = JSONValue.object([
      JSONMember("name", .string("KV_" + bucket)), JSONMember("subjects", .array([.string("$KV.\(bucket).>")])),
      JSONMember("retention", .string("limits")), JSONMember("storage", .string("file")),
      JSONMember("discard", .string("new")), JSONMember("max_msgs_per_subject", .int(1)),
      JSONMember("max_age", .int(ns)), JSONMember("duplicate_window", .int(min(ns, 120_000_000_000))),
      JSONMember("allow_rollup_hdrs", .bool(true)), JSONMember("deny_delete", .bool(true)),
      JSONMember("num_replicas", .int(1)),
    ])
    let answer = try stream.api("STREAM.CREATE.KV_" + bucket, config, deadline: deadline)
    if let error = answer["error"] { throw stream.apiError("STREAM.CREATE", error) }
  }

  package func create(_ key: String, _ value: [UInt8], deadline: Double) throws(NATSError) -> Write {
    try put(key, value, expected: 0, deadline: deadline)
  }

  package func update(
    _ key: String, _ value: [UInt8], revision: UInt64, deadline: Double
  ) throws(NATSError)
    -> Write
  {
    try put(key, value, expected: revision, deadline: deadline)
  }

  private func put(_ key: String, _ value: [UInt8], expected: UInt64, deadline: Double) throws(NATSError) -> Write {
    let message = OutgoingMessage(
      subject: "$KV.\(bucket).\(key)", headers: [NATSHeader("Nats-Expected-Last-Subject-Sequence", String(expected))],
      payload: value)
    switch try stream.publish([message], to: "KV_" + bucket, deadline: deadline).first ?? nil {
    case .stored(let seq, _)?: return .stored(revision: seq)
    case .refused(let text, let code)?:
      guard code == 10071 || text.contains("wrong last sequence") else {
        throw NATSError(.refused, "KV \(bucket).\(key): \(text) (\(code))")
      }
      return .conflict(text)
    case nil: throw NATSError(.timeout, "KV \(bucket).\(key): no publish ack before the deadline")
    }
  }

  /// The key's latest value, nil when it has none (never set, expired, or deleted).
  package func get(_ key: String, deadline: Double) throws(NATSError) -> Entry? {
    let answer = try stream.api(
      "STREAM.MSG.GET.KV_" + bucket, .object([JSONMember("last_by_subj", .string("$KV.\(bucket).\(key)"))]),
      deadline: deadline)
    if let error = answer["error"] {
      if error["err_code"]?.intValue == 10037 || error["code"]?.intValue == 404 { return nil }
      throw stream.apiError("STREAM.MSG.GET", error)
    }
    guard let message = answer["message"], let seq = message["seq"]?.intValue, seq > 0 else {
      throw NATSError(.protocolError, "STREAM.MSG.GET: no message in the answer")
    }
    if let headers = message["hdrs"]?.stringValue.flatMap(Base64.decode),
      String(decoding: headers, as: UTF8.self).contains("KV-Operation")
    {
      return nil  // a delete or purge marker
    }
    guard let value = Base64.decode(message["data"]?.stringValue ?? "") else {
      throw NATSError(.protocolError, "STREAM.MSG.GET: data is not base64")
    }
    return Entry(value: value, revision: UInt64(seq))
  }
}

/// Standard base64 (RFC 4648, with padding), as the JetStream API sends message bytes.
enum Base64 {
  static func decode(_ text: String) -> [UInt8]? {
    var out: [UInt8] = []
    var bits: UInt32 = 0
    var count = 0
    for byte in text.utf8 {
      if byte == UInt8(ascii: "=") { break }
      guard let value = sextet(byte) else { return nil }
      bits = bits << 6 | UInt32(value)
      count += 6
      if count >= 8 {
        count -= 8
        out.append(UInt8(truncatingIfNeeded: bits >> UInt32(count)))
      }
    }
    return out
  }

  private static func sextet(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte - UInt8(ascii: "A")
    case UInt8(ascii: "a")...UInt8(ascii: "z"): byte - UInt8(ascii: "a") + 26
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0") + 52
    case UInt8(ascii: "+"): 62
    case UInt8(ascii: "/"): 63
    default: nil
    }
  }
}
