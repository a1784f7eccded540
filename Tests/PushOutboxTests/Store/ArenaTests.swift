import Testing

@testable import OutboxStore

/// `Arena` against a plain model: every live allocation's bytes kept in an array of its own. Seeded
/// random appends (in three parts, some of them empty; some larger than a chunk) and
/// releases in any order; every 50 steps (and at each step while few are held) the live bytes must
/// read back exactly, `liveBytes` must be their sum, and every held chunk but the one being filled
/// must hold something live.
@Suite struct ArenaTests {
  private struct Held {
    var location: ArenaLocation
    var bytes: [UInt8]
  }

  @Test(arguments: [1, 2, 3, 4]) func appendsAndReleasesMatchAPlainModel(seed: UInt64) {
    var generator = SeededGenerator(seed: seed)  // a failure replays from its seed
    let arena = Arena()
    var held: [Held] = []
    for step in 0..<4000 {
      if held.isEmpty || generator.next() % 100 < 55 {
        let bytes = randomBytes(&generator)
        held.append(Held(location: append(bytes, to: arena, &generator), bytes: bytes))
      } else {
        let victim = held.remove(at: Int(generator.next() % UInt64(held.count)))
        arena.release(victim.location, length: victim.bytes.count)
      }
      if step % 50 == 0 || held.count < 3 { check(arena, held, "seed \(seed), step \(step)") }
    }
    for victim in held.shuffled(using: &generator) { arena.release(victim.location, length: victim.bytes.count) }
    #expect(arena.liveBytes == 0)
    #expect(arena.heldChunks <= 1, "seed \(seed): chunks left with nothing live")
  }

  /// `take` (a load image's arena into the store's): the bytes read back from the taker, which goes
  /// on appending and releasing as the model says, and the arena taken from is left empty.
  @Test(arguments: [5, 6]) func takingAnArenaKeepsEveryByteAndEmptiesTheOther(seed: UInt64) {
    var generator = SeededGenerator(seed: seed)
    let (filled, taker) = (Arena(), Arena())
    var held: [Held] = []
    for _ in 0..<300 {
      let bytes = randomBytes(&generator)
      held.append(Held(location: append(bytes, to: filled, &generator), bytes: bytes))
    }
    _ = append(randomBytes(&generator), to: taker, &generator)  // what the taker held before is gone
    taker.take(filled)
    #expect(filled.heldChunks == 0 && filled.liveBytes == 0)
    check(taker, held, "seed \(seed), taken")
    for _ in 0..<300 {
      let bytes = randomBytes(&generator)
      held.append(Held(location: append(bytes, to: taker, &generator), bytes: bytes))
    }
    check(taker, held, "seed \(seed), appended after")
    for victim in held.shuffled(using: &generator) { taker.release(victim.location, length: victim.bytes.count) }
    #expect(taker.liveBytes == 0 && taker.heldChunks <= 1)
  }

  private func check(_ arena: Arena, _ held: [Held], _ context: String) {
    for item in held {
      let same = arena.bytes(at: item.location, length: item.bytes.count).elementsEqual(item.bytes)
      #expect(same, "\(context): the \(item.bytes.count) bytes at \(item.location) changed")
    }
    #expect(arena.liveBytes == held.reduce(0) { $0 + $1.bytes.count }, "\(context)")
    #expect(arena.heldChunks <= held.count + 1, "\(context): \(arena.heldChunks) chunks for \(held.count) items")
  }

  /// Mostly small, a few larger than a chunk; never nothing (a stored record has its header byte, and
  /// the bytes of nothing have no chunk to stay live in).
  private func randomBytes(_ generator: inout SeededGenerator) -> [UInt8] {
    let roll = generator.next() % 1000
    let count: Int
    if roll < 5 {
      count = Arena.chunkSize + Int(generator.next() % UInt64(2 * Arena.chunkSize))
    } else if roll < 60 {
      count = 1 + Int(generator.next() % 20_000)
    } else {
      count = 1 + Int(generator.next() % 3000)
    }
    let fill = UInt8(truncatingIfNeeded: generator.next())
    return (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ fill }
  }

  /// Appends `bytes` split at up to two random places, as the store appends a client id, a prefix and a body.
  private func append(_ bytes: [UInt8], to arena: Arena, _ generator: inout SeededGenerator) -> ArenaLocation {
    let a = Int(generator.next() % UInt64(bytes.count + 1))
    let b = a + Int(generator.next() % UInt64(bytes.count - a + 1))
    return bytes.withUnsafeBytes { all in
      arena.append(
        UnsafeRawBufferPointer(rebasing: all[0..<a]), UnsafeRawBufferPointer(rebasing: all[a..<b]),
        UnsafeRawBufferPointer(rebasing: all[b...]))
    }
  }
}
