import Dispatch

/// The append-only journal: every change is written here before its response goes out.
///
/// Group commit: records of one input burst collect in `buffer` and go to the file in one `write`
/// (`commit`), then the burst's responses are written. The `--fsync` policy decides when the file is
/// flushed to stable storage: before the responses (`always`), about once a second in the background
/// (`everysec`), or never by us (`never`). A failed write is cut back off the file and reported; a
/// failed fsync is never retried on the same file: the segment is abandoned for a new one.
package final class Journal {
  package let directory: String
  package let policy: FsyncPolicy
  private var fd: Int32 = -1
  private var goodSize = 0
  private var buffer: [UInt8] = []
  /// The last `savedAt` text written, reused for items saved in the same millisecond.
  private var savedAtText = UTCTimeText()
  /// First seq of every segment on disk, oldest first; the last one is being written.
  package private(set) var segments: [UInt64] = []
  private var sizes: [UInt64: Int] = [:]
  private var lastSync = Clock.monotonicSeconds()
  private var unsynced = false
  private let syncQueue = DispatchQueue(label: "push-outbox.fsync")
  private let syncFailure = Mailbox<FileError>()

  /// Opens a new segment starting at `first`, after recovery found `existing` segments.
  package init(directory: String, policy: FsyncPolicy, existing: [UInt64: Int], first: UInt64) throws(FileError) {
    self.directory = directory
    self.policy = policy
    self.sizes = existing
    self.segments = existing.keys.sorted()
    try openSegment(first: first)
  }

  package var hasPendingRecords: Bool { !buffer.isEmpty }
  package var totalBytes: Int64 { Int64(sizes.values.reduce(0, +) + buffer.count) }
  /// The segment being written.
  package var currentFirst: UInt64 { segments.last ?? 0 }

  private func path(_ first: UInt64) -> String { directory + "/" + JournalFormat.segmentName(first: first) }

  private func openSegment(first: UInt64) throws(FileError) {
    let path = path(first)
    let newFD = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600)
    guard newFD >= 0 else { throw FileError(operation: "create", path: path, code: errno) }
    do throws(FileError) {
      try FileIO.writeAll(newFD, JournalFormat.header, path: path)
      try FileIO.sync(newFD, path: path)
      try FileIO.syncDirectory(directory)
    } catch {
      closeFD(newFD)
      unlink(path)
      throw error
    }
    closeFD(fd)
    fd = newFD
    goodSize = JournalFormat.headerSize
    sizes[first] = goodSize
    if segments.last != first { segments.append(first) }
  }

  // MARK: - Recording

  package func add(_ item: PendingItem) {
    JournalFormat.appendRecord(.add, seq: item.seq, to: &buffer) { item.encodeJSON(into: &$0, savedAtText: &savedAtText) }
  }

  package func remove(_ seqs: [UInt64], recordSeq: UInt64) {
    guard !seqs.isEmpty else { return }
    var payload: [UInt8] = [UInt8(ascii: "[")]
    for (n, seq) in seqs.enumerated() {
      if n > 0 { payload.append(UInt8(ascii: ",")) }
      payload.appendUInt(seq)
    }
    payload.append(UInt8(ascii: "]"))
    JournalFormat.appendRecord(.remove, seq: recordSeq, payload: payload, to: &buffer)
  }

  /// Writes the burst's records; with `always`, also flushes them to stable storage.
  /// On failure nothing of the burst stays in the file, and the error says why.
  package func commit() throws(FileError) {
    guard !buffer.isEmpty else { return }
    defer { buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20) }
    let path = path(currentFirst)
    do throws(FileError) {
      try FileIO.writeAll(fd, buffer, path: path)
      if policy == .always { try FileIO.sync(fd, path: path) }
    } catch {
      abandonTail(after: error)
      throw error
    }
    goodSize += buffer.count
    sizes[currentFirst] = goodSize
    unsynced = policy != .always
  }

  /// Cuts a failed write off the file; if even that fails, or an fsync failed, moves to a new segment.
  private func abandonTail(after error: FileError) {
    if error.operation != "fsync" && ftruncate(fd, off_t(goodSize)) == 0 { return }
    let next = (segments.last ?? 0) + 1
    try? openSegment(first: max(next, currentFirst + 1))
  }

  // MARK: - Background flushing and compaction

  /// For `everysec`: starts a background fsync when a second has passed since the last one.
  /// Reports an earlier background fsync failure once, after moving to a new segment.
  package func tick(nextSeq: UInt64) -> FileError? {
    if let failure = syncFailure.take() {
      try? rotate(first: nextSeq)
      return failure
    }
    guard policy == .everysec, unsynced, Clock.monotonicSeconds() - lastSync >= 1 else { return nil }
    unsynced = false
    lastSync = Clock.monotonicSeconds()
    let copy = dup(fd)
    guard copy >= 0 else { return nil }
    let path = path(currentFirst)
    let slot = syncFailure
    syncQueue.async {
      do throws(FileError) { try FileIO.sync(copy, path: path) } catch { slot.put(error) }
      closeFD(copy)
    }
    return nil
  }

  /// Milliseconds until `tick` has work, or -1.
  package var msUntilSync: Int32 {
    guard policy == .everysec, unsynced else { return -1 }
    return Int32(max(0, (lastSync + 1 - Clock.monotonicSeconds()) * 1000) + 1)
  }

  /// Starts a new segment at `first` (at a snapshot), after flushing the current one.
  package func rotate(first: UInt64) throws(FileError) {
    guard first != currentFirst else { return }
    if policy != .never { try? FileIO.sync(fd, path: path(currentFirst)) }
    try openSegment(first: first)
    unsynced = false
  }

  /// Deletes segments whose first seq is below `first`: a durable snapshot covers them.
  package func deleteSegments(before first: UInt64) {
    let current = currentFirst
    for old in segments where old < first && old != current {
      unlink(path(old))
      sizes[old] = nil
    }
    segments.removeAll { $0 < first && $0 != current }
  }

  /// Stops tracking a segment that was moved away (recovery sets damaged ones aside).
  package func forget(segment first: UInt64) {
    guard first != currentFirst else { return }
    sizes[first] = nil
    segments.removeAll { $0 == first }
  }

  /// Flushes what was written (at shutdown).
  package func close() {
    syncQueue.sync {}
    if policy != .never { try? FileIO.sync(fd, path: path(currentFirst)) }
    closeFD(fd)
    fd = -1
  }
}
