import OutboxJSON
package import OutboxJSONRPC
package import OutboxStore

/// The wire methods by name. The only place that decodes params, maps store refusals to
/// JSON-RPC errors, and answers "method not found".
package struct MethodTable: Sendable {
  /// Writes the result into the buffer, or returns a reply that is not written at once.
  typealias Handler = @Sendable (inout Params, Service, inout [UInt8]) throws -> WaitingReply?

  /// Registered methods in order; dispatch compares the method's bytes (code points), never hashes a String.
  private var entries: [Entry] = []
  package private(set) var names: [String] = []
  /// The registered names, for reading requests (`RequestLine.read`).
  package private(set) var known = KnownMethods([])

  private struct Entry: Sendable {
    var name: [UInt8]
    var commitsFirst: Bool
    var handler: Handler
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
    let mayBeLong = M.Result.self is any LongResult.Type
    entries.append(
      Entry(name: Array(M.name.utf8), commitsFirst: M.commitsFirst) { params, service, out in
        let result = try M.handle(&params, service)
        if mayBeLong, let start = (result as? any LongResult)?.longStart { return .long(start) }
        if let save = result as? SaveResult {
          if save.awaitsCommit { return .save(save) }
          if !save.receipt.duplicate { service.counters.countSave(save.kind) }  // nothing to commit: acknowledged now
        } else if let waiting = result as? any AwaitsCommit, waiting.awaitsCommit {
          return .other(waiting)
        }
        result.encodeJSON(into: &out)
        return nil
      })
  }

  /// True when `method` must see earlier saves committed to the journal first.
  func commitsFirst(_ method: String) -> Bool {
    let count = method.utf8.count
    return entries.contains { $0.commitsFirst && $0.name.count == count && $0.name.elementsEqual(method.utf8) }
  }

  /// The entry whose name is the method of `request`.
  private func entry(_ request: Request) -> Entry? {
    for entry in entries {
      let found = entry.name.withUnsafeBufferPointer { request.tape.stringEquals(request.methodNode, bytes: $0) }
      if found { return entry }
    }
    return nil
  }

  /// Runs `request` and appends its result JSON to `out` (or returns a result that waits for the
  /// journal commit), or throws the error to answer with.
  package func call(_ request: Request, _ service: Service, into out: inout [UInt8]) throws(RPCError) -> WaitingReply? {
    if service.lifecycle.shutDown && request.method != Exit.name { throw .shuttingDown }
    guard let entry = entry(request) else {
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
