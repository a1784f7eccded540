package import OutboxJSON

/// Why a store cannot be opened: a message for people, and what kind of failure it is. The layer
/// that answers on the wire turns it into a JSON-RPC error and an exit code (`OutboxServer`).
package struct StartupError: Error, Sendable {
  package enum Kind: Sendable {
    /// The store cannot be used; `reason` names why (`unsafe_store`, `missing_data`…), with details.
    case refused(reason: String, details: [JSONMember])
    /// Another process holds the store's lock.
    case locked(pid: String)
    /// A file of a format version this build does not read; nothing was touched.
    case unsupportedVersion(file: String, version: JSONValue)
    /// A file could not be read, or data the store needs is damaged beyond repair.
    case unavailable
  }

  package var message: String
  package var kind: Kind

  package init(_ kind: Kind, _ message: String) {
    self.kind = kind
    self.message = message
  }

  /// The store cannot be used; `reason` names why, e.g. `unsafe_store`, `missing_data`.
  package static func refused(_ reason: String, _ message: String, _ details: [JSONMember] = []) -> StartupError {
    StartupError(.refused(reason: reason, details: details), message)
  }

  /// A file of a format version this build does not read.
  package static func unsupportedVersion(file: String, version: JSONValue) -> StartupError {
    var text: [UInt8] = []
    version.encodeJSON(into: &text)
    return StartupError(
      .unsupportedVersion(file: file, version: version),
      "\(file) has format version \(String(decoding: text, as: UTF8.self)), newer than or unknown to this build; nothing was touched"
    )
  }

  /// A file could not be read, or the store cannot be rebuilt.
  package static func unavailable(_ message: String) -> StartupError { StartupError(.unavailable, message) }
}
