// The Swift 6.3.1 -O miscompile behind the loss of acknowledged items (see CHANGELOG, "Fixed:
// acknowledged items lost after a partial drain"), reduced from Compaction.record of fabe680.
// `bash Tests/toolchain/check` compiles it at -Onone and -O and says whether this toolchain has it.
// Trigger: a locally mutated struct passed as `cond ? nil : value` to an Optional parameter;
// passing `value` directly compiles correctly. The store no longer depends on this code shape.
struct Info: Equatable {
  var first: UInt64
  var bytes = 0
  var items = 0
  var dead = 0
  var changed = 0
  var otherBytes = 0
  var damaged = false
  init(first: UInt64) { self.first = first }
}
struct Rewrite { var first: UInt64; var bytes: [UInt8]?; var items: Int; var dead: Int; var changed: Int }
final class Journal {
  var segments: [Info] = []
  var fd: Int32 = -1
  func replace(first: UInt64, with info: Info?, dead: Int, changed: Int) {
    guard let n = segments.firstIndex(where: { $0.first == first }), fd < 0 || n != segments.count - 1 else { return }
    guard var updated = info else { segments.remove(at: n); return }
    updated.dead = max(0, segments[n].dead - dead)
    updated.changed = max(0, segments[n].changed - changed)
    segments[n] = updated
  }
}
struct Compaction {
  var rewrites: [Rewrite]
  func record(in journal: Journal) {
    for rewrite in rewrites {
      var info = Info(first: rewrite.first)
      info.bytes = rewrite.bytes?.count ?? 0
      info.items = rewrite.items
      journal.replace(
        first: rewrite.first, with: rewrite.bytes == nil ? nil : info, dead: rewrite.dead, changed: rewrite.changed)
    }
  }
}
@inline(never) func make() -> (Journal, Compaction) {
  let j = Journal()
  var i = Info(first: 1); i.items = 2; i.dead = 1; i.bytes = 315
  j.segments = [i]
  return (
    j, Compaction(rewrites: [Rewrite(first: 1, bytes: Array(repeating: 0, count: 151), items: 1, dead: 1, changed: 0)])
  )
}
let (j, c) = make()
c.record(in: j)
print(
  j.segments[0].items == 1
    ? "ok: items \(j.segments[0].items)" : "MISCOMPILED: items \(j.segments[0].items), expected 1")
