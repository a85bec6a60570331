import ChatCLI
import ChatMaintenance
import ChatStore

extension ImportError: ExitCodeProviding {
  public var exitCode: Int32 { ExitCode(kind).rawValue }
}
