/// The wire methods by name. The only place that decodes params, maps store refusals to
/// JSON-RPC errors, and answers "method not found".
package struct MethodTable: Sendable {
  /// Writes the result into the buffer, or returns a save's result that must wait for the commit.
  package typealias Handler = @Sendable (inout Params, Service, inout [UInt8]) throws -> SaveResult?

  private var handlers: [String: Handler] = [:]
  private var committingFirst: Set<String> = []
  package private(set) var names: [String] = []

  package init(_ methods: [any RPCMethod.Type]) {
    for method in methods { register(method) }
  }

  /// Every method push-outbox serves.
  package static let standard = MethodTable([
    ParsePayload.self, SaveCustomEvent.self, SaveCustomAttribute.self, SaveUserAttribute.self,
    FlushPending.self, AckFlush.self, ReleaseFlush.self, Status.self, Discover.self,
  ])

  private mutating func register<M: RPCMethod>(_ method: M.Type) {
    precondition(handlers[M.name] == nil, "method \(M.name) registered twice")
    names.append(M.name)
    if M.commitsFirst { committingFirst.insert(M.name) }
    handlers[M.name] = { params, service, out in
      let result = try M.handle(&params, service)
      if let save = result as? SaveResult, save.awaitsCommit { return save }
      result.encodeJSON(into: &out)
      return nil
    }
  }

  /// True when `method` must see earlier saves committed to the journal first.
  package func commitsFirst(_ method: String) -> Bool { committingFirst.contains(method) }

  /// Runs `request` and appends its result JSON to `out` (or returns a save result that waits for the
  /// journal commit), or throws the error to answer with.
  package func call(_ request: Request, _ service: Service, into out: inout [UInt8]) throws(RPCError) -> SaveResult? {
    guard let handler = handlers[request.method] else { throw .methodNotFound(request.method) }
    if request.mayHaveDuplicateKeys, let params = request.params, let path = duplicateKeyPath(in: params) {
      throw .invalidParams(path: path, code: "duplicate_key", "the key at \(path) appears more than once")
    }
    var params = try Params(request.params)
    do {
      return try handler(&params, service, &out)
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
    case .storeFull(let limit, let value):
      .app(.storeFull, "store_full", "Store full", [JSONMember("limit", .string(limit)), JSONMember("value", .int(Int64(value)))])
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
