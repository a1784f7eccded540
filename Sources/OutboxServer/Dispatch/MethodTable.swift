import OutboxJSON
package import OutboxJSONRPC
package import OutboxStore

/// The wire methods by name. The only place that decodes params, maps store refusals to
/// JSON-RPC errors, and answers "method not found".
package struct MethodTable: Sendable {
  /// Writes the result into the buffer, or returns a reply that is not written at once.
  typealias Handler = @Sendable (inout Params, Service, inout [UInt8]) throws -> WaitingReply?

  /// Registered methods in order; dispatch compares the method's bytes (code points), never hashes a String.
  private var entries: [Method] = []
  package private(set) var names: [String] = []
  /// The registered names, for reading requests (`RequestLine.read`).
  package private(set) var known = KnownMethods([])

  /// One registered method, as `method(_:)` finds it for `call`.
  package struct Method: Sendable {
    fileprivate var name: [UInt8]
    /// True when earlier saves must be committed to the journal before it runs (`RPCMethod.commitsFirst`).
    let commitsFirst: Bool
    fileprivate var handler: Handler
  }

  package init(_ methods: [any RPCMethod.Type]) {
    for method in methods { register(method) }
    known = KnownMethods(names)
  }

  /// Every method push-outbox serves.
  package static let standard = MethodTable([
    ParsePayload.self, SaveCustomEvent.self, SaveCustomAttribute.self, SaveUserAttribute.self,
    FlushPending.self, AckFlush.self, ReleaseFlush.self, Status.self, Discover.self, ListDeadLetters.self,
    RequeueDeadLetters.self, DropDeadLetters.self, DeliverPending.self, ImportLegacy.self, CancelRequest.self,
    CancelledNotification.self, Shutdown.self, Exit.self,
  ])

  private mutating func register<M: RPCMethod>(_ method: M.Type) {
    precondition(!names.contains { sameText($0, M.name) }, "method \(M.name) registered twice")
    names.append(M.name)
    entries.append(
      Method(name: Array(M.name.utf8), commitsFirst: M.commitsFirst) { params, service, out in
        let result = try M.handle(&params, service)
        switch result.answer {  // the result's type says how it is answered
        case .now:
          result.encodeJSON(into: &out)
          return nil
        case .save(let save):
          if save.awaitsCommit { return .save(save) }
          if !save.receipt.duplicate { service.counters.countSave(save.kind) }  // nothing to commit: acknowledged now
          save.encodeJSON(into: &out)
          return nil
        case .afterCommit:
          return .other(result)
        case .long(let start):
          return .long(start)
        }
      })
  }

  /// The method `request` names, or nil when this table has none of that name.
  func method(_ request: Request) -> Method? {
    for entry in entries {
      let found = entry.name.withUnsafeBufferPointer { request.tape.stringEquals(request.methodNode, bytes: $0) }
      if found { return entry }
    }
    return nil
  }

  /// Finds the method `request` names and runs it (`call(_:_:_:into:)`).
  package func call(_ request: Request, _ service: Service, into out: inout [UInt8]) throws(RPCError) -> WaitingReply? {
    try call(method(request), request, service, into: &out)
  }

  /// Runs `request` with `method` (as `method(_:)` found it; nil answers "method not found") and
  /// appends its result JSON to `out` (or returns a result that waits for the journal commit, or a
  /// long call's start), or throws the error to answer with.
  func call(
    _ method: Method?, _ request: Request, _ service: Service, into out: inout [UInt8]
  ) throws(RPCError) -> WaitingReply? {
    if service.lifecycle.shutDown && request.method != Exit.name { throw .shuttingDown }
    guard let entry = method else {
      let names = entries.map { String(decoding: $0.name, as: UTF8.self) }
      throw .methodNotFound(request.method, didYouMean: Self.nearest(request.method, names))
    }
    if request.mayHaveDuplicateKeys, request.paramsNode >= 0,
      let path = request.tape.duplicateKeyPath(request.paramsNode)
    {
      throw .invalidParams(path: path, code: "duplicate_key", "the key at \(path) appears more than once")
    }
    var params = try Params(request)
    do {
      return try entry.handler(&params, service, &out)
    } catch let error as RPCError {
      throw error
    } catch let error as StoreError {
      throw error.rpcError
    } catch {
      throw .internalError("\(error)")
    }
  }
}

extension StoreError {
  /// The JSON-RPC error for each store refusal.
  package var rpcError: RPCError {
    switch self {
    case .storeFull(let limit, let value, let current):
      .app(
        .storeFull, "store_full", "Store full",
        [JSONMember("limit", .string(limit)), JSONMember("value", .int(Int64(value)))]
          + (current.map { [JSONMember("max", .int(Int64(value))), JSONMember("current", .int(Int64($0)))] } ?? []))
    case .itemTooLarge(let bytes, let limit):
      .app(
        .itemTooLarge, "item_too_large", "Item too large",
        [JSONMember("bytes", .int(Int64(bytes))), JSONMember("limit", .int(Int64(limit)))])
    case .leaseNotFound(let flushId):
      .app(.leaseNotFound, "lease_not_found", "Lease not found", [JSONMember("flushId", .string(flushId))])
    case .storageUnavailable(let detail):
      .app(.storageUnavailable, "storage_unavailable", "Storage unavailable", [JSONMember("detail", .string(detail))])
    }
  }
}
