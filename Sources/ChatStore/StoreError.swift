import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A failure of a store operation, in words that name the file, and a kind that
/// executables map to exit codes.
public struct StoreError: Error, CustomStringConvertible, Sendable {
  /// What went wrong, as a category with one documented exit code each.
  public enum Kind: String, Sendable, CaseIterable {
    /// The file or folder does not exist.
    case notFound
    /// The file is not a SQLite database, is truncated or has a damaged page.
    case notADatabase
    /// The file's schema is newer than this binary knows.
    case newerSchema
    /// The file's schema is older than the work needs; `chatdb migrate` upgrades it.
    case olderSchema
    /// An applied migration differs from the one shipped (checksum drift), or the
    /// file's schema is not one chatdb made.
    case schemaMismatch
    /// A downgrade or an unknown target version was asked for.
    case badTarget
    /// A migration or other write failed and was rolled back.
    case writeFailed
    /// Reading the file failed (an I/O or SQLite error that is not damage or a lock);
    /// nothing was changed.
    case readFailed
    /// Not enough free disk space to do the work safely.
    case diskSpace
    /// Another connection held the lock for longer than the busy timeout.
    case busy
    /// Permission denied.
    case permission
    /// Input data is malformed.
    case badInput
    /// Any other I/O failure.
    case io
    /// The reader of a pipe went away (`chatdb export -o - | head`): the command stops
    /// without a message, as `head`'s neighbours expect.
    case brokenPipe
    /// A failure no other kind describes: a bug, reported instead of guessed at.
    case internalError
  }

  public var kind: Kind
  public var message: String
  /// The file the error is about, when there is one.
  public var path: String?

  public init(_ kind: Kind, _ message: String, path: String? = nil) {
    self.kind = kind
    self.message = message
    self.path = path
  }

  public var description: String { message }

  /// An error from `errno`, naming the path and what was being done to it.
  static func posix(_ code: Int32, path: String, doing action: String) -> StoreError {
    let reason = String(cString: strerror(code))
    let kind: Kind =
      switch code {
      case ENOENT, ENOTDIR: .notFound
      case EACCES, EPERM, EROFS: .permission
      case ENOSPC, EDQUOT: .diskSpace
      default: .io
      }
    return StoreError(kind, "cannot \(action) \(path): \(reason)", path: path)
  }

  /// Translates a SQLite error met while working on `path` into a store error.
  ///
  /// `otherwise` is the kind of an error that is not damage, a lock, a full disk or a
  /// file that cannot be opened: `.writeFailed` where the work writes (SQLite rolled the
  /// transaction back), `.readFailed` where it only reads.
  public static func from(
    _ error: any Error, path: String, doing action: String, otherwise: Kind = .writeFailed
  ) -> StoreError {
    if let error = error as? StoreError { return error }
    guard let sqlite = error as? SQLiteError else {
      return StoreError(.internalError, "\(path): cannot \(action): \(error)", path: path)
    }
    if sqlite.isCorruptOrNotADatabase {
      return StoreError(.notADatabase, "\(path) is not a SQLite database or is damaged (\(sqlite.message))", path: path)
    }
    if sqlite.isBusy {
      return StoreError(.busy, "\(path) is locked by another process; try again (\(sqlite.message))", path: path)
    }
    if sqlite.isDiskFull {
      return StoreError(.diskSpace, "\(path): disk full while trying to \(action)", path: path)
    }
    let kind: Kind
    switch sqlite.code {
    case SQLiteError.ResultCode.cantOpen: kind = FileSystem.exists(path) ? .permission : .notFound
    case SQLiteError.ResultCode.readOnly, SQLiteError.ResultCode.permission: kind = .permission
    default: kind = otherwise
    }
    return StoreError(kind, "\(path): cannot \(action): \(sqlite)", path: path)
  }
}
