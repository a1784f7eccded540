package import OutboxJSON
package import OutboxJSONRPC
import OutboxSupport

/// Work a method started that may outlast its request (a `deliverPending` pass). The loop steps it
/// from `Service.tick` between requests; a step never blocks, so the loop keeps serving meanwhile.
package protocol LongWork: AnyObject {
  /// Does what can be done now without waiting; the outcome once the work is over.
  func step(_ service: Service) -> Result<any JSONEncodable, RPCError>?
  /// How long the loop may wait before `step` has something to do (-1: until input comes).
  func pollTimeoutMs(_ service: Service) -> Int32
  /// Work done and the total that makes 100%, for progress notifications.
  var progress: (done: Int, total: Int) { get }
  /// The caller cancelled: start nothing new. Work already in flight finishes in the background
  /// and its outcome is applied as usual.
  func cancel(_ service: Service)
  /// False for work a cancel must not cut short (an import, whose reply names what it saved):
  /// cancelling it does nothing.
  var cancellable: Bool { get }
  /// False for work whose first step should not run inside its request (it is large: the
  /// requests behind it in the same burst are answered first).
  var stepsAtOnce: Bool { get }
}

extension LongWork {
  package var cancellable: Bool { true }
  package var stepsAtOnce: Bool { true }
}

/// What a long method's handler returns: the work, where its progress goes, and how its outcome
/// becomes the reply. The MCP layer's `tools/call` returns the inner method's `LongStart` with
/// its own `progress` and a `finish` that wraps the outcome as a tool result.
package struct LongStart: MethodResult, @unchecked Sendable {  // used on the loop thread only
  /// Turns the work's outcome (or the `-32800` of a cancel) into the reply's body; nil for no reply
  /// (MCP's `tools/call` after a cancel).
  package typealias Finish = @Sendable (Result<any JSONEncodable, RPCError>) -> Result<any JSONEncodable, RPCError>?

  package var work: any LongWork
  package var progress: ProgressTokens
  package var finish: Finish?

  package init(_ work: any LongWork, progress: ProgressTokens = ProgressTokens(), finish: Finish? = nil) {
    self.work = work
    self.progress = progress
    self.finish = finish
  }

  package var answer: Answer { .long(self) }

  /// Never written: `MethodTable` hands a `LongStart` to the loop instead of encoding it.
  package func encodeJSON(into out: inout [UInt8]) { out.appendASCII("null") }
}

/// The long calls in progress, keyed by request id: stepped from `Service.tick`, answered when
/// their work ends or at once with `-32800` when cancelled (`cancel(id:)`, the one entry point of
/// `$/cancelRequest` and `notifications/cancelled`). Replies and progress notifications are
/// gathered in `output`, which the server writes with the next burst (`Server.render`).
///
/// A call without an id (a notification) runs to its end and is never answered nor cancelled.
///
/// For another protocol layer (MCP's `tools/call`): run the inner method through `MethodTable.call`;
/// a long method gives back `WaitingReply.long(start)`. Set `start.progress` (e.g.
/// `ProgressTokens(mcp: token, title: tool)`) and `start.finish` (wrap the outcome as a tool result),
/// and return it from the handler as the result (its `answer` is `.long`): the server answers at once when
/// the work ends in its first step, else later. Cancel with `cancel(id:reason:_:)`.
package final class LongCalls {
  private struct Call {
    var id: RequestID?
    var start: LongStart
    var reporter: ProgressReporter
  }

  private var calls: [Call] = []
  /// Whole lines ready to write (each ending in `\n`): replies and progress notifications.
  package private(set) var output: [UInt8] = []
  /// Calls with an id settled since the last `takeOutput`, for the one-request-one-reply ledger: each
  /// has its reply in `output`, except a cancelled MCP `tools/call`, which gets none.
  package private(set) var replies = 0

  package init() {}

  /// No long call is in progress.
  package var isEmpty: Bool { calls.isEmpty }
  /// Calls in progress that will be answered (they have an id).
  package var awaitingReply: Int { calls.reduce(0) { $0 + ($1.id == nil ? 0 : 1) } }

  /// Takes `start` on: its reply (for request `id`) comes when `step` finds its work over.
  package func add(_ start: LongStart, id: RequestID?) {
    var call = Call(id: id, start: start, reporter: ProgressReporter(start.progress))
    call.reporter.begin(start.work.progress, cancellable: start.work.cancellable, into: &output)
    calls.append(call)
  }

  /// Steps every call; answers those whose work is over.
  package func step(_ service: Service) {
    var n = 0
    while n < calls.count {
      if let outcome = calls[n].start.work.step(service) {
        let call = calls.remove(at: n)
        var reporter = call.reporter
        reporter.end(call.start.work.progress, into: &output)
        answer(call, outcome)
      } else {
        calls[n].reporter.report(calls[n].start.work.progress, into: &output)
        n += 1
      }
    }
  }

  /// Cancels every call in progress with request id `id`: it starts nothing new and is answered
  /// now with `-32800`. Unknown and finished ids (and calls without an id) are left alone.
  package func cancel(id: RequestID, reason: String? = nil, _ service: Service) {
    var n = 0
    while n < calls.count {
      guard calls[n].id == id, calls[n].start.work.cancellable else {
        n += 1
        continue
      }
      let call = calls.remove(at: n)
      call.start.work.cancel(service)
      service.log.info("request \(id) cancelled")
      answer(call, .failure(.requestCancelled(reason)))
    }
  }

  /// How long the loop may wait before a call has work (0: output is waiting to be written).
  package func pollTimeoutMs(_ service: Service) -> Int32 {
    if !output.isEmpty { return 0 }
    var timeout: Int32 = -1
    for call in calls {
      let t = call.start.work.pollTimeoutMs(service)
      if t >= 0 && (timeout < 0 || t < timeout) { timeout = t }
    }
    return timeout
  }

  /// Takes the lines gathered so far and how many of them are replies.
  package func takeOutput() -> (bytes: [UInt8], replies: Int) {
    defer {
      output.removeAll(keepingCapacity: true)
      replies = 0
    }
    return (output, replies)
  }

  private func answer(_ call: Call, _ outcome: Result<any JSONEncodable, RPCError>) {
    guard let id = call.id else { return }
    replies += 1  // settled, for the ledger, also when no reply is written
    guard let body = call.start.finish.map({ $0(outcome) }) ?? .some(outcome) else { return }
    switch body {
    case .success(let result): ResponseWriter.append(Response(id: id, .result(result)), to: &output)
    case .failure(let error): ResponseWriter.append(Response(id: id, .error(error)), to: &output)
    }
    output.append(UInt8(ascii: "\n"))
  }
}

extension LongCalls {
  /// Sleeps until a call has work (at most 100 ms), for a caller that has no input to wait on.
  package func wait(_ service: Service) {
    let ms = pollTimeoutMs(service)
    usleep(useconds_t(ms < 0 ? 5 : min(max(ms, 1), 100)) * 1000)
  }
}

extension LongWork {
  /// Runs the work to its end on the calling thread (a long method inside a batch, whose one reply
  /// line holds all its members' replies).
  func runToEnd(_ service: Service) -> Result<any JSONEncodable, RPCError> {
    while true {
      if let outcome = step(service) { return outcome }
      let ms = pollTimeoutMs(service)
      usleep(useconds_t(ms < 0 ? 5 : min(max(ms, 1), 100)) * 1000)
    }
  }
}

extension Server {
  /// Starts a long method's work for request `id` (nil: a notification). Work that ends in its
  /// first step, or any inside a batch, is answered in place like any other call; otherwise the
  /// loop's `LongCalls` takes it on. Returns true when a reply was appended to the burst.
  func startLong(_ start: LongStart, id: RequestID?) -> Bool {
    let work = start.work
    let outcome = inBatch ? work.runToEnd(service) : work.stepsAtOnce ? work.step(service) : nil
    guard let outcome else {
      service.longCalls.add(start, id: id)
      if id != nil { burst.countDeferred() }
      return false
    }
    guard let id else { return false }
    burst.countReply()
    guard let body = start.finish.map({ $0(outcome) }) ?? .some(outcome) else { return false }
    switch body {
    case .success(let result): burst.write { ResponseWriter.append(Response(id: id, .result(result)), to: &$0) }
    case .failure(let error): burst.write { ResponseWriter.append(Response(id: id, .error(error)), to: &$0) }
    }
    return true
  }
}
