import OutboxJSON
import OutboxSupport

/// Housekeeping on the store's files: version checks before anything is touched, temporaries and
/// quarantine copies.
enum StoreFiles {
  /// Refuses (exit 2, touching nothing) any store file whose declared version this build does not read.
  static func checkVersions(directory: String, names: [String]) throws(StartupError) {
    for name in names {
      let path = directory + "/" + name
      if name == Checkpoint.fileName || name == "snapshot.json" || name == "snapshot.prev.json" {
        let known: Int64 = name == Checkpoint.fileName ? Checkpoint.version : 1
        if let version = jsonHeaderVersion(path), version != .int(known) {
          throw .unsupportedVersion(file: path, version: version)
        }
      } else if let version = binaryHeaderVersion(path, name: name) {
        throw .unsupportedVersion(file: path, version: .int(Int64(version)))
      }
    }
  }

  /// The `version` member of a JSON file's first line, if it has one.
  private static func jsonHeaderVersion(_ path: String) -> JSONValue? {
    guard let bytes = try? FileIO.read(path), let end = bytes.firstIndex(of: 0x0A) ?? Optional(bytes.count),
      case .object(let members)? = try? JSONReader.parse(Array(bytes[0..<end]), maxDepth: 16)
    else { return nil }
    return members["version"]
  }

  /// A binary segment's declared version when it is not the one its name implies.
  private static func binaryHeaderVersion(_ path: String, name: String) -> UInt32? {
    let expected: UInt32
    if SegmentFormat.first(ofName: name) != nil {
      expected = SegmentFormat.version
    } else if name.hasPrefix("journal.") && name.utf8.count == 28 {
      expected = 1
    } else {
      return nil
    }
    guard let bytes = try? FileIO.read(path, limit: SegmentFormat.headerSize), bytes.count >= SegmentFormat.headerSize,
      bytes.prefix(8).elementsEqual(SegmentFormat.magic)
    else { return nil }
    let version = bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self)) }
    return version == expected ? nil : version
  }

  /// Deletes temp files a killed process left behind.
  static func removeTemporaries(directory: String, names: [String]) {
    for name in names where name.contains(".tmp.") { unlink(directory + "/" + name) }
  }

  /// Copies a file into `quarantine/` before anything touches it.
  static func quarantine(directory: String, name: String) {
    let dir = directory + "/quarantine"
    if mkdir(dir, 0o700) == 0 {
      try? FileIO.syncDirectory(directory)  // the new quarantine/ itself, before a cut relies on its copy
    } else if errno != EEXIST {
      return
    }
    var info = stat()
    // Only a real directory of ours: a symlink planted as quarantine/ is never written through.
    guard lstat(dir, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid() else { return }
    guard let bytes = try? FileIO.read(directory + "/" + name) else { return }
    let target = dir + "/" + name + "." + String(Clock.system.now())
    try? FileIO.writeAtomically(bytes, to: target, directory: dir)
  }
}
