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
    /// An applied migration differs from the one shipped (checksum drift), or the
    /// file's schema is not one chatdb made.
    case schemaMismatch
    /// A downgrade or an unknown target version was asked for.
    case badTarget
    /// A migration or other write failed and was rolled back.
    case writeFailed
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
  public static func from(_ error: any Error, path: String, doing action: String) -> StoreError {
    if let error = error as? StoreError { return error }
    guard let sqlite = error as? SQLiteError else {
      return StoreError(.io, "\(path): cannot \(action): \(error)", path: path)
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
    let kind: Kind = sqlite.code == 14 /* SQLITE_CANTOPEN */ ? (FileSystem.exists(path) ? .permission : .notFound) : .writeFailed
    return StoreError(kind, "\(path): cannot \(action): \(sqlite)", path: path)
  }
}
