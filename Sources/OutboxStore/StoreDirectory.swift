import OutboxSupport

/// The store directory's safety rules, after OpenSSH's StrictModes and systemd's state directories:
/// a new directory is created 0700; an existing one must be a directory owned by this user that
/// neither group nor others can write. Files inside are never followed through symlinks.
enum StoreDirectory {
  static func prepare(_ path: String) throws(StartupError) {
    guard path.hasPrefix("/") || (!path.isEmpty && path != ".") else {
      throw .refused("invalid_store_path", "the store path \"\(path)\" is empty")
    }
    do { try FileIO.makeDirectories(path) } catch {
      throw .refused("cannot_create_store", "cannot create the store \(path): \(error)")
    }
    var info = stat()
    guard stat(path, &info) == 0 else {
      throw .refused("cannot_create_store", "cannot use the store \(path): \(errnoText(errno))")
    }
    guard (info.st_mode & S_IFMT) == S_IFDIR else {
      throw .refused("unsafe_store", "refusing the store \(path): it is not a directory")
    }
    guard info.st_uid == geteuid() else {
      throw .refused(
        "unsafe_store",
        "refusing the store \(path): it is owned by uid \(info.st_uid), not by this user (uid \(geteuid()))")
    }
    guard info.st_mode & 0o022 == 0 else {
      let mode = String(info.st_mode & 0o777, radix: 8)
      throw .refused(
        "unsafe_store", "refusing the store \(path): its mode \(mode) lets others write to it (chmod go-w to fix)")
    }
  }
}
