import Testing

@testable import OutboxDelivery
@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxServer
@testable import OutboxStore
@testable import OutboxSupport

/// `/users/track` bodies rendered from stored bytes (`UsersTrack.requests`) equal, byte for byte,
/// the bodies the tree path built before (`Reference`, the old code kept here): on seeded random
/// stores filled through the real save methods, and on crafted bodies the byte renderer must leave
/// to the tree (whitespace, escapes written another way, other member orders, repeats, bad users).
@Suite struct TrackRenderTests {
  /// The rendering before bodies were copied from stored bytes: parse each body, build a tree per
  /// object and per body, write it.
  enum Reference {
    static func requests(
      _ items: [PendingItem], superseded: Set<UInt64>, defaultUser: UserIdentifier?, limit: Int, mode: TrackBatchMode
    ) -> [[UInt8]] {
      var bodies: [(attributes: [JSONValue], events: [JSONValue])] = []
      var current: (attributes: [JSONValue], events: [JSONValue]) = ([], [])
      let limit = max(1, limit)
      for item in items where !superseded.contains(item.seq) {
        let members = item.members
        guard let user = item.user(members) ?? defaultUser else { continue }
        let isEvent = item.kind == .customEvent
        let full =
          mode == .combined
          ? current.attributes.count + current.events.count >= limit
          : (isEvent ? current.events.count : current.attributes.count) >= limit
        if full {
          bodies.append(current)
          current = ([], [])
        }
        if isEvent {
          current.events.append(.object(user.trackMembers + event(members)))
        } else {
          current.attributes.append(.object(user.trackMembers + [attribute(item.kind, members)]))
        }
      }
      bodies.append(current)
      return bodies.filter { !$0.attributes.isEmpty || !$0.events.isEmpty }.map {
        JSONValue.object([JSONMember("attributes", .array($0.attributes)), JSONMember("events", .array($0.events))])
          .jsonBytes
      }
    }

    static func attribute(_ kind: ItemKind, _ members: [JSONMember]) -> JSONMember {
      guard kind == .userAttribute else { return customAttribute(members) }
      return JSONMember(members["field"]?.stringValue ?? "", members["value"] ?? .null)
    }

    static func event(_ members: [JSONMember]) -> [JSONMember] {
      var event = [JSONMember("name", members["name"] ?? .null), JSONMember("time", members["time"] ?? .null)]
      if let properties = members["properties"], properties.objectValue?.isEmpty != true {
        event.append(JSONMember("properties", properties))
      }
      return event
    }

    static func customAttribute(_ members: [JSONMember]) -> JSONMember {
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

  /// The tests' SplitMix64 (`SeededGenerator`), with the two draws these stores use.
  typealias Rng = SeededGenerator

  static let texts = [
    "u1", "ü-ser", #"quo"te"#, "back\\slash", "tab\there", "line\nbreak", "\u{2028}sep", "\u{7}bell", "😀", "é",
    "\u{0}nul", "/slash", "A\u{30A}",
  ]
  static let rawNumbers = ["0", "-0", "12", "-7", "1.5", "1e3", "2.50", "-0.0", "123456789012345678901234", "1E-2"]

  static func jsonString(_ s: String) -> String {
    var out: [UInt8] = []
    out.appendJSONString(s)
    return String(decoding: out, as: UTF8.self)
  }

  static func user(_ r: inout Rng) -> String {
    let a = jsonString(r.pick(texts))
    switch r.int(6) {
    case 0: return #"{"externalId":\#(a)}"#
    case 1: return #"{"brazeId":\#(a)}"#
    case 2: return #"{"alias":{"name":\#(a),"label":\#(jsonString(r.pick(texts)))}}"#
    case 3: return #"{"email":"a\#(r.int(5))@example.com"}"#
    case 4: return #"{"phone":"+1555000\#(r.int(5))"}"#
    default: return #"{"alias":{"label":"crm","name":\#(a)}}"#  // label first: stored re-encoded
    }
  }

  static func value(_ r: inout Rng, depth: Int = 0) -> String {
    switch r.int(depth > 2 ? 4 : 6) {
    case 0: return r.pick(rawNumbers)
    case 1: return jsonString(r.pick(texts))
    case 2: return r.pick(["true", "false", "null"])
    case 3: return "\"\\u00e9\\/\\u0041 x\""  // escapes the writer does not use
    case 4: return "[" + (0..<r.int(3)).map { _ in value(&r, depth: depth + 1) }.joined(separator: ",") + "]"
    default:
      return "{ " + (0..<r.int(3)).map { "\"k\($0)\" : " + value(&r, depth: depth + 1) }.joined(separator: ", ") + "}"
    }
  }

  /// One save line through the real methods, valid or not (an invalid one is refused and stores nothing).
  static func saveLine(_ r: inout Rng, id: Int) -> String {
    let user = r.int(5) == 0 ? "" : #","user":\#(user(&r))"#
    let params: String
    switch r.int(3) {
    case 0:
      let time = r.int(2) == 0 ? "" : #","time":"2026-03-0\#(1 + r.int(8))T10:00:00Z""#
      let props = (0..<r.int(4)).map { "\"p\($0)\":" + value(&r) }.joined(separator: ",")
      params = #"{"name":\#(jsonString(r.pick(texts)))\#(user)\#(time),"properties":{\#(props)}}"#
    case 1:
      let op = r.pick(["set", "inc", "add", "remove", "unset"])
      let v = op == "inc" ? String(r.int(9)) : op == "add" || op == "remove" ? "[\(value(&r))]" : value(&r)
      params = #"{"key":\#(jsonString(r.pick(texts)))\#(user),"op":"\#(op)","value":\#(v)}"#
    default:
      let (field, v) = r.pick([
        ("first_name", jsonString(r.pick(texts))), ("country", "\"FR\""), ("gender", "\"F\""),
        ("dob", "\"1990-01-02\""),
        ("email_subscribe", "\"opted_in\""), ("first_name", "null"),
      ])
      params = #"{"field":"\#(field)"\#(user),"value":\#(v)}"#
    }
    let method =
      params.hasPrefix(#"{"name""#)
      ? "saveCustomEvent"
      : params.hasPrefix(#"{"key""#)
        ? "saveCustomAttribute" : "saveUserAttribute"
    return #"{"jsonrpc":"2.0","id":\#(id),"method":"\#(method)","params":\#(params)}"#
  }

  /// Bodies no save writes: the tree decides what they mean, the byte renderer must step aside.
  static func craftedBody(_ r: inout Rng, kind: ItemKind) -> String {
    let user = r.pick([
      #","user":{"externalId":"x"}"#, #","user":{ "externalId":"x"}"#, #","user":{"externalId":"\u0078"}"#,
      #","user":{"externalId":""}"#, #","user":{"bogus":"x"}"#, #","user":5"#, "",
      #","user":{"alias":{"name":"n","label":"l","extra":1}}"#, #","user":{"email":"e@x","phone":"1"}"#,
    ])
    switch kind {
    case .customEvent:
      return r.pick([
        user + #","name":"e","properties":{"a":1},"time":"2026-01-01T00:00:00.000Z""#,
        user + #","name":"e","name":"f","properties":{}"#, #","name":"e""# + user, user + #","properties":{"a": 1}"#,
        user + #","name":"\u00e9","extra":true"#, user + #","name":5,"time":null,"properties":[1]"#,
      ])
    case .customAttribute:
      return r.pick([
        user + #","key":"k","op":"inc","value":2"#, user + #","key":"k","op":"set","value":{"a" :1}"#,
        user + #","op":"add","key":"k","value":[1]"#, user + #","key":7,"op":"inc","value":2"#,
        user + #","key":"k","op":5,"value":2"#, user + #","key":"k","op":"unset""#, user + #","key":"k","value":-0"#,
      ])
    case .userAttribute:
      return r.pick([
        user + #","field":"country","value":"FR""#, user + #","field":"country""#, user + #","field":1,"value":2"#,
        user + #","value":"FR","field":"country""#, user + #","field":"country","value":"\/""#,
      ])
    }
  }

  /// Every body cut both ways, with and without a default user, at random limits.
  func compare(_ items: [PendingItem], _ r: inout Rng, seed: UInt64) {
    for _ in 0..<4 {
      let limit = 1 + r.int(8)
      let mode = r.pick(TrackBatchMode.allCases)
      let defaultUser: UserIdentifier? = r.pick([nil, .externalId("d\u{e9}"), .alias(name: "n", label: "l")])
      let superseded = items.supersededSeqs
      let new = UsersTrack.requests(items, superseded: superseded, defaultUser: defaultUser, limit: limit, mode: mode)
      let old = Reference.requests(items, superseded: superseded, defaultUser: defaultUser, limit: limit, mode: mode)
      #expect(new.count == old.count, "seed \(seed) limit \(limit) \(mode)")
      for (n, (a, b)) in zip(new, old).enumerated() where a != b {
        Issue.record(
          "seed \(seed) body \(n) limit \(limit) \(mode): new \(String(decoding: a, as: UTF8.self)) old \(String(decoding: b, as: UTF8.self))"
        )
        break
      }
    }
  }

  @Test(arguments: 1...8 as ClosedRange<UInt64>)
  func savedStoresRenderAsTheTreeDid(seed: UInt64) throws {
    var r = Rng(seed: seed)
    let server = InProcessServer()
    let lines = (0..<300).map { Self.saveLine(&r, id: $0) }
    _ = server.send(lines.joined(separator: "\n"))
    let store = server.service.store
    let items = store.items.table.rows.map(store.items.item(row:))
    #expect(items.count > 100, "seed \(seed): only \(items.count) saves were accepted")
    // What lets the renderer follow the bytes unchecked: every save writes canonical bytes, marked so.
    for item in items where !item.canonical || !item.body.withUnsafeBytes({ CanonicalJSON.isMembers($0) }) {
      Issue.record("seed \(seed): marked \(item.canonical), a save that is not canonical: \(item.body)")
    }
    compare(items, &r, seed: seed)
  }

  @Test(arguments: 1...8 as ClosedRange<UInt64>)
  func craftedBodiesRenderAsTheTreeDid(seed: UInt64) {
    var r = Rng(seed: seed &* 977)
    let items = (0..<200).map { n -> PendingItem in
      let kind = r.pick(ItemKind.allCases)
      let body = Self.craftedBody(&r, kind: kind)
      var item = PendingItem(
        seq: UInt64(n + 1), id: ItemID(high: 1, low: UInt64(n)), kind: kind, savedAt: 0, hasUser: r.int(4) != 0,
        body: Array(body.utf8))
      // As the store marks a loaded row once `isMembers` accepts it: the renderer then only follows the bytes.
      item.canonical = r.int(2) == 0 && item.body.withUnsafeBytes { CanonicalJSON.isMembers($0) }
      return item
    }
    compare(items, &r, seed: seed)
  }

  /// A loaded row is marked canonical only when its bytes are; a well-formed body written another way stays unmarked.
  @Test func onlyCanonicalRowsAreMarked() {
    let store = HeldItems()
    let bodies = [#","name":"e","properties":{"a":1}"#, #","name":"e","properties":{"a": 1}"#, #","name":"\u0065""#]
    for (n, body) in bodies.enumerated() {
      Array(body.utf8).withUnsafeBytes {
        store.append(
          seq: UInt64(n + 1), id: ItemID(high: 1, low: UInt64(n)), kind: .customEvent, savedAt: 0, hasUser: false,
          body: $0, verified: false)
      }
    }
    let rows = Array(store.table.rows)
    #expect(rows.map { store.wellFormed($0) } == [true, true, true])
    #expect(rows.map { store.item(row: $0).canonical } == [true, false, false])
  }

  /// Over what the writer writes, the structure-only scan ends every value where the checking scan does.
  @Test(arguments: 1...4 as ClosedRange<UInt64>)
  func knownScanEndsWhereTheCheckingScanEnds(seed: UInt64) throws {
    var r = Rng(seed: seed &* 131)
    for _ in 0..<500 {
      let parsed = try JSONReader.parse(Array(Self.value(&r).utf8), maxDepth: 64)
      let written = parsed.jsonBytes + Array(",".utf8)
      written.withUnsafeBytes {
        let checked = CanonicalJSON.valueEnd($0, 0)
        #expect(checked == written.count - 1, "\(String(decoding: written, as: UTF8.self))")
        #expect(CanonicalJSON.knownValueEnd($0, 0) == checked, "\(String(decoding: written, as: UTF8.self))")
      }
    }
  }

  @Test func canonicalScanAcceptsWhatTheWriterWritesAndNothingElse() {
    for text in Self.texts {
      let written = Self.jsonString(text)
      let accepted = Array(written.utf8).withUnsafeBytes { CanonicalJSON.valueEnd($0, 0) }
      #expect(accepted == written.utf8.count, "\(written)")
    }
    for other in [
      #""\u0041""#, #""\/""#, #""\u00E9""#, #""\u000a""#, "\"\u{2028}\"", "{ }", "[1 ]", "01", "1.", "+1", "tru",
    ] {
      let end = Array(other.utf8).withUnsafeBytes { CanonicalJSON.valueEnd($0, 0) }
      #expect(end != other.utf8.count, "\(other) is not what the writer writes")
    }
  }

  /// The 8-byte skip of plain string bytes stops at a special byte wherever it falls.
  @Test func longStringsWithASpecialByteAnywhere() {
    let a = { (n: Int) in String(repeating: "a", count: n) }
    for k in 0..<20 {
      for special in ["\"", "\\", "\n", "\u{1}", "\u{7f}", "é", "😀", "\u{2028}"] {
        let written = Self.jsonString(a(k) + special + a(20 - k))
        let end = Array(written.utf8).withUnsafeBytes { CanonicalJSON.valueEnd($0, 0) }
        #expect(end == written.utf8.count, "\(written)")
      }
      for bad in [Array(#"\/"#.utf8), Array(#"\u0041"#.utf8), [0x01], [0xE2, 0x80, 0xA8], [0xFF], [0xC3]] {
        let text = [0x22] + Array(a(k).utf8) + bad + Array(a(20 - k).utf8) + [0x22]
        let end = text.withUnsafeBytes { CanonicalJSON.valueEnd($0, 0) }
        #expect(end != text.count, "\(text) is not what the writer writes")
      }
      let open = [0x22] + Array(a(k).utf8)  // no closing quote
      #expect(open.withUnsafeBytes { CanonicalJSON.valueEnd($0, 0) } == nil)
    }
  }
}

extension SeededGenerator {
  fileprivate mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
  fileprivate mutating func pick<T>(_ xs: [T]) -> T { xs[int(xs.count)] }
}
