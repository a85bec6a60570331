import ChatCLI
import ChatStore

/// Transitional: the chatdb names for rows of `ExitStatus`.
enum ChatExitCode {
  static let success = ExitStatus.success.rawValue
  static let partialFailure = ExitStatus.partialFailure.rawValue
  static let usage = ExitStatus.usage.rawValue
  static let diskLow = ExitStatus.diskLow.rawValue
  static let diskCritical = ExitStatus.diskCritical.rawValue
  static let findings = ExitStatus.findings.rawValue
  static let couldNotCheck = ExitStatus.couldNotCheck.rawValue
  static func code(for kind: StoreError.Kind) -> Int32 { ExitStatus(kind).rawValue }
}

extension StoreError: ExitCodeProviding {
  public var exitCode: Int32 { ExitStatus(kind).rawValue }
}

extension SQLiteError: ExitCodeProviding {
  public var exitCode: Int32 { ExitStatus(for: self).rawValue }
}
