import Dispatch
package import OutboxJSON
package import OutboxJSONRPC
import OutboxSupport

/// The dead letters of a fleet's stream (`<stream>_DEAD`), for `listDeadLetters`,
/// `requeueDeadLetters` and `dropDeadLetters` with `fleet: true` in a server started with a NATS
/// address (`--relay` or `--deliver --from`). Implemented over NATS in OutboxCommandLine. Every
/// call waits on the network, so the methods run it on a thread of its own (`OffLoopCall`).
package protocol FleetDeadLetters: Sendable {
  /// `{"deadLetters": [{"reason", "item", "seq"}], "total"}`, at most `max` of them.
  func list(max: Int) throws(RPCError) -> JSONValue
  /// `{"requeued"}`: each named (or every) dead letter published again to the stream, then deleted.
  func requeue(ids: [String]?) throws(RPCError) -> JSONValue
  /// `{"dropped"}`: the named dead letters deleted from `<stream>_DEAD`.
  func drop(ids: [String]) throws(RPCError) -> JSONValue
}

/// A call that waits on something slow (the network), run on a thread of its own while the loop
/// keeps serving: a long call answered when the thread is done. It cannot be cancelled (the work
/// changes what the stream holds; only its reply says what).
final class OffLoopCall: LongWork {
  private let outcome = Mailbox<Result<JSONValue, RPCError>>()
  private var done = false

  init(_ work: @escaping @Sendable () throws(RPCError) -> JSONValue) {
    let outcome = self.outcome
    DispatchQueue(label: "push-outbox.off-loop").async {
      do throws(RPCError) { outcome.put(.success(try work())) } catch { outcome.put(.failure(error)) }
    }
  }

  func step(_ service: Service) -> Result<any JSONEncodable, RPCError>? {
    guard let result = outcome.take() else { return nil }
    done = true
    return result.map { $0 }
  }

  func pollTimeoutMs(_ service: Service) -> Int32 { 5 }
  var progress: (done: Int, total: Int) { (done ? 1 : 0, 1) }
  func cancel(_ service: Service) {}
  var cancellable: Bool { false }
}

/// A dead-letter method's answer: from the store now, or from the fleet's stream as a long call.
package enum DeadLetterReply<Local: JSONEncodable>: MethodResult {
  case now(Local)
  case long(LongStart)

  package var answer: Answer { if case .long(let start) = self { .long(start) } else { .now } }

  package func encodeJSON(into out: inout [UInt8]) {
    if case .now(let result) = self { result.encodeJSON(into: &out) }
  }

  /// `fleet: true` asks for the stream's dead letters: the long call, or a `-32602` naming why not.
  static func fleet(
    _ asked: Bool, _ service: Service, _ work: @escaping @Sendable (any FleetDeadLetters) throws(RPCError) -> JSONValue
  ) throws(RPCError) -> DeadLetterReply? {
    guard asked else { return nil }
    guard let stream = service.fleetDeadLetters else {
      throw .invalidParams(
        path: "fleet", code: "no_fleet",
        "fleet: true needs a server started with a NATS address (--relay or --deliver --from)")
    }
    return .long(LongStart(OffLoopCall { () throws(RPCError) in try work(stream) }))
  }
}
