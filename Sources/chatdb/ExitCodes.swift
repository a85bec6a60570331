import ChatCLI
import ChatStore

/// The exit codes of every chatdb command, one table for all (README: "Exit codes").
enum ChatExitCode {
  static let success: Int32 = 0
  /// Some files of an `--all` run failed; each is reported.
  static let partialFailure: Int32 = 1
  static let usage: Int32 = 64
  /// `usage --check`: the disk holding the data is low on space.
  static let diskLow: Int32 = 2
  /// `usage --check`: the disk holding the data is critically low on space.
  static let diskCritical: Int32 = 3
  /// `check` found problems, or `index verify` found a hot query that scans.
  static let findings: Int32 = 4
  /// `check`: a file could not be checked (locked, unreadable, missing; with `--all`, also damaged).
  static let couldNotCheck: Int32 = 5

  static func code(for kind: StoreError.Kind) -> Int32 {
    switch kind {
    case .newerSchema: 10
    case .schemaMismatch: 11
    case .badTarget: 12
    case .diskSpace: 13
    case .writeFailed: 14
    case .notADatabase, .badInput: 65
    case .notFound: 66
    case .io: 74
    case .busy: 75
    case .permission: 77
    }
  }
}

extension StoreError: ExitCodeProviding {
  public var exitCode: Int32 { ChatExitCode.code(for: kind) }
}

/// A SQLite error that reached a command without a file to name still gets a code
/// from the table (locked 75, damaged 65, disk full 13, otherwise a failed write 14).
extension SQLiteError: ExitCodeProviding {
  public var exitCode: Int32 {
    if isBusy { return ChatExitCode.code(for: .busy) }
    if isCorruptOrNotADatabase { return ChatExitCode.code(for: .notADatabase) }
    if isDiskFull { return ChatExitCode.code(for: .diskSpace) }
    return ChatExitCode.code(for: .writeFailed)
  }
}
