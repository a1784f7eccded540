package import OutboxDomain
package import OutboxJSON
package import OutboxStore
package import OutboxSupport

/// How `/users/track` bodies are cut: at most `limit` objects combined across the arrays (Braze's
/// current rule, valid for every account), or `limit` per array (`--track-batch-mode per-array`).
package enum TrackBatchMode: String, Sendable, CaseIterable {
  case combined
  case perArray = "per-array"
}

/// The one body-cutting rule, for `UsersTrack.batches` and delivery's requests: a body is full at
/// `limit` objects in all (`combined`) or at `limit` in the object's own array (`perArray`).
struct BatchFill {
  let limit: Int
  let mode: TrackBatchMode
  private(set) var attributes = 0
  private(set) var events = 0

  init(limit: Int, mode: TrackBatchMode) {
    self.limit = max(1, limit)
    self.mode = mode
  }

  var objects: Int { attributes + events }

  /// True when the body has no room for one more object of this kind.
  func isFull(adding isEvent: Bool) -> Bool {
    switch mode {
    case .combined: objects >= limit
    case .perArray: (isEvent ? events : attributes) >= limit
    }
  }

  mutating func add(isEvent: Bool) {
    if isEvent { events += 1 } else { attributes += 1 }
  }
}

/// Turns flushed items into `POST /users/track` request bodies.
///
/// Each item becomes one object carrying exactly one identifier, with its saved `time`. Bodies are
/// filled in seq order, so attribute objects keep their order across bodies, and Braze applies a
/// body's attributes before its events, so applying the bodies in order gives the same profile state
/// as applying the saves in order. Superseded user attributes are not sent.
///
/// Objects are copied from the stored body bytes (`TrackObject`); a body that renderer does not
/// know is parsed and its object built as a tree (`treeObject`), which writes the same bytes.
package enum UsersTrack {
  /// Request bodies `{attributes, events}` as JSON text, cut by `mode` at `limit`.
  package static func requests(
    _ items: [PendingItem], superseded: Set<UInt64>, defaultUser: UserIdentifier?, limit: Int,
    mode: TrackBatchMode = .combined
  ) -> [[UInt8]] {
    var builder = Builder(superseded: superseded, defaultUser: defaultUser, limit: limit, mode: mode)
    for item in items { builder.add(item) }
    return builder.finish().filter { $0.objectCount > 0 }.map {
      var body: [UInt8] = []
      $0.appendBody(to: &body)
      return body
    }
  }

  /// The bodies with the seqs behind each object. Items with no identifier (and no default user) are left out.
  static func batches(
    _ items: [PendingItem], superseded: Set<UInt64>, defaultUser: UserIdentifier?, limit: Int, mode: TrackBatchMode
  ) -> [TrackBatch] {
    var builder = Builder(superseded: superseded, defaultUser: defaultUser, limit: limit, mode: mode)
    for item in items { builder.add(item) }
    return builder.finish()
  }

  /// Fills bodies one item at a time (so a long flush can render across loop turns).
  package struct Builder {
    let superseded: Set<UInt64>
    let defaultUser: UserIdentifier?
    /// `defaultUser`'s identifier members, written once.
    let defaultMembers: [UInt8]?
    let limit: Int
    let mode: TrackBatchMode
    private(set) var batches: [TrackBatch] = []
    private var current = TrackBatch()
    private var fill: BatchFill
    private var carried: [UInt64] = []  // superseded items, acked with the body that follows them
    private var object: [UInt8] = []

    package init(superseded: Set<UInt64>, defaultUser: UserIdentifier?, limit: Int, mode: TrackBatchMode) {
      self.superseded = superseded
      self.defaultUser = defaultUser
      defaultMembers = defaultUser.map { user in
        var out: [UInt8] = []
        user.trackMembers.encodeJSONObject(into: &out)
        return Array(out.dropFirst().dropLast())
      }
      self.limit = limit
      self.mode = mode
      fill = BatchFill(limit: limit, mode: mode)
    }

    /// Objects added so far, in all bodies.
    package private(set) var objects = 0

    /// Adds the item's object. `verify` is asked, for an item not known canonical whose body the
    /// renderer cannot read, whether the store accepts the body; false: nothing is added (returns false).
    @discardableResult
    package mutating func add(_ item: PendingItem, verify: () -> Bool = { true }) -> Bool {
      if isSuperseded(item.seq) { return true }
      object.removeAll(keepingCapacity: true)
      let outcome = item.body.withUnsafeBytes {
        TrackObject.append(
          kind: item.kind, hasUser: item.hasUser, body: $0, known: item.canonical, defaultUser: defaultMembers,
          into: &object)
      }
      switch outcome {
      case .rendered: break
      case .noUser: return true
      case .unknown:
        guard item.canonical || verify() else { return false }
        guard let tree = UsersTrack.treeObject(item, defaultUser: defaultUser) else { return true }
        tree.encodeJSON(into: &object)
      }
      object.withUnsafeBytes { place(seq: item.seq, isEvent: item.kind == .customEvent, $0) }
      return true
    }

    /// Writes a held item's object from its body's parts as the store holds them
    /// (`TrackObject.appendEvent`: a custom event naming a user, in a save's layout) to `out`, for
    /// `add(seq:event:)`. `known`: the store knows the body canonical. False when they are not a
    /// layout it writes from: nothing was written, and the caller adds the whole item (`add(_:verify:)`).
    /// Reads nothing but its arguments, so rows can be written on several threads.
    package static func writeEvent(
      kind: ItemKind, hasUser: Bool, savedAt: Int64, known: Bool, parts: HeldParts, time: inout UTCTimeText,
      into out: inout [UInt8]
    ) -> Bool {
      guard kind == .customEvent, hasUser else { return false }
      return TrackObject.appendEvent(parts, savedAt: savedAt, known: known, time: &time, into: &out) == .rendered
    }

    /// Adds the custom event object of item `seq` that `writeEvent` wrote.
    package mutating func add(seq: UInt64, event: UnsafeRawBufferPointer) {
      if isSuperseded(seq) { return }
      place(seq: seq, isEvent: true, event)
    }

    /// Superseded items are carried to the next body's seqs, with no object.
    private mutating func isSuperseded(_ seq: UInt64) -> Bool {
      guard !superseded.isEmpty, superseded.contains(seq) else { return false }  // most supersede nothing: no hashing
      carried.append(seq)
      return true
    }

    /// Puts the object just written in the current body (a new one when it is full).
    private mutating func place(seq: UInt64, isEvent: Bool, _ bytes: UnsafeRawBufferPointer) {
      if fill.isFull(adding: isEvent) {
        batches.append(current)
        (current, fill) = (TrackBatch(sizedLike: current), BatchFill(limit: limit, mode: mode))
      }
      fill.add(isEvent: isEvent)
      objects += 1
      if !carried.isEmpty {
        current.seqs += carried
        carried.removeAll()
      }
      current.seqs.append(seq)
      current.add(bytes, isEvent: isEvent, seq: seq)
    }

    /// The bodies, the last one included (a body of only superseded items has no objects).
    package mutating func finish() -> [TrackBatch] {
      if current.objectCount > 0 || !carried.isEmpty {
        current.seqs += carried
        carried.removeAll()
        batches.append(current)
        current = TrackBatch()
      }
      return batches
    }
  }

  /// The item's object built as a tree from its parsed body; nil when it has no user and there is
  /// no default user.
  static func treeObject(_ item: PendingItem, defaultUser: UserIdentifier?) -> JSONValue? {
    let members = item.members  // the body, parsed once: the user and the object come from it
    guard let user = item.user(members) ?? defaultUser else { return nil }
    if item.kind == .customEvent { return .object(user.trackMembers + event(members)) }
    return .object(user.trackMembers + [attribute(item.kind, members)])
  }

  private static func attribute(_ kind: ItemKind, _ members: [JSONMember]) -> JSONMember {
    guard kind == .userAttribute else { return customAttribute(members) }
    return JSONMember(members["field"]?.stringValue ?? "", members["value"] ?? .null)
  }

  /// An event without properties (none saved, or `{}`) is sent without the key, as the SDKs send it.
  private static func event(_ members: [JSONMember]) -> [JSONMember] {
    var event = [JSONMember("name", members["name"] ?? .null), JSONMember("time", members["time"] ?? .null)]
    if let properties = members["properties"], properties.objectValue?.isEmpty != true {
      event.append(JSONMember("properties", properties))
    }
    return event
  }

  private static func customAttribute(_ members: [JSONMember]) -> JSONMember {
    let key = members["key"]?.stringValue ?? ""
    let value = members["value"] ?? .null
    switch members["op"]?.stringValue {
    case "inc": return JSONMember(key, .object([JSONMember("inc", value)]))
    case "add": return JSONMember(key, .object([JSONMember("add", value)]))
    case "remove": return JSONMember(key, .object([JSONMember("remove", value)]))
    case "unset": return JSONMember(key, .null)
    default: return JSONMember(key, value)
    }
  }
}

extension Array where Element == PendingItem {
  /// Seqs of user-attribute items that a later item in this list sets again for the same user and field.
  /// Keys compare by bytes (code points), never by canonical equivalence.
  package var supersededSeqs: Set<UInt64> { Set(replacedBy.keys) }

  /// For each superseded user attribute (see `supersededSeqs`), the seq of the last item that sets
  /// its user and field again: the value Braze is sent instead.
  package var replacedBy: [UInt64: UInt64] {
    var latest: [ByteKey: UInt64] = [:]
    var keys: [UInt64: ByteKey] = [:]
    for index in indices where self[index].kind == .userAttribute {  // no copy of the other items
      let item = self[index]
      let members = item.members
      let key = ByteKey(
        (members["user"].map(UserIdentifier.key) ?? "") + "\u{0}" + (members["field"]?.stringValue ?? ""))
      latest[key] = item.seq
      keys[item.seq] = key
    }
    var replaced: [UInt64: UInt64] = [:]
    for (seq, key) in keys where latest[key] != seq { replaced[seq] = latest[key] }
    return replaced
  }

  /// Of a request's items (this list), the values it carried without sending them (superseded) that
  /// Braze did not take a newer value for: the newer value was refused by name (`dead`), or it was not
  /// in the request. They go back to pending instead of counting as delivered, so a refused newer
  /// value never costs the user the older one (issue 40's end-to-end model).
  package func carriedButNotReplaced(sent objects: Set<UInt64>, dead: Set<UInt64>) -> Set<UInt64> {
    guard contains(where: { !objects.contains($0.seq) }) else { return [] }
    let replaced = replacedBy
    let taken = { (seq: UInt64) in objects.contains(seq) && !dead.contains(seq) }
    return Set(
      lazy.map(\.seq).filter { !objects.contains($0) && !dead.contains($0) && !(replaced[$0].map(taken) ?? false) })
  }
}

extension PendingItem {
  /// The item's own members (its body), parsed.
  package var members: [JSONMember] {
    var text: [UInt8] = [UInt8(ascii: "{")]
    text.append(contentsOf: body.dropFirst())
    text.append(UInt8(ascii: "}"))
    guard case .object(let members)? = try? JSONReader.parse(text, maxDepth: 1000) else { return [] }
    return members
  }

  /// The user the save named, if any.
  package var user: UserIdentifier? { user(members) }

  /// The user the save named, from its parsed `members`.
  func user(_ members: [JSONMember]) -> UserIdentifier? {
    guard hasUser, let value = members["user"] else { return nil }
    var issues = Issues()
    return UserIdentifier.parse(value, path: "user", issues: &issues)
  }
}

extension UserIdentifier {
  /// The identity key of a stored `user` value.
  static func key(_ value: JSONValue) -> String {
    var issues = Issues()
    return UserIdentifier.parse(value, path: "user", issues: &issues)?.key ?? ""
  }
}
