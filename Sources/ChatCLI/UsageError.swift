/// A command-line usage error; `CommandLineTool.main` prints it on stderr and returns 64.
public struct UsageError: Error, CustomStringConvertible, Sendable {
  /// What went wrong, e.g. `Unknown option '--older'. Did you mean '--older-than'?`.
  public let message: String
  /// The command's one-line usage (without the `Usage: ` prefix), truncated with ` ...` when long.
  public let usage: String
  /// The command's full path as typed, e.g. `chatdb evict`.
  public let commandPath: String

  /// Creates a usage error from its parts.
  public init(message: String, usage: String, commandPath: String) {
    self.message = message.oneLine
    self.usage = usage
    self.commandPath = commandPath
  }

  /// The three-line report: `Error:`, `Usage:` and where to find more help.
  public var description: String {
    """
    Error: \(message)
    Usage: \(usage)
      See '\(commandPath) --help' for more information.
    """
  }
}
