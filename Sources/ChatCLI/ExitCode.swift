import ChatStore

/// The exit codes of `chatdb`, `chat-sync` and `chat-relay`: one table for all three
/// programs, mirrored by the "Exit codes" section of docs/cli.md (a test checks both agree).
///
/// Codes from 64 up follow sysexits.h; the low codes are the tools' own outcomes.
public enum ExitCode: Int32, CaseIterable, Sendable {
  case success = 0
  /// Some files of an `--all` run failed; each is reported. Never used for anything else.
  case partialFailure = 1
  case diskLow = 2
  case diskCritical = 3
  case findings = 4
  case unplannable = 6
  case unsent = 7
  case newerSchema = 10
  case schemaMismatch = 11
  case badTarget = 12
  case diskSpace = 13
  case writeFailed = 14
  case olderSchema = 15
  case readFailed = 16
  case usage = 64
  case dataError = 65
  case notFound = 66
  case unavailable = 69
  case internalError = 70
  case io = 74
  case busy = 75
  case permission = 77
  case brokenPipe = 141

  /// What the code means, as the table in docs/cli.md says it.
  public var meaning: String {
    switch self {
    case .success: "success"
    case .partialFailure: "some files of an `--all` run failed (each is reported with its own code)"
    case .diskLow: "`usage --check`: the disk is low"
    case .diskCritical: "`usage --check`: the disk is critical"
    case .findings:
      "`check` found problems, or `index verify` found a hot query that scans or a search index that differs from its rows"
    case .unplannable: "`index verify`: a hot query could not be planned (a table or column it needs is missing)"
    case .unsent:
      "`chat-sync run --once`: synced, but some messages are still in the outbox (waiting for a retry, or failed for good: see `chat-sync status`)"
    case .newerSchema: "the file's schema is newer than this program knows"
    case .schemaMismatch:
      "the file's applied migrations differ from the shipped ones (drift), or it is not a chatdb file"
    case .badTarget: "a downgrade or an unknown target version was asked for"
    case .diskSpace: "not enough free disk space to do the work safely, or the disk filled up"
    case .writeFailed: "a write failed and was rolled back; the file is as it was before the failed transaction"
    case .olderSchema: "the file's schema is older than the command needs: run `chatdb migrate` on it"
    case .readFailed: "reading the file failed; nothing was changed"
    case .usage: "bad command line (unknown option, missing or invalid value)"
    case .dataError:
      "bad input data, or the file is not a SQLite database or is damaged, or (chosen with `--user` or `--all`) is a symbolic link out of the data folder"
    case .notFound: "a file or folder named on the command line does not exist"
    case .unavailable:
      "the relay could not be reached (`chat-sync`); nothing was lost: queued messages wait in the outbox; or `chat-relay serve` cannot listen on its address (taken, or not this machine's)"
    case .internalError: "an unexpected internal error (a bug: please report it)"
    case .io: "an I/O error on a file other than a database (input, output, pipe)"
    case .busy: "the database is locked by another process; try again"
    case .permission:
      "permission denied: a file's mode, or the relay refused the token or its TLS certificate did not verify (`chat-sync`)"
    case .brokenPipe:
      "standard output was closed by its reader (as `head -1` does): stopped quietly, as a program killed by SIGPIPE (128 + 13)"
    }
  }

  /// The code for a store error's kind.
  public init(_ kind: StoreError.Kind) {
    switch kind {
    case .notFound: self = .notFound
    case .notADatabase, .badInput: self = .dataError
    case .newerSchema: self = .newerSchema
    case .olderSchema: self = .olderSchema
    case .schemaMismatch: self = .schemaMismatch
    case .badTarget: self = .badTarget
    case .writeFailed: self = .writeFailed
    case .readFailed: self = .readFailed
    case .diskSpace: self = .diskSpace
    case .busy: self = .busy
    case .permission: self = .permission
    case .io: self = .io
    case .brokenPipe: self = .brokenPipe
    case .internalError: self = .internalError
    }
  }

  /// The one place an error becomes an exit code: its own code when it carries one,
  /// the table's row for a store or SQLite error, otherwise `internalError` (never 1).
  public init(for error: any Error) {
    switch error {
    case is UsageError: self = .usage
    case let error as StoreError: self = ExitCode(error.kind)
    case let error as SQLiteError:
      if error.isBusy {
        self = .busy
      } else if error.isCorruptOrNotADatabase {
        self = .dataError
      } else if error.isDiskFull {
        self = .diskSpace
      } else {
        self = .internalError
      }
    case let error as any ExitCodeProviding: self = ExitCode(rawValue: error.exitCode) ?? .internalError
    default: self = .internalError
    }
  }

  /// The short name used as `error.kind` in JSON, e.g. `"olderSchema"`.
  public var kind: String { String(describing: self) }
}
