import OutboxSupport

/// `--max-store-bytes`: a cap on the whole store directory, counted as the files' sizes: the
/// segments (dead letters included), the checkpoint, temporary files, `quarantine/` and `LOCK`.
///
/// Nothing is ever dropped or evicted. A save, import or requeue whose journal record would bring the
/// directory past `max - headroom` is refused (`-32001 store_full`). The headroom is what a snapshot
/// needs to run on a full store, so a full store can always free space: a segment rewrite's temporary
/// file (at most `rewriteLimit`; a larger rewrite waits until its segment is empty and is deleted, which
/// needs no room), the journal's bookkeeping records (removals, leases, lease ends, dead letters are never
/// refused: they are appended before a reply, whatever the cap) and a new checkpoint's temporary file.
/// Under a cap the journal rotates at `segmentLimit` (1/16 of the cap, 16 KiB to 4 MiB) so that a
/// rewrite is small against it.
package struct StoreCap: Sendable {
  package let max: Int
  /// The journal rotates at this size under the cap.
  let segmentLimit: Int

  /// The smallest cap accepted: below it the headroom would leave nothing for saves.
  package static let minimum = 256 << 10

  package init(max: Int) {
    self.max = max
    segmentLimit = Swift.min(Journal.segmentLimit, Swift.max(16 << 10, max / 16))
  }

  /// The largest segment rewrite a snapshot writes under the cap.
  var rewriteLimit: Int { 2 * segmentLimit }

  /// The room kept free for snapshots, given the last checkpoint's size.
  package func headroom(checkpointBytes: Int) -> Int {
    rewriteLimit + segmentLimit + Swift.max(16 << 10, 2 * checkpointBytes)
  }

  /// The bytes of every regular file in the store directory and in `quarantine/` (sizes, not blocks).
  static func measure(_ directory: String) -> Int {
    var total = 0
    for dir in [directory, directory + "/quarantine"] {
      for name in (try? FileIO.list(dir)) ?? [] {
        var info = stat()
        if lstat(dir + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { total += Int(info.st_size) }
      }
    }
    return total
  }
}

extension Store {
  /// The flag a refusal names (`error.data.limit`).
  static let flag = "max-store-bytes"

  /// The store directory's bytes as the cap counts them: the journal's segments as written (and the
  /// records waiting for this burst's commit) plus the other files, measured at start and after each
  /// snapshot. 0 without files.
  package var storeBytes: Int {
    guard let journal else { return 0 }
    return Int(journal.totalBytes) + filesBesideJournal
  }

  /// Bytes saves may bring the directory to: the cap minus the snapshot's headroom.
  package var usableStoreBytes: Int? {
    cap.map { Swift.max(0, $0.max - $0.headroom(checkpointBytes: checkpointBytes)) }
  }

  /// Refuses a journal record of `recordBytes` that would pass the cap's usable bytes.
  func admitFiles(_ recordBytes: Int) throws(StoreError) {
    guard let cap, journal != nil, let usable = usableStoreBytes else { return }
    let current = storeBytes
    if recordBytes > usable - current { throw .storeFull(limit: Self.flag, value: cap.max, current: current) }
  }

  /// Checks every limit an item must meet before it is saved: `--max-item-bytes`, `--max-pending`,
  /// `--max-pending-bytes` and `--max-store-bytes`.
  package func admit(bodyBytes: Int, clientIDBytes: Int) throws(StoreError) {
    try items.admit(itemBytes: PendingItem.byteCount(body: bodyBytes, clientID: clientIDBytes))
    try admitFiles(SegmentFormat.itemRecordBytes(body: bodyBytes, clientID: clientIDBytes))
  }

  /// For items saved together, one after the other: the index of the first that `admit` would
  /// refuse once the ones before it were held, and why; nil when they all fit.
  package func firstRefused(_ sizes: [(body: Int, clientID: Int)]) -> (index: Int, error: StoreError)? {
    var first = items.firstRefused(itemBytes: sizes.map { PendingItem.byteCount(body: $0.body, clientID: $0.clientID) })
    guard let cap, journal != nil, let usable = usableStoreBytes else { return first }
    let current = storeBytes
    var bytes = current
    for (index, size) in sizes.enumerated() where index < (first?.index ?? Int.max) {
      bytes += SegmentFormat.itemRecordBytes(body: size.body, clientID: size.clientID)
      if bytes > usable {
        first = (index, .storeFull(limit: Self.flag, value: cap.max, current: current))
        break
      }
    }
    return first
  }
}
