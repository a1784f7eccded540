import Dispatch
import OutboxSupport
import Synchronization

/// Reads the segments recovery replays, one ahead, on a thread of its own: each file's bytes, and its
/// intact records from the first after the header, with their item bodies' parts (`BodyParts`), up
/// to the first read that is not an intact record. So reading, checksumming and splitting a segment
/// overlap with storing the one before it on the loading thread.
///
/// It decides nothing: what the read that ended a scan means (the end, a torn tail, damage) is
/// recovery's, exactly as when it reads the records itself, and whatever lies past that point
/// recovery reads itself. Files are only read here; recovery's repairs (a cut tail, a quarantined
/// copy) touch a segment only after this thread has read it.
final class SegmentPrefetch: Sendable {
  /// One segment read ahead: valid from `next()` until `done()`.
  final class Segment: @unchecked Sendable {  // handed over by the semaphores, one side at a time
    fileprivate let buffer = ReadBuffer()
    private var bytes: UnsafeRawBufferPointer?
    private var error: FileError?
    /// The intact records from the first after the header, in order, with their items' parts.
    private(set) var records: [SegmentRecord] = []
    /// The read after the last of `records`; nil when the file was not scanned (not this format).
    private(set) var stop: SegmentReader.ReadResult?

    /// The file's bytes (nil when there is no such file), or why it could not be read: what
    /// `ReadBuffer.load` gave on the prefetch thread.
    func load() throws(FileError) -> UnsafeRawBufferPointer? {
      if let error { throw error }
      return bytes
    }

    fileprivate func fill(_ path: String) {
      records.removeAll(keepingCapacity: true)
      (bytes, error, stop) = (nil, nil, nil)
      do { bytes = try buffer.load(path) } catch { self.error = error }
      guard let bytes else { return }
      let reader = SegmentReader(bytes)
      guard reader.headerVersion == SegmentFormat.version else { return }
      var at = SegmentFormat.headerSize
      while true {
        let result = reader.read(at: at)
        guard case .record(let record) = result else {
          stop = result
          return
        }
        records.append(SegmentRecord(record))
        at = record.end
      }
    }
  }

  /// Segments in flight: one being replayed, one being read.
  static let depth = 2
  private let paths: [String]
  private let segments: [Segment]
  /// Free buffers. Made at 0 and signalled `depth` times: libdispatch traps when a semaphore is
  /// freed below the value it was made with, and a recovery that stops early (an unreadable segment)
  /// leaves this one wherever the two threads' last waits and signals put it.
  private let free = DispatchSemaphore(value: 0)
  private let ready = DispatchSemaphore(value: 0)
  private let cancelled = Atomic<Bool>(false)
  private let taken = Mutex(0)

  /// Starts reading `paths` in order; nil when no thread could be made (recovery reads them itself).
  init?(paths: [String]) {
    self.paths = paths
    segments = (0..<Self.depth).map { _ in Segment() }
    for _ in 0..<Self.depth { free.signal() }
    guard DetachedThread.detach({ [self] in produce() }) else { return nil }
  }

  private func produce() {
    for (n, path) in paths.enumerated() {
      free.wait()
      guard !cancelled.load(ordering: .acquiring) else { return }
      segments[n % Self.depth].fill(path)
      ready.signal()
    }
  }

  /// The next segment, in the order of `paths` (waits for it to be read).
  func next() -> Segment {
    ready.wait()
    return taken.withLock { n in
      defer { n += 1 }
      return segments[n % Self.depth]
    }
  }

  /// The segment `next` gave is no longer used: its buffer may take the next file.
  func done() { free.signal() }

  /// Stops reading ahead (recovery stopped early).
  func cancel() {
    cancelled.store(true, ordering: .releasing)
    for _ in 0..<Self.depth { free.signal() }
  }
}

/// An intact record with the parts of its item body, when it is an item record.
struct SegmentRecord {
  var record: SegmentReader.Record
  var parts: BodyParts?

  init(_ record: SegmentReader.Record) {
    self.record = record
    if record.type == .item, let item = ItemRecord(record.payload) {
      parts = BodyParts(finding: item.body, 0..<item.body.count)
    }
  }
}
