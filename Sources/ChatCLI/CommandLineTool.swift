import Foundation

/// Runs a command tree: parses arguments, prints help, version and errors, and returns the exit code.
public struct CommandLineTool: Sendable {
  /// The root command; its `name` is the program name shown in help and errors.
  public let root: Command
  /// The text `--version` prints.
  public let version: String

  /// Creates a tool for a command tree.
  public init(root: Command, version: String) {
    self.root = root
    self.version = version
  }

  /// Parses `arguments` (WITHOUT argv[0]: pass `Array(CommandLine.arguments.dropFirst())`)
  /// without running anything.
  public func parse(_ arguments: [String]) -> ParseResult {
    var parser = Parser(root: root, version: version, arguments: arguments)
    return parser.parse()
  }

  /// Parses `arguments` (WITHOUT argv[0]), prints help/version (stdout, 0) or a usage error
  /// (stderr, 64) itself, else runs the leaf command and returns its exit code. An error thrown
  /// by `run` is printed as `Error: <description>` on stderr and returns its `ExitCodeProviding`
  /// code, else 1; a thrown `UsageError` is printed as a usage error and returns 64.
  public func main(_ arguments: [String], stdout: TextOutput = .standardOutput, stderr: TextOutput = .standardError) -> Int32 {
    switch parse(arguments) {
    case .help(let text):
      stdout.write(text)
      return ExitCode.success
    case .version(let text):
      stdout.writeLine(text)
      return ExitCode.success
    case .usageError(let error):
      stderr.writeLine(error.description)
      return ExitCode.usage
    case .run(let parsed):
      do {
        return try parsed.command.run?(parsed) ?? ExitCode.success
      } catch let error as UsageError {
        stderr.writeLine(error.description)
        return ExitCode.usage
      } catch {
        stderr.writeLine("Error: " + (errorMessage(error) ?? String(describing: error)))
        return (error as? any ExitCodeProviding)?.exitCode ?? ExitCode.failure
      }
    }
  }
}

/// An error's human-readable message: `LocalizedError.errorDescription`, else the
/// `CustomStringConvertible` description, else nil.
func errorMessage(_ error: any Error) -> String? {
  if let localized = error as? any LocalizedError, let text = localized.errorDescription { return text }
  if let describable = (error as Any) as? any CustomStringConvertible { return describable.description }
  return nil
}
