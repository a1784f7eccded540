package import OutboxJSON

/// One wire method: its name, and a handler that reads params and returns a result.
///
/// Method types are caseless enums named after the wire name (`enum SaveCustomEvent`), one per file
/// in `Methods/`. The wire name appears here once, as `name`, and once in `Protocol/openrpc.json`.
package protocol RPCMethod {
  static var name: String { get }
  /// True for methods that hand items out: earlier saves are made durable before they run,
  /// so nothing handed out can later be rolled back.
  static var commitsFirst: Bool { get }
  associatedtype Result: JSONEncodable
  /// Handles one call. Throw `RPCError` for protocol-level failures and `StoreError` for store refusals.
  static func handle(_ params: inout Params, _ service: Service) throws -> Result
}

extension RPCMethod {
  package static var commitsFirst: Bool { false }
}

/// A result that stored items: its reply waits for the journal commit while `awaitsCommit` is true,
/// and becomes `-32003` if that commit fails (see `Server.commit`).
package protocol AwaitsCommit: JSONEncodable, Sendable {
  var awaitsCommit: Bool { get }
}

/// A reply that is not written at once: a save's or another result waiting for the commit, or a
/// long call's, written when its work ends (`LongCalls`).
package enum WaitingReply {
  case save(SaveResult)
  case other(any AwaitsCommit)
  case long(LongStart)
}

/// A result with no members worth a type of its own.
package struct ObjectResult: JSONEncodable {
  package var members: [JSONMember]
  package init(_ members: [JSONMember]) { self.members = members }
  package func encodeJSON(into out: inout [UInt8]) { members.encodeJSONObject(into: &out) }
}
