import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The few file-system operations the store needs, with private permissions and
/// errors that name the path.
public enum FileSystem {
  /// Creates an empty file with mode 0600 unless it exists.
  public static func createPrivateFile(atPath path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw StoreError.posix(errno, path: path, doing: "create") }
    close(fd)
  }

  /// Creates a new, empty file with mode 0600; throws `.badInput` when something is
  /// already at `path` (`O_EXCL`: never opens a file another process made).
  public static func createNewPrivateFile(atPath path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      let code = errno
      if code == EEXIST { throw StoreError(.badInput, "\(path) already exists", path: path) }
      throw StoreError.posix(code, path: path, doing: "create")
    }
    close(fd)
  }

  /// Creates a folder and its missing parents with mode 0700.
  public static func createPrivateDirectory(atPath path: String) throws {
    do {
      try FileManager.default.createDirectory(
        atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
      throw StoreError(.io, "cannot create folder \(path): \(error.localizedDescription)", path: path)
    }
  }

  /// Atomically replaces `destination` with `source` (same file system).
  public static func rename(_ source: String, to destination: String) throws {
    guard Glibc.rename(source, destination) == 0 else {
      throw StoreError.posix(errno, path: destination, doing: "rename \(source) to")
    }
  }

  /// The size of a file in bytes, or nil when it does not exist.
  public static func size(atPath path: String) -> Int64? {
    var info = stat()
    return stat(path, &info) == 0 ? Int64(info.st_size) : nil
  }

  /// When a file was last modified (seconds since 1970), or nil when it does not exist.
  public static func modifiedAt(_ path: String) -> Double? {
    var info = stat()
    return stat(path, &info) == 0 ? Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9 : nil
  }

  /// The permission bits of a file, or nil when it does not exist.
  public static func permissions(atPath path: String) -> Int? {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_mode & 0o777) : nil
  }

  /// Refuses a secret's file (a token, a private key) that others than its owner may
  /// read (77), or that does not exist (66): `what` names it in the message.
  ///
  ///     try FileSystem.requireOwnerOnly("relay.key", what: "the private key")
  public static func requireOwnerOnly(_ path: String, what: String) throws {
    guard let mode = permissions(atPath: path) else {
      throw StoreError(.notFound, "\(path): no such file", path: path)
    }
    guard mode & 0o077 == 0 else {
      throw StoreError(
        .permission, "\(path): mode \(String(mode, radix: 8)) lets others read \(what); run chmod 600 \(path)",
        path: path)
    }
  }

  /// Removes a database file and its companions (`-wal`, `-shm`, `-journal`), as far
  /// as they exist: a file a command made itself and gives up on.
  public static func removeDatabase(atPath path: String) {
    for suffix in ["", "-wal", "-shm", "-journal"] { _ = unlink(path + suffix) }
  }

  /// Whether something exists at `path`.
  public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

  /// Where SQLite writes temporary files such as VACUUM's copy: the first of
  /// `SQLITE_TMPDIR`, `TMPDIR`, /var/tmp, /usr/tmp and /tmp that exists, as SQLite's
  /// unix VFS searches them. See <https://sqlite.org/tempfiles.html>.
  public static func sqliteTemporaryDirectory(
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) -> String {
    for candidate in [environment["SQLITE_TMPDIR"], environment["TMPDIR"], "/var/tmp", "/usr/tmp", "/tmp"] {
      if let candidate, !candidate.isEmpty, exists(candidate) { return candidate }
    }
    return "."
  }

  // MARK: - Path text

  /// A path split into the folder that holds its last component and that component,
  /// by text alone (POSIX `dirname` and `basename`, see
  /// <https://pubs.opengroup.org/onlinepubs/9699919799/utilities/dirname.html>):
  /// no file-system access, no Foundation, and no input that traps.
  ///
  /// ```swift
  /// FileSystem.splitPath("data/chats-1.db")  // ("data", "chats-1.db")
  /// FileSystem.splitPath("chats-1.db")       // (".", "chats-1.db")
  /// FileSystem.splitPath("/x")               // ("/", "x")
  /// FileSystem.splitPath("a//b/")            // ("a", "b")
  /// FileSystem.splitPath("/")                // ("/", "")
  /// FileSystem.splitPath("")                 // (".", "")
  /// ```
  /// Repeated slashes count as one and trailing slashes are dropped; `.` and `..` are
  /// components like any other (resolving them needs the file system: a link may
  /// stand in the way). The folder is never empty: a bare name's folder is `.`.
  /// Works on UTF-8 bytes, where `/` never occurs inside a multi-byte character.
  public static func splitPath(_ path: String) -> (folder: String, name: String) {
    let slash = UInt8(ascii: "/")
    let bytes = Array(path.utf8)
    var end = bytes.count
    while end > 1, bytes[end - 1] == slash { end -= 1 }
    if end == 0 { return (".", "") }
    if end == 1, bytes[0] == slash { return ("/", "") }
    var nameStart = end
    while nameStart > 0, bytes[nameStart - 1] != slash { nameStart -= 1 }
    let name = String(decoding: bytes[nameStart..<end], as: UTF8.self)
    var folderEnd = nameStart
    while folderEnd > 0, bytes[folderEnd - 1] == slash { folderEnd -= 1 }
    if nameStart == 0 { return (".", name) }
    if folderEnd == 0 { return ("/", name) }
    // Collapse repeated slashes inside the folder, so folder + "/" + name is the
    // path in its normal form.
    var folder: [UInt8] = []
    folder.reserveCapacity(folderEnd)
    for byte in bytes[0..<folderEnd] where !(byte == slash && folder.last == slash) { folder.append(byte) }
    return (String(decoding: folder, as: UTF8.self), name)
  }

  /// The folder that holds what `path` names, by text alone: `.` for a bare name, `/`
  /// for `/x` (and for `/`). See `splitPath(_:)`.
  public static func parentFolder(of path: String) -> String { splitPath(path).folder }

  /// The last component of `path` without trailing slashes (`""` for `/` and `""`).
  /// See `splitPath(_:)`.
  public static func lastComponent(of path: String) -> String { splitPath(path).name }

  /// `name` inside `folder`: `folder/name`, without doubling a slash.
  public static func joinPath(_ folder: String, _ name: String) -> String {
    if folder.isEmpty { return name }
    return folder.utf8.last == UInt8(ascii: "/") ? folder + name : folder + "/" + name
  }

  /// A database file and its `-wal`, in bytes: the data it holds on disk.
  ///
  /// The `-shm` is left out: it is the WAL index in shared memory (32 KiB a block),
  /// rebuilt from the `-wal` and removed when the last connection closes, not data.
  /// See <https://sqlite.org/walformat.html#shm>.
  public static func databaseSize(atPath path: String) -> Int64 {
    ["", "-wal"].reduce(0) { $0 + (size(atPath: path + $1) ?? 0) }
  }

  /// Whether two paths (or their nearest existing parents) are on the same file
  /// system (`st_dev`); false when either cannot be looked at.
  public static func onSameFileSystem(_ a: String, _ b: String) -> Bool {
    func device(_ path: String) -> dev_t? {
      var probe = path
      // Each step shortens the path until it reaches "." or "/", so the walk ends.
      while !exists(probe), probe != "/", probe != "." { probe = parentFolder(of: probe) }
      var info = stat()
      return stat(probe, &info) == 0 ? info.st_dev : nil
    }
    guard let x = device(a), let y = device(b) else { return false }
    return x == y
  }
}

/// Free and total space of the file system that holds a path.
public struct DiskSpace: Sendable, Equatable {
  /// Bytes this user can still write (`f_bavail × f_frsize`).
  public var available: Int64
  /// Size of the file system in bytes.
  public var total: Int64

  public init(available: Int64, total: Int64) {
    self.available = available
    self.total = total
  }

  /// Measures the file system that holds `path` (or its nearest existing parent).
  public static func of(_ path: String) throws -> DiskSpace {
    var probe = path
    // Each step shortens the path until it reaches "." or "/", so the walk ends.
    while !FileSystem.exists(probe), probe != "/", probe != "." {
      probe = FileSystem.parentFolder(of: probe)
    }
    var info = statvfs()
    guard statvfs(probe, &info) == 0 else { throw StoreError.posix(errno, path: probe, doing: "measure free space of") }
    return DiskSpace(
      available: Int64(info.f_bavail) * Int64(info.f_frsize), total: Int64(info.f_blocks) * Int64(info.f_frsize))
  }
}

extension DiskSpace {
  /// Throws `.diskSpace` (naming `path` and what the room is for) unless the file
  /// system holding `place` has `bytes` available to this user.
  public static func require(
    _ bytes: Int64, in place: String, for path: String, to purpose: String, probe: DiskSpaceProbe = DiskSpace.of
  ) throws {
    let space = try probe(place)
    guard space.available >= bytes else {
      throw StoreError(
        .diskSpace,
        "\(path): \(purpose) needs about \(bytes) bytes free in \(place), only \(space.available) available",
        path: path)
    }
  }
}

/// How free space is measured; tests inject fixed figures.
public typealias DiskSpaceProbe = @Sendable (String) throws -> DiskSpace
