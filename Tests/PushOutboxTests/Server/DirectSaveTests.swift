import Testing

@testable import OutboxDomain
@testable import OutboxJSON
@testable import OutboxServer
@testable import OutboxStore

/// `OneScanSave` reads the hot save in one pass; whatever it takes, the tape path
/// (`TapeSave.prepare`, the reader every other request goes through) must take too, with
/// the same body, id and parts. Seeded lines of every shape the two might disagree on, and random
/// mutations of them, under several limits.
@Suite struct DirectSaveTests {
  /// What each path made of a line: nil, or the save and its body.
  struct Outcome: Equatable {
    var id: String
    var hasUser: Bool
    var parts: [Int]
    var body: [UInt8]
  }

  static func outcome(_ save: FastSave?, _ body: [UInt8]) -> Outcome? {
    guard let save else { return nil }
    let p = save.parts
    return Outcome(
      id: "\(save.id)", hasUser: save.hasUser, parts: [p.userEnd, p.labelEnd, Int(p.userHash), Int(p.labelHash)],
      body: body)
  }

  static func both(_ line: [UInt8], _ limits: FastSave.Limits) -> (direct: Outcome?, tape: Outcome?) {
    line.withUnsafeBufferPointer { buffer in
      var direct: [UInt8] = [], tape: [UInt8] = []
      let d = OneScanSave.prepare(buffer, limits: limits, into: &direct)
      if d == nil { #expect(direct.isEmpty, "a refused line left bytes in the body") }
      let t = TapeSave.prepare(buffer, limits: limits, scratch: TapeScratch(), into: &tape)
      return (outcome(d, direct), outcome(t, tape))
    }
  }

  static func limits(depth: Int = 128, propertiesBytes: Int = 51_200) -> FastSave.Limits {
    var config = Configuration()
    config.maxDepth = depth
    config.domain.maxPropertiesBytes = propertiesBytes
    return FastSave.Limits(config)
  }

  @Test(arguments: [0, 1, 2, 3]) func whatTheScanTakesTheTapeTakesAlike(seed: UInt64) {
    var rng = SeededGenerator(seed: seed)
    let settings = [Self.limits(), Self.limits(depth: 3), Self.limits(depth: 4), Self.limits(propertiesBytes: 40)]
    var taken = 0, tapeOnly = 0, lines = 0
    for _ in 0..<1500 {
      let base = LineMaker.line(&rng)
      var variants = [base]
      for _ in 0..<4 { variants.append(LineMaker.mutate(base, &rng)) }
      for line in variants {
        let limits = settings[Int.random(in: 0..<settings.count, using: &rng)]
        let (direct, tape) = Self.both(line, limits)
        lines += 1
        if direct != nil { taken += 1 } else if tape != nil { tapeOnly += 1 }
        if let direct {
          #expect(direct == tape, "seed \(seed): \(String(decoding: line, as: UTF8.self))")
        }
      }
    }
    // The workload reaches both sides: many lines the scan takes, many it leaves to the tape.
    #expect(taken > lines / 12, "the scan took \(taken) of \(lines) lines")
    #expect(tapeOnly > lines / 25, "the tape alone took \(tapeOnly) of \(lines) lines")
  }

  /// The benchmark's realistic lines (Tests/bench/gen_saves.py's mix, written without escapes):
  /// every one is taken by the scan, so the hot save does not fall back to the tape unseen.
  @Test func takesEveryRealisticLine() {
    var rng = SeededGenerator(seed: 7)
    for n in 1...2000 {
      let line = LineMaker.realistic(id: n, &rng)
      let (direct, tape) = Self.both(line, Self.limits())
      #expect(direct != nil, "not taken: \(String(decoding: line, as: UTF8.self))")
      #expect(direct == tape)
    }
  }
}

/// Lines for `DirectSaveTests`: requests of many shapes, most of them close to the hot save's.
enum LineMaker {
  static func pick<T>(_ options: [T], _ rng: inout SeededGenerator) -> T {
    options[Int.random(in: 0..<options.count, using: &rng)]
  }

  /// Each list: what the hot save usually holds, then the edge cases (`usual` picks from the
  /// first part most of the time).
  static let names = (
    [#""purchase""#, #""session_start""#, "\"\u{e9}t\u{e9}\"", "\"" + String(repeating: "n", count: 255) + "\""],
    [#""$x""#, #""""#, #""a\"b""#, #""\u00e9""#, "\"" + String(repeating: "n", count: 256) + "\"", "1", "null"]
  )
  static let keys = (
    [#""campaign""#, #""step""#, #""ok""#, #""tags""#, #""price""#, #""note""#, "\"cl\u{e9}\""],
    [
      #""time""#, #""event_name""#, #""$k""#, #""""#, #""k\"q""#, #""t\u0069me""#,
      "\"" + String(repeating: "k", count: 256) + "\"",
    ]
  )
  static let scalars = (
    [
      "1", "0", "-0", "-7", "12.5", "1e3", "1E+2", "-1.5e-3", "1e999", "true", "false", #""spring""#, #""""#,
      #""quote \" newline \n""#, "\"\u{e9}\"", #""2026-01-02T03:04:05Z""#, #""abcdefghijklmnopq""#,
      "\"" + String(repeating: "v", count: 255) + "\"",
    ],
    [
      "01", "1.", "null", #""\u00e9""#, "\"\u{2028}\"", #""\u2028""#, #""\u001f""#, #""2026-01-02T03:04:05.678Z""#,
      "\"" + String(repeating: "v", count: 256) + "\"",
    ]
  )
  static let users = (
    [
      #"{"externalId":"user-1"}"#, #"{"brazeId":"0123456789abcdef01234567"}"#,
      #"{"alias":{"name":"a-1","label":"crm"}}"#,
      #"{"email":"a@b.co"}"#, #"{"phone":"+15550100"}"#,
    ],
    [
      #"{"alias":{"label":"crm","name":"a-1"}}"#, #"{"externalId":""}"#, #"{"externalId":"u","brazeId":"b"}"#,
      #"{"external_id":"u"}"#, #"{"externalId":1}"#, #""u1""#, #"{"externalId":"a\nb"}"#, #"{"externalId":"a\u0041"}"#,
      #"{"alias":{"name":"n"}}"#, #"{ "email":"a@b.co"}"#,
    ]
  )
  static let ids = (
    ["1", "42", "0", "123456789012345678"], ["1234567890123456789", "-1", "01", "1.5", #""s""#, "null"]
  )

  /// Mostly from the usual part of a list, one time in sixteen from its edge cases.
  static func usual<T>(_ lists: ([T], [T]), _ rng: inout SeededGenerator) -> T {
    Int.random(in: 0..<16, using: &rng) == 0 ? pick(lists.1, &rng) : pick(lists.0, &rng)
  }

  static func value(_ rng: inout SeededGenerator, depth: Int = 0) -> String {
    switch Int.random(in: 0..<10, using: &rng) {
    case 0 where depth < 1:
      let n = Int.random(in: 0..<4, using: &rng)
      return "[" + (0..<n).map { _ in value(&rng, depth: depth + 1) }.joined(separator: ",") + "]"
    case 1 where depth < 2 && Int.random(in: 0..<3, using: &rng) == 0: return object(&rng, depth: depth + 1)
    default: return usual(scalars, &rng)
    }
  }

  static func object(_ rng: inout SeededGenerator, depth: Int) -> String {
    let n = Int.random(in: 0..<6, using: &rng)
    return "{" + (0..<n).map { _ in usual(keys, &rng) + ":" + value(&rng, depth: depth) }.joined(separator: ",") + "}"
  }

  static func line(_ rng: inout SeededGenerator) -> [UInt8] {
    var params = [#""name":"# + usual(names, &rng)]
    if Bool.random(using: &rng) { params.append(#""properties":"# + object(&rng, depth: 0)) }
    if Int.random(in: 0..<3, using: &rng) > 0 { params.append(#""user":"# + usual(users, &rng)) }
    if Int.random(in: 0..<12, using: &rng) == 0 {
      params.append(pick([#""time":"2026-01-02T03:04:05Z""#, #""id":"c1""#], &rng))
    }
    if Int.random(in: 0..<8, using: &rng) == 0 { params.shuffle(using: &rng) }
    let id = usual(ids, &rng)
    var envelope = [
      #""jsonrpc":"2.0""#, #""id":"# + id, #""method":"saveCustomEvent""#,
      #""params":{"# + params.joined(separator: ",") + "}",
    ]
    if Int.random(in: 0..<8, using: &rng) == 0 { envelope.shuffle(using: &rng) }
    if Int.random(in: 0..<20, using: &rng) == 0 {
      envelope.append(pick([#""id":2"#, #""extra":1"#, #""jsonrpc":"2.0""#], &rng))
    }
    if Int.random(in: 0..<20, using: &rng) == 0 { envelope.removeFirst() }
    return Array(("{" + envelope.joined(separator: ",") + "}").utf8)
  }

  /// One random edit: a byte removed, replaced or inserted (from bytes that matter to JSON and
  /// UTF-8), or a stretch repeated.
  static func mutate(_ line: [UInt8], _ rng: inout SeededGenerator) -> [UInt8] {
    var out = line
    let at = Int.random(in: 0..<out.count, using: &rng)
    let bytes: [UInt8] = Array(#""\{}[],: $-0e.tn"#.utf8) + [0x80, 0xC3, 0xA9, 0xE2, 0x0A, 0x09, 0x00, 0x7F]
    switch Int.random(in: 0..<4, using: &rng) {
    case 0: out.remove(at: at)
    case 1: out[at] = pick(bytes, &rng)
    case 2: out.insert(pick(bytes, &rng), at: at)
    default:
      let end = min(out.count, at + Int.random(in: 1..<12, using: &rng))
      out.insert(contentsOf: out[at..<end], at: end)
    }
    return out
  }

  /// A line of the benchmark's realistic mix (`gen_saves.py`), raw UTF-8 where it has any.
  static func realistic(id: Int, _ rng: inout SeededGenerator) -> [UInt8] {
    let name = pick(["session_start", "push_opened", "purchase", "level_up", "share", "view_item"], &rng)
    var props = #"{"campaign":""# + pick(["black_friday", "spring", "welcome", "winback"], &rng) + #"","step":"#
    props += "\(Int.random(in: 1...9, using: &rng)),\"ok\":\(Bool.random(using: &rng)),\"tags\":[\"a\",\"b\"]"
    if name == "purchase" { props += ",\"price\":\(Double(Int.random(in: 0..<10000, using: &rng)) / 100)" }
    if Int.random(in: 0..<50, using: &rng) == 0 { props += ",\"note\":\"quote \\\" newline \\n \u{e9}\"" }
    props += "}"
    let user = pick(
      [
        #"{"externalId":"user-\#(Int.random(in: 1...100_000, using: &rng))"}"#,
        #"{"brazeId":"\#(String(UInt64.random(in: 0...UInt64.max, using: &rng), radix: 16))"}"#,
        #"{"alias":{"name":"alias-\#(Int.random(in: 1...100_000, using: &rng))","label":"crm"}}"#,
      ], &rng)
    let line =
      #"{"jsonrpc":"2.0","id":\#(id),"method":"saveCustomEvent","params":{"name":"\#(name)","properties":\#(props),"user":\#(user)}}"#
    return Array(line.utf8)
  }
}
