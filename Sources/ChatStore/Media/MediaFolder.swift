import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The folder of a chat file's media: `chats-<id>.media/` beside `chats-<id>.db` (0700),
/// one file a media named by its SHA-256 (0600), so the same bytes sent twice or sent
/// and received are one file. A download in progress is `<sha256>.part`; a file being
/// copied in is `.incoming-*` until its hash is known.
///
/// ```swift
/// let folder = MediaFolder(database: "/data/chats-42.db")  // /data/chats-42.media
/// let added = try folder.add(copying: "/photos/beach.jpg")  // (sha256, size)
/// folder.file(added.sha256)  // /data/chats-42.media/5f1c…
/// ```
public struct MediaFolder: Sendable, Hashable {
  /// The folder's path.
  public let path: String

  /// The media folder of the database at `database`: its name with `.db` replaced by
  /// `.media` (`.media` appended to any other name).
  public init(database: String) {
    path = (database.hasSuffix(".db") ? String(database.dropLast(3)) : database) + ".media"
  }

  /// The file of a media (whether or not it is here).
  public func file(_ sha256: String) -> String { FileSystem.joinPath(path, sha256) }

  /// The partial file of a download.
  public func partial(_ sha256: String) -> String { file(sha256) + ".part" }

  /// Creates the folder (0700) unless it exists.
  public func create() throws {
    if !FileSystem.exists(path) { try FileSystem.createPrivateDirectory(atPath: path) }
  }

  /// Bytes read and written at a time when copying a file in.
  static let piece = 256 * 1024

  /// Copies the file at `source` into the folder and names it by its SHA-256 (``stage``
  /// then ``place``): for a writer alone with the folder. A writer beside others places
  /// the copy in the transaction that stores its row (`ChatRepository.send`), so no
  /// eviction removes the file between the two.
  public func add(copying source: String) throws -> (sha256: String, size: Int64) {
    let staged = try stage(copying: source)
    try place(staged.temporary, as: staged.sha256)
    return (staged.sha256, staged.size)
  }

  /// Copies the file at `source` into the folder under a temporary name (`.incoming-*`),
  /// hashing it as it goes, and syncs it: ``place`` gives it its name. Memory stays one
  /// piece whatever the size.
  public func stage(copying source: String) throws -> (sha256: String, size: Int64, temporary: String) {
    let input = open(source, O_RDONLY | O_CLOEXEC)
    guard input >= 0 else { throw StoreError.posix(errno, path: source, doing: "read") }
    defer { close(input) }
    var info = stat()
    guard fstat(input, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
      throw StoreError(.badInput, "\(source) is not a regular file", path: source)
    }
    try create()
    let temporary = FileSystem.joinPath(path, ".incoming-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
    let output = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard output >= 0 else { throw StoreError.posix(errno, path: temporary, doing: "create") }
    var staged = false
    defer {
      close(output)
      if !staged { unlink(temporary) }
    }
    let hasher = SHA256.Hasher()
    var buffer = [UInt8](repeating: 0, count: Self.piece)
    var size: Int64 = 0
    while true {
      let read = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, Self.piece) }
      if read < 0 && errno == EINTR { continue }
      guard read >= 0 else { throw StoreError.posix(errno, path: source, doing: "read") }
      if read == 0 { break }
      try buffer.withUnsafeBytes { bytes in
        let piece = UnsafeRawBufferPointer(rebasing: bytes[0..<read])
        hasher.update(piece)
        var done = 0
        while done < read {
          let written = write(output, piece.baseAddress! + done, read - done)
          if written < 0 && errno == EINTR { continue }
          guard written > 0 else { throw StoreError.posix(errno, path: temporary, doing: "write") }
          done += written
        }
      }
      size += Int64(read)
    }
    guard fsync(output) == 0 else { throw StoreError.posix(errno, path: temporary, doing: "sync") }
    staged = true
    return (SHA256.hex(digest: hasher.finish()), size, temporary)
  }

  /// Gives a staged copy its name, replacing a file of the same bytes (atomically: a name
  /// in the folder always means whole bytes).
  public func place(_ temporary: String, as sha256: String) throws {
    try FileSystem.rename(temporary, to: file(sha256))
  }

  /// Removes a media's file and any partial download of it; the bytes it freed.
  @discardableResult
  public func remove(_ sha256: String) -> Int64 {
    var freed: Int64 = 0
    for name in [file(sha256), partial(sha256)] {
      if let size = FileSystem.size(atPath: name), unlink(name) == 0 { freed += size }
    }
    return freed
  }

  /// Removes a partial download only; the bytes it freed.
  @discardableResult
  public func remove(partialOnly sha256: String) -> Int64 {
    let name = partial(sha256)
    guard let size = FileSystem.size(atPath: name), unlink(name) == 0 else { return 0 }
    return size
  }

  /// The names in the folder (none when it does not exist).
  public func names() throws -> [String] {
    guard FileSystem.exists(path) else { return [] }
    do {
      return try FileManager.default.contentsOfDirectory(atPath: path)
    } catch {
      throw StoreError(.io, "cannot read folder \(path): \(error.localizedDescription)", path: path)
    }
  }

  /// Whether `name` is a media's file name (64 lowercase hex digits).
  public static func isMediaName<S: StringProtocol>(_ name: S) -> Bool {
    name.utf8.count == 64 && name.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
  }
}
