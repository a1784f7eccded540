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
  /// The result's type, which says how the call is answered (`MethodResult.answer`).
  associatedtype Result: MethodResult
  /// Handles one call. Throw `RPCError` for protocol-level failures and `StoreError` for store refusals.
  static func handle(_ params: inout Params, _ service: Service) throws -> Result
}

extension RPCMethod {
  package static var commitsFirst: Bool { false }
}

/// A method's result: its JSON, and how the call is answered, which its type decides.
package protocol MethodResult: JSONEncodable {
  /// How this result is answered: now (the default), after its journal commit, or as a long call.
  var answer: Answer { get }
}

extension MethodResult {
  package var answer: Answer { .now }
}

/// How a call is answered, as its result says (`MethodResult.answer`); `MethodTable` acts on it.
package enum Answer {
  /// The result is written into the reply at once.
  case now
  /// A save's result: its reply is written at once and stands once its journal record is committed
  /// (`Burst.holdSave`), while `awaitsCommit`; else it is acknowledged now.
  case save(SaveResult)
  /// The result stored items: its reply is written once the burst's commit succeeded, and is
  /// `-32003` if that commit fails (`Burst.render`).
  case afterCommit
  /// A long call: its work's end answers it (`LongCalls`).
  case long(LongStart)
}

/// A reply `MethodTable.call` does not write at once: a save's or another result waiting for the
/// commit, or a long call's, written when its work ends (`LongCalls`).
package enum WaitingReply {
  case save(SaveResult)
  case other(any JSONEncodable)
  case long(LongStart)
}

extension JSONValue: MethodResult {}

/// A result with no members worth a type of its own.
package struct ObjectResult: MethodResult {
  package var members: [JSONMember]
  package init(_ members: [JSONMember]) { self.members = members }
  package func encodeJSON(into out: inout [UInt8]) { members.encodeJSONObject(into: &out) }
}
