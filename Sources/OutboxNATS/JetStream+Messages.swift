import OutboxJSON

/// One message a stream holds, read back by its sequence.
package struct StoredMessage: Sendable {
  package var seq: UInt64
  package var subject: String
  package var payload: [UInt8]
}

/// Reading and deleting single messages of a stream (the JetStream API's `STREAM.MSG.GET` and
/// `STREAM.MSG.DELETE`), for the dead letters of a fleet (`<stream>_DEAD`).
extension JetStream {
  /// The stream's first and last sequence and how many messages it holds; nil when there is no
  /// such stream.
  package func streamBounds(
    _ name: String, deadline: Double
  ) throws(NATSError) -> (first: UInt64, last: UInt64, messages: Int64)? {
    let answer = try api("STREAM.INFO." + name, .object([]), deadline: deadline)
    if let error = answer["error"] {
      if error["err_code"]?.intValue == 10059 || error["code"]?.intValue == 404 { return nil }
      throw apiError("STREAM.INFO", error)
    }
    let state = answer["state"]
    let first = UInt64(max(0, state?["first_seq"]?.intValue ?? 0))
    let last = UInt64(max(0, state?["last_seq"]?.intValue ?? 0))
    return (first, last, state?["messages"]?.intValue ?? 0)
  }

  /// The message at `seq`; nil when there is none (deleted, or never there).
  package func message(_ stream: String, seq: UInt64, deadline: Double) throws(NATSError) -> StoredMessage? {
    let answer = try api(
      "STREAM.MSG.GET." + stream, .object([JSONMember("seq", .int(Int64(seq)))]), deadline: deadline)
    if let error = answer["error"] {
      if error["err_code"]?.intValue == 10037 || error["code"]?.intValue == 404 { return nil }
      throw apiError("STREAM.MSG.GET", error)
    }
    guard let message = answer["message"], let subject = message["subject"]?.stringValue,
      let payload = Base64.decode(message["data"]?.stringValue ?? "")
    else { throw NATSError(.protocolError, "STREAM.MSG.GET: no message with a subject and base64 data") }
    return StoredMessage(seq: seq, subject: subject, payload: payload)
  }

  /// Deletes the message at `seq`; false when there was none.
  package func deleteMessage(_ stream: String, seq: UInt64, deadline: Double) throws(NATSError) -> Bool {
    let answer = try api(
      "STREAM.MSG.DELETE." + stream, .object([JSONMember("seq", .int(Int64(seq)))]), deadline: deadline)
    if let error = answer["error"] {
      if error["err_code"]?.intValue == 10057 || error["code"]?.intValue == 404 { return false }
      throw apiError("STREAM.MSG.DELETE", error)
    }
    return answer["success"]?.boolValue ?? false
  }
}
