import OutboxSupport

extension Recovery {
  /// Loads the rows from `load.image` when it describes exactly these files (`LoadImage`), and takes
  /// it off its path, used or not, before anything is written. False: replay the segments.
  mutating func loadImage(_ firsts: [UInt64]) -> Bool {
    let path = directory + "/" + LoadImage.fileName
    defer { discardImage(path) }
    guard let checkpoint = outcome.checkpoint, let bytes = checkpointBytes, let identity = outcome.identity else {
      return false
    }
    do throws(LoadImage.Refusal) {
      guard
        let image = try LoadImage.read(
          directory: directory, checkpoint: bytes, decoded: checkpoint, segments: firsts, identity: identity)
      else { return false }
      store.items.install(image)
      outcome.segments = image.segments
      outcome.fromImage = true
      log.info("loaded \(image.table.seqs.count) rows from \(LoadImage.fileName)")
      return true
    } catch {
      switch error {
      case .stale(let why): log.info("\(LoadImage.fileName) not used, \(why): replaying the segments")
      case .damaged(let why): log.warn("\(LoadImage.fileName) not used, \(why): replaying the segments")
      }
      return false
    }
  }

  /// Takes the image off its path: renamed at once, for `Disk` to unlink on its background queue
  /// (`RecoveryOutcome.discardedImage`). Freeing a GB of cached pages, and waiting for any of them
  /// being written back, took 0.2 s and more of a start. A renamed image a kill leaves is a temporary
  /// file, removed at the next start. Under `--max-store-bytes` it goes at once: the cap counts every file.
  private mutating func discardImage(_ path: String) {
    let temp = FileIO.temporaryName(beside: path + ".old")  // random: nothing planted there is replaced
    if store.cap == nil && rename(path, temp) == 0 {
      outcome.discardedImage = temp
    } else {
      unlink(path)
    }
  }
}
