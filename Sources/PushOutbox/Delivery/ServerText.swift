/// Text that came from Braze's answers (`message`, `errors[].type`) or from the transport, made safe
/// before it is stored, logged or returned: the API key is removed (an endpoint may echo it), control
/// characters are escaped (no forged log lines, no terminal codes), and the length is bounded on a
/// character boundary. Every server text passes through `clean`, in `Verdict`, before it goes anywhere.
enum ServerText {
  /// Longest text kept: dead-letter reasons, `status.delivery.lastError` and `configError`, stderr.
  static let maxBytes = 1024

  static func clean(_ text: String, key: Secret?) -> String {
    let redacted = key?.redact(text) ?? text
    return redacted.escapingControlCharacters.prefix(utf8Bytes: maxBytes)
  }
}
