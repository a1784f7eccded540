import OutboxDomain
import OutboxJSON
import OutboxJSONRPC
import OutboxStore
import OutboxSupport

extension ImportLegacy {
  /// Imports of more elements than this are long calls. Measured with `Tests/bench/loop_stall.py`
  /// (release build, 2 shared cores): 10,000 elements held the loop 33 ms on a quiet machine and
  /// 130 ms on a loaded one; 100,000 (`--max-batch 100000`) 320–370 ms.
  static let longCallElements = 2000
  /// Elements imported per loop turn by a long import.
  static let elementsPerStep = 1000
}

/// `importLegacy`'s answer: the result now (its reply waits for the commit like a save's), or a
/// long call for a large import.
package enum ImportReply: MethodResult {
  case now(ImportResult)
  case long(LongStart)

  package var answer: Answer {
    switch self {
    case .now(let result): result.awaitsCommit ? .afterCommit : .now
    case .long(let start): .long(start)
    }
  }

  package func encodeJSON(into out: inout [UInt8]) {
    if case .now(let result) = self { result.encodeJSON(into: &out) }
  }
}

/// A large `importLegacy` as long work: `elementsPerStep` elements a step, each step's saves
/// committed by the step itself, so the reply names only durable items. A step runs only when no
/// other request's save waits for a commit, so a failed commit takes back this step's saves alone:
/// their elements are answered `-32003`. It cannot be cancelled (its reply says what was saved).
final class LongImport: LongWork {
  private let text: UnsafeMutableBufferPointer<UInt8>
  private let maxDepth: Int
  /// The params read again from `text`, by the first step.
  private var tape: JSONTape?
  private var elements: [GuideStorage.Element] = []
  private var user: [UInt8]?
  private var next = 0
  private var result = ImportResult()

  /// Copies the params out of the request line (which the loop reuses); the first step reads them.
  init(_ params: Params, _ service: Service) {
    let source = params.tape.text(params.objectNode)
    text = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: source.count)
    _ = text.initialize(from: source)
    maxDepth = service.config.maxDepth + 2
  }

  deinit { text.deallocate() }

  var cancellable: Bool { false }

  /// The copy is read again in a step of its own, after the requests behind this one.
  var stepsAtOnce: Bool { false }

  var progress: (done: Int, total: Int) { (next, elements.count) }

  func pollTimeoutMs(_ service: Service) -> Int32 { 0 }

  func cancel(_ service: Service) {}

  /// Reads the copied params (they were read once already, so this cannot fail).
  private func read() -> RPCError? {
    guard let tape = try? JSONTape(UnsafeBufferPointer(text), maxDepth: maxDepth) else {
      return .internalError("importLegacy params did not read back")
    }
    var params = Params(tape: tape, node: tape.root)
    let (elements, user) = ImportLegacy.read(&params)
    (self.tape, self.elements, self.user) = (tape, elements, user.map { Array(tape.text($0.node)) })
    result.outcomes.reserveCapacity(elements.count)
    return nil
  }

  func step(_ service: Service) -> Result<any JSONEncodable, RPCError>? {
    guard let tape else { return read().map { .failure($0) } }
    guard !service.store.hasUncommittedSaves else { return nil }  // the burst's commit comes first
    let end = min(next + ImportLegacy.elementsPerStep, elements.count)
    let first = result.outcomes.count
    result.outcomes += ImportLegacy.run(tape, Array(elements[next..<end]), user: user, service).outcomes
    next = end
    if let failure = service.store.commit() {
      service.log.error("journal write failed (\(failure)); an import's elements were not saved")
      let refusal = StoreError.storageUnavailable(failure.description).rpcError
      for n in first..<result.outcomes.count where result.outcomes[n].saved {
        (result.outcomes[n].ids, result.outcomes[n].warnings, result.outcomes[n].error) = ([], [], refusal)
      }
    }
    guard next == elements.count else { return nil }
    result.pending = service.store.count
    return .success(result)
  }
}
