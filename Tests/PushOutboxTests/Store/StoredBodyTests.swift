import Foundation
import Testing

@testable import OutboxStore
@testable import OutboxSupport

/// Bodies held with their users and labels interned (`StoredBody`, `InternTable`, `BodyParts`),
/// compared with a plain model: a dictionary of the bytes and ids each held seq was given.
@Suite struct StoredBodyTests {
  private static let users = [
    #","user":{"externalId":"user-000001"}"#, #","user":{"brazeId":"0000000000000000000004d2"}"#,
    #","user":{"alias":{"name":"device-000007","label":"device_id"}}"#, #","user":{"externalId":"q\"uo\\te"}"#,
    #","user":{"externalId":"é\u{10437}"}"#,
    ",\"user\":{\"externalId\":\"" + String(repeating: "x", count: 300) + "\"}",
  ]
  private static let labels = [
    #","name":"purchase","properties":"#, #","name":"level_up","properties":"#, #","key":"plan","op":"#,
    #","field":"email","value":"#, #","name":"a\"b","properties":"#,
  ]
  private static let rests = [#"{}"#, #"{"step":7,"tags":["a","b"]}"#, #""set","value":"pro""#, #""a@b.co""#, "3"]

  /// A body as a save writes it, or a loaded one that is not canonical, with the time member or not.
  private static func body(_ random: inout SeededGenerator, savedAt: Int64) -> (text: String, canonical: Bool) {
    var text = random.next() % 5 == 0 ? "" : users.randomElement(using: &random)!
    text += labels.randomElement(using: &random)! + rests.randomElement(using: &random)!
    switch random.next() % 4 {
    case 0: text += #","time":""# + UTCTime.format(ms: savedAt) + "\""
    case 1: text += #","time":""# + UTCTime.format(ms: savedAt + 1) + "\""
    default: break
    }
    if random.next() % 10 == 0 { return (text.replacingOccurrences(of: ":", with: " : "), false) }
    return (text, true)
  }

  @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
  func everyHeldBodyAndIdReadsBackAsSavedAcrossRandomRemovals(seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    let store = HeldItems()
    store.idKey = seed &* 0x9E37_79B9_7F4A_7C15
    var model: [UInt64: (body: [UInt8], id: ItemID)] = [:]
    for _ in 0..<40 {
      for _ in 0..<Int(random.next() % 60) {
        let seq = store.takeSeq()
        let savedAt = Int64(random.next() % 4_000_000_000_000)
        let (text, canonical) = Self.body(&random, savedAt: savedAt)
        let id: ItemID
        switch random.next() % 3 {
        case 0: id = ItemID(client: Array("client-\(seq)".utf8))
        case 1:  // the server's own: recomputed from the seq, not held
          let words = IDGenerator.words(key: store.idKey, ms: savedAt, counter: seq)
          id = ItemID(high: words.high, low: words.low)
        default: id = ItemID(high: random.next(), low: random.next())
        }
        let bytes = Array(text.utf8)
        bytes.withUnsafeBytes {
          store.append(
            seq: seq, id: id, kind: .customEvent, savedAt: savedAt, hasUser: true, body: $0, verified: canonical)
        }
        model[seq] = (bytes, id)
      }
      let held = Array(model.keys)
      let gone = held.filter { _ in random.next() % 3 == 0 }
      #expect(store.remove(seqs: gone).count == gone.count)
      for seq in gone { model[seq] = nil }
      check(store, model)
    }
    #expect(store.remove(seqs: Array(model.keys)).count == model.count)
    #expect(store.bodies.users.count == 0 && store.bodies.labels.count == 0)  // no entry outlives its rows
    #expect(store.bytes == 0)
  }

  private func check(_ store: HeldItems, _ model: [UInt64: (body: [UInt8], id: ItemID)]) {
    #expect(store.count == model.count)
    var bytes = 0
    for (seq, expected) in model {
      guard let row = store.table.row(of: seq) else {
        Issue.record("seq \(seq) is not held")
        continue
      }
      #expect(store.body(row: row) == expected.body)
      #expect(store.withBody(row: row) { Array($0) } == expected.body)
      #expect(store.id(row: row) == expected.id)
      #expect(store.item(row: row).body == expected.body)
      bytes += PendingItem.byteCount(body: expected.body.count, clientID: expected.id.clientLength)
    }
    #expect(store.bytes == bytes)
  }

  @Test func repeatedUsersAndLabelsAreHeldOnceAndRecomputedIdsHoldNoBytes() {
    let store = HeldItems()
    let body = Array(#","user":{"externalId":"user-000001"},"name":"purchase","properties":{"step":1}"#.utf8)
    let time = Array(#","time":""#.utf8) + Array(UTCTime.format(ms: 5).utf8) + [UInt8(ascii: "\"")]
    for seq in 1...3 as ClosedRange<UInt64> {
      let words = IDGenerator.words(key: 0, ms: 5, counter: seq)
      (body + time).withUnsafeBytes {
        store.append(
          seq: seq, id: ItemID(high: words.high, low: words.low), kind: .customEvent, savedAt: 5, hasUser: true,
          body: $0)
      }
    }
    #expect(store.bodies.users.count == 1 && store.bodies.labels.count == 1)
    // header, the user's and the label's entry numbers (one byte each), then `{"step":1}`: no id, no time
    #expect(store.table.lengths.allSatisfy { $0 == 3 + 10 })
    #expect(store.body(row: 2) == body + time)
  }

  @Test func wrongPartsCostMemoryNeverBytes() {
    var stored = StoredBody()
    let text = Array(#","user":{"externalId":"u"},"name":"n","properties":{}"#.utf8)
    for userEnd in 0...text.count {
      for labelEnd in stride(from: userEnd, through: text.count, by: 3) {
        text.withUnsafeBytes { body in
          let parts = BodyParts(body: body, userEnd: userEnd, labelEnd: labelEnd)
          let (prefix, kept) = stored.encode(body, savedAt: 0, explicitID: nil, parts: parts)
          var record = withUnsafeBytes(of: prefix.bytes) { Array($0.prefix(prefix.count)) }
          record += body[kept]
          var out: [UInt8] = []
          record.withUnsafeBytes { stored.decode($0, savedAt: 0, to: &out) }
          #expect(out == text, "parts \(userEnd)..<\(labelEnd)")
          _ = record.withUnsafeBytes { stored.release($0) }
        }
      }
    }
    #expect(stored.users.count == 0 && stored.labels.count == 0)
  }

  @Test(arguments: [11, 12, 13] as [UInt64])
  func theInternTableMatchesACountingModel(seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    var table = InternTable()
    var numbers: [String: UInt32] = [:]
    var uses: [String: Int] = [:]
    let pool = (0..<3000).map { "k\($0)" + String(repeating: "z", count: $0 % 120) }
    for _ in 0..<60_000 {
      let key = pool[Int(random.next() % 3000)]
      if random.next() % 2 == 0 || uses[key, default: 0] == 0 {
        let number = Array(key.utf8).withUnsafeBytes { table.intern($0) }!
        if let known = numbers[key], uses[key, default: 0] > 0 { #expect(number == known) }
        numbers[key] = number
        uses[key, default: 0] += 1
      } else {
        table.release(numbers[key]!)
        uses[key]! -= 1
      }
    }
    #expect(table.count == uses.values.filter { $0 > 0 }.count)
    #expect(table.compactions > 0)  // the bytes of released entries were dropped, numbers kept
    for (key, count) in uses where count > 0 {  // every live entry is still found, with its bytes
      var out: [UInt8] = []
      table.append(numbers[key]!, to: &out)
      #expect(out == Array(key.utf8))
      #expect(Array(key.utf8).withUnsafeBytes { table.intern($0) } == numbers[key])
    }
  }

  /// Entries held across several of `InternBytes`' 1 MiB blocks (random lengths up to the longest, so
  /// entries meet block ends at random) read back as interned; a copy of the table is a value:
  /// what one copy interns, releases or compacts away, the other never sees.
  @Test func entriesAcrossBlocksReadBackAndACopyIsAValue() {
    var random = SeededGenerator(seed: 21)
    var table = InternTable()
    var held: [(UInt32, [UInt8])] = []
    var total = 0
    while total < 9 << 20 {  // past eight block ends
      // Distinct: each starts with its own index; then filler to a random length (4 to the longest).
      let length = 4 + Int(random.next() % UInt64(InternTable.maxLength - 3))
      let bytes =
        withUnsafeBytes(of: UInt32(held.count)) { Array($0) }
        + (4..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      guard let number = bytes.withUnsafeBytes({ table.intern($0) }) else { break }
      held.append((number, bytes))
      total += bytes.count
    }
    func readsBack(_ table: InternTable, _ entries: [(UInt32, [UInt8])]) -> Bool {
      entries.allSatisfy { number, bytes in
        var out: [UInt8] = []
        table.append(number, to: &out)
        return out == bytes && Array(table.bytes(number)) == bytes
      }
    }
    #expect(readsBack(table, held))
    var copy = table
    let extra = [UInt8](repeating: 0x7A, count: 200)
    let extraNumber = extra.withUnsafeBytes { copy.intern($0) }!
    for (number, _) in held.prefix(held.count * 3 / 4) { copy.release(number) }  // compacts the copy
    #expect(copy.compactions > table.compactions)
    let kept = Array(held.suffix(held.count - held.count * 3 / 4))
    #expect(table.count == held.count && copy.count == kept.count + 1)
    #expect(readsBack(table, held))
    #expect(readsBack(copy, kept + [(extraNumber, extra)]))
  }

  @Test func tooLongStringsStayInTheRow() {
    var table = InternTable()
    let long = [UInt8](repeating: 0x61, count: InternTable.maxLength + 1)
    #expect(long.withUnsafeBytes { table.intern($0) } == nil)
    #expect(table.count == 0)
  }

  /// `Reader.checked` (records read from a load image) against a plain parse: random short records,
  /// most with a real header, are accepted exactly when the header is known, the 16-byte id fits, and
  /// each entry number is a varint of at most five bytes (fitting 32 bits) inside the record; then
  /// with the same numbers and offset.
  @Test(arguments: [1, 2, 3] as [UInt64])
  func checkedReadersAgreeWithAPlainParse(seed: UInt64) {
    var random = SeededGenerator(seed: seed)
    for _ in 0..<20_000 {
      let count = Int(random.next() % 24)
      var record = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      if count > 0 && random.next() % 4 != 0 { record[0] &= 0x0F }
      for i in record.indices.dropFirst() where random.next() % 3 == 0 { record[i] &= 0x7F }
      let want = Self.plainParse(record)
      let got = record.withUnsafeBytes { StoredBody.Reader.checked($0) }
      #expect(got.map { [$0.user.map(Int.init), $0.label.map(Int.init), $0.offset] } == want, "\(record)")
    }
  }

  /// The record's user, label and kept-bytes offset, or nil when it is not one.
  private static func plainParse(_ record: [UInt8]) -> [Int?]? {
    guard let first = record.first, first < 16 else { return nil }
    var offset = first & 1 != 0 ? 17 : 1
    var numbers: [Int?] = [nil, nil]
    for (slot, bit) in [(0, 2), (1, 4)] where Int(first) & bit != 0 {
      var value = 0
      var length = 0
      while true {
        guard offset < record.count, length < 5 else { return nil }
        let byte = Int(record[offset])
        value |= (byte & 0x7F) << (7 * length)
        offset += 1
        length += 1
        if byte < 0x80 { break }
      }
      guard value <= Int(UInt32.max) else { return nil }
      numbers[slot] = value
    }
    return offset <= record.count ? numbers + [offset] : nil
  }
}
