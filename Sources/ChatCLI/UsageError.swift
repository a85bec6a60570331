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

extension UsageError {
  /// A usage error a command finds only once it runs (a choice that depends on the
  /// data, such as which of a user's devices to act on), with the command's usage line.
  public init<C: ParsableCommand>(_ message: String, in command: C.Type, context: CommandContext) {
    let path = context.commandPath.split(separator: " ").map(String.init)
    self.init(
      message: message, usage: Help.usage(Command(command), path: path, truncated: true),
      commandPath: context.commandPath)
  }
}
