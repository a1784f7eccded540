import Dispatch
import OutboxDelivery
import OutboxStore
import OutboxSupport

/// The `/users/track` objects of the custom events among picked rows, written from their bodies'
/// parts (`UsersTrack.Builder.writeEvent`) before any is placed in a body: for a large pick, on two
/// threads, each writing half the rows into its own buffer. Writing only reads the store (its rows,
/// arena and intern tables), and nothing changes the store until both halves are done; placing the
/// objects in bodies stays on the calling thread, in row order (`trackFromRows`).
struct WrittenEvents {
  /// Fewer rows than this are written on the calling thread alone.
  static let minimumForTwoThreads = 2_048

  private let halves: [Half]

  /// Writes the objects of `rows`' custom events; `threads` is the most to use (`--threads`).
  init(rows: [Int], store: HeldItems, threads: Int) {
    let split = threads > 1 && rows.count >= Self.minimumForTwoThreads ? rows.count / 2 : rows.count
    halves = [Half(rows[..<split]), Half(rows[split...])].filter { !$0.rows.isEmpty }
    guard halves.count > 1 else {
      halves.first?.write(store)
      return
    }
    let shared = Shared(store: store, halves: halves)
    DispatchQueue.concurrentPerform(iterations: shared.halves.count) { shared.halves[$0].write(shared.store) }
  }

  /// Calls `use` for each row of the pick, in order, with its index in the pick and the object
  /// written for it: nil when that row's body is not a custom event in a layout `writeEvent` takes.
  /// (Each half's buffers are opened once, not once a row.)
  func forEachObject(_ use: (Int, UnsafeRawBufferPointer?) -> Void) {
    for half in halves {
      half.bytes.withUnsafeBytes { bytes in
        half.offsets.withUnsafeBufferPointer { offsets in
          for offset in 0..<half.rows.count {
            let span = offsets[offset]..<offsets[offset + 1]  // an object is never empty: "{…}"
            use(half.rows.startIndex + offset, span.isEmpty ? nil : UnsafeRawBufferPointer(rebasing: bytes[span]))
          }
        }
      }
    }
  }

  /// One thread's rows and what it wrote: row `rows.startIndex + i`'s object is
  /// `bytes[offsets[i]..<offsets[i + 1]]`, empty when none was written.
  private final class Half: @unchecked Sendable {  // written by one thread, read after it is done
    let rows: ArraySlice<Int>
    var bytes: [UInt8] = []
    var offsets: [Int] = [0]
    /// What reading ahead read, kept so those reads are not optimized away.
    var sink: UInt64 = 0

    init(_ rows: ArraySlice<Int>) { self.rows = rows }

    func write(_ store: HeldItems) {
      offsets.reserveCapacity(rows.count + 1)
      bytes.reserveCapacity(rows.count * 176)  // a realistic event's object is about 170 bytes
      var time = UTCTimeText()
      for (index, row) in rows.enumerated() {
        if index % HeldItems.warmRun == 0 {
          let end = min(rows.startIndex + index + HeldItems.warmRun, rows.endIndex)
          sink &+= store.warmParts(rows: rows[(rows.startIndex + index)..<end])
        }
        let (kind, hasUser, known) = (store.kind(row: row), store.has(.hasUser, row: row), store.isCanonical(row: row))
        _ = store.withParts(row: row) {
          UsersTrack.Builder.writeEvent(
            kind: kind, hasUser: hasUser, savedAt: store.savedAt(row: row), known: known, parts: $0, time: &time,
            into: &bytes)
        }
        offsets.append(bytes.count)
      }
    }
  }

  /// The store and the halves, handed to the second thread for the length of `concurrentPerform`.
  private struct Shared: @unchecked Sendable {
    let store: HeldItems
    let halves: [Half]
  }
}
