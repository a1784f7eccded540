import OutboxDelivery
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

extension FlushPending {
  /// A flush handing out more items than this, or more body bytes than `longCallBytes`, is a
  /// long call: its items are taken at once, and its reply is written in steps of `itemsPerStep`
  /// items across loop turns. Measured with `Tests/bench/loop_stall.py` (release build, 2 shared
  /// cores): writing the reply of 100,000 items inline held the loop 258 ms; taking them (the pick,
  /// the copy and the journal record) is about a tenth of that.
  static let longCallItems = 20_000
  static let longCallBytes = 8 << 20
  /// Items written per loop turn by a long flush.
  static let itemsPerStep = 10_000

  /// The reply now, or a long call for a large set (the items are taken either way).
  static func reply(_ result: FlushResult, _ shape: Shape, _ service: Service) -> FlushReply {
    let bytes = result.items.reduce(0) { $0 + $1.body.count }
    guard result.items.count > longCallItems || bytes > longCallBytes else {
      return .now(render(result, shape, service))
    }
    return .long(LongStart(LongFlush(result, builder: shape.usersTrack ? trackBuilder(result, shape, service) : nil)))
  }

  /// The result with its `/users/track` bodies written, in one go.
  static func render(_ result: FlushResult, _ shape: Shape, _ service: Service) -> FlushResult {
    guard shape.usersTrack else { return result }
    var result = result
    var builder = trackBuilder(result, shape, service)
    for item in result.items { builder.add(item) }
    result.requests = builder.finish().filter { $0.objectCount > 0 }
    return result
  }

  static func trackBuilder(_ result: FlushResult, _ shape: Shape, _ service: Service) -> UsersTrack.Builder {
    UsersTrack.Builder(
      superseded: result.superseded, defaultUser: shape.defaultUser, limit: service.config.trackBatchLimit,
      mode: service.config.trackBatchMode)
  }
}

/// `flushPending`'s answer: the result now, or a long call that writes a large one across loop turns.
package enum FlushReply: MethodResult {
  case now(FlushResult)
  case long(LongStart)

  package var answer: Answer { if case .long(let start) = self { .long(start) } else { .now } }

  package func encodeJSON(into out: inout [UInt8]) {
    if case .now(let result) = self { result.encodeJSON(into: &out) }
  }
}

/// The reply of a large flush, written `itemsPerStep` items a step. The items were taken (drained
/// or leased, and journaled) when the request was read, so the requests behind it are answered
/// first while nothing they do can change what it hands out. It cannot be cancelled: what it took
/// is already out of the pending set, and only its reply says what that was.
final class LongFlush: LongWork {
  private var result: FlushResult
  private var builder: UsersTrack.Builder?
  private var text: [UInt8] = []
  private var savedAtText = UTCTimeText()
  private var next = 0

  init(_ result: FlushResult, builder: UsersTrack.Builder?) {
    self.result = result
    self.builder = builder
    if builder == nil { text.reserveCapacity(result.renderedSize) }
  }

  var cancellable: Bool { false }

  /// The first step runs in a turn of its own, after the requests behind this one.
  var stepsAtOnce: Bool { false }

  var progress: (done: Int, total: Int) { (next, result.items.count) }

  func pollTimeoutMs(_ service: Service) -> Int32 { 0 }

  func cancel(_ service: Service) {}

  func step(_ service: Service) -> Result<any JSONEncodable, RPCError>? {
    let end = min(next + FlushPending.itemsPerStep, result.items.count)
    if builder != nil {
      for n in next..<end { builder!.add(result.items[n]) }
    } else {
      for n in next..<end {
        let item = result.items[n]
        if n > 0 { text.append(UInt8(ascii: ",")) }
        item.encodeJSON(into: &text, superseded: result.superseded.contains(item.seq), savedAtText: &savedAtText)
      }
    }
    next = end
    guard next == result.items.count else { return nil }
    if builder != nil {
      result.requests = builder!.finish().filter { $0.objectCount > 0 }
    } else {
      result.renderedItems = text
    }
    return .success(result)
  }
}
