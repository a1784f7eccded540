import OutboxSupport

/// Text that came from Braze's answers (`message`, `errors[].type`) or from the transport, made safe
/// before it is stored, logged or returned: the API key is removed (an endpoint may echo it), control
/// characters are escaped (no forged log lines, no terminal codes), and the length is bounded on a
/// character boundary. Every server text passes through `clean`, in `Verdict`, before it goes anywhere.
package enum ServerText {
  /// Longest text kept: dead-letter reasons, `status.delivery.lastError` and `configError`, stderr.
  package static let maxBytes = 1024

  package static func clean(_ text: String, key: Secret?) -> String {
    // Escaped first, so escaping cannot form the key; redacted, then checked again, since the marker
    // can join neighbouring characters into a new occurrence (FuzzDelivery found `>>>>`); cut last.
    let escaped = text.escapingControlCharacters
    var redacted = key?.redact(escaped) ?? escaped
    if let key, key.redact(redacted) != redacted { redacted = "<server text withheld: it held the API key>" }
    return redacted.prefix(utf8Bytes: maxBytes)
  }
}
