import ChatStore

#if canImport(Glibc)
  import Glibc
#endif

/// A media file arriving as `media` lines (format 3, `export --with-media`): written
/// under a temporary `.incoming-*` name in the media folder, then synced and named by
/// its SHA-256 once its last piece arrived and the bytes hashed to that name (see
/// ``MediaSequence``). A file not to be written (already here, or named by no media
/// row) is followed without writing. Dropped unfinished, its temporary file goes.
final class IncomingMedia {
  let sha256: String
  let size: Int64
  /// The temporary file, when the bytes are written.
  let temporaryPath: String?
  private let descriptor: Int32
  private var named = false

  /// Follows a file without writing it.
  init(skipping sha256: String, size: Int64) {
    self.sha256 = sha256
    self.size = size
    temporaryPath = nil
    descriptor = -1
  }

  /// Creates `.incoming-<pid>-<random>` in `folder` (0600), the folder (0700) if need be.
  init(sha256: String, size: Int64, in folder: MediaFolder) throws {
    self.sha256 = sha256
    self.size = size
    try folder.create()
    let path = FileSystem.joinPath(folder.path, ".incoming-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
    descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw Self.failure(errno, "create", path) }
    temporaryPath = path
  }

  deinit {
    if descriptor >= 0 { close(descriptor) }
    if let temporaryPath, !named { unlink(temporaryPath) }
  }

  /// Appends the bytes of a piece.
  func write(_ bytes: [UInt8]) throws {
    guard let temporaryPath else { return }
    try bytes.withUnsafeBytes { piece in
      var done = 0
      while done < piece.count {
        let written = Glibc.write(descriptor, piece.baseAddress! + done, piece.count - done)
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { throw Self.failure(errno, "write", temporaryPath) }
        done += written
      }
    }
  }

  /// Syncs the file and names it by its hash in `folder` (true), or nothing when it was
  /// not written (false).
  func finish(in folder: MediaFolder) throws -> Bool {
    guard let temporaryPath else { return false }
    guard fsync(descriptor) == 0 else { throw Self.failure(errno, "sync", temporaryPath) }
    try FileSystem.rename(temporaryPath, to: folder.file(sha256))
    named = true
    return true
  }

  private static func failure(_ code: Int32, _ doing: String, _ path: String) -> StoreError {
    StoreError(
      code == ENOSPC ? .diskSpace : code == EACCES ? .permission : .io,
      "cannot \(doing) \(path): \(String(cString: strerror(code)))", path: path)
  }
}

extension RecordWriter {
  /// The first piece of a media file: where its bytes go. Not written when no media row
  /// names it (no record before it has it as an attachment) or its file is already here;
  /// a size other than its row's is the line's fault.
  func beginMedia(_ piece: MediaPiece) throws -> IncomingMedia {
    try flushPending()
    let known = try db.cachedStatement("SELECT size FROM Media WHERE sha256 = ?1").first([piece.sha256]) {
      $0.int64(0)
    }
    guard let known else { return IncomingMedia(skipping: piece.sha256, size: piece.size) }
    guard known == piece.size else {
      throw RecordError.field(
        "size", "\(piece.size), but the attachments of media \(piece.sha256) say it is \(known) bytes")
    }
    let folder = mediaFolder
    if FileSystem.size(atPath: folder.file(piece.sha256)) == piece.size {
      return IncomingMedia(skipping: piece.sha256, size: piece.size)
    }
    return try IncomingMedia(sha256: piece.sha256, size: piece.size, in: folder)
  }

  /// The last piece arrived and checked out: the file takes its name, its row becomes
  /// `local` (a file already here too) and is committed.
  func finishMedia(_ media: IncomingMedia) throws {
    let folder = mediaFolder
    if try media.finish(in: folder) {
      createdMedia.append(media.sha256)
      summary.mediaFiles += 1
      summary.mediaBytes += media.size
    } else if FileSystem.size(atPath: folder.file(media.sha256)) != media.size {
      return
    }
    try db.cachedStatement("UPDATE Media SET state = 'local' WHERE sha256 = ?1 AND state <> 'local'").execute([
      media.sha256
    ])
    try commitNow()
  }

  /// After a failed import: removes the files this writer put in the folder whose rows
  /// are not `local` in the file now (their batch was rolled back), or all of them when
  /// the file is thrown away (`discardsOnFailure`).
  func discardMedia() {
    let folder = mediaFolder
    for sha256 in createdMedia {
      let state = try? db.string("SELECT state FROM Media WHERE sha256 = ?", [sha256])
      if options.discardsOnFailure || state != MediaState.local.rawValue { unlink(folder.file(sha256)) }
    }
    createdMedia.removeAll()
  }
}
