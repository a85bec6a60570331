import Foundation

/// Runs a command tree: parses arguments, prints help, version and errors, and returns the exit code.
public struct CommandLineTool: Sendable {
  /// The root command; its `name` is the program name shown in help and errors.
  public let root: Command
  /// The text `--version` prints.
  public let version: String

  /// Creates a tool for a command tree.
  /// Every runnable command gets `--json`.
  public init(root: Command, version: String) {
    self.root = root.addingOptions([Option.json])
    self.version = version
  }

  /// Parses `arguments` (WITHOUT argv[0]: pass `Array(CommandLine.arguments.dropFirst())`)
  /// without running anything.
  public func parse(_ arguments: [String]) -> ParseResult {
    var parser = Parser(root: root, version: version, arguments: arguments)
    return parser.parse()
  }

  /// Parses `arguments` (WITHOUT argv[0]), prints help/version (stdout, 0) or a usage error
  /// (stderr, 64) itself, else runs the leaf command with a `CommandContext` and returns the
  /// exit status the context settled on. A thrown `UsageError` is printed as a usage error
  /// (64); any other thrown error goes to `CommandContext.fail`, the one place an error
  /// becomes an exit code.
  public func main(_ arguments: [String], stdout: TextOutput = .standardOutput, stderr: TextOutput = .standardError)
    -> Int32
  {
    if let position = Self.argumentNotUTF8() {
      // Swift's `CommandLine.arguments` replaces such bytes with U+FFFD: a message or a
      // path would silently become another one.
      stderr.writeLine(
        "Error: argument \(position) is not valid UTF-8 text; \(root.name) reads every argument as UTF-8")
      return ExitCode.usage.rawValue
    }
    // Hidden: this program's part of docs/json.md, for scripts/docs.
    if arguments.first == "--json-reference" {
      if arguments.dropFirst() == ["envelope"], let sample = root.firstRunnable {
        stdout.write(JSONReference.envelope(program: root.name, sample: sample))
      } else {
        stdout.write(JSONReference.results(root))
      }
      return ExitCode.success.rawValue
    }
    switch parse(arguments) {
    case .help(let text):
      stdout.write(text)
      return ExitCode.success.rawValue
    case .version(let text):
      stdout.writeLine(text)
      return ExitCode.success.rawValue
    case .usageError(let error):
      stderr.writeLine(error.description)
      return ExitCode.usage.rawValue
    case .run(let parsed):
      let context = CommandContext(
        commandPath: parsed.path.joined(separator: " "), json: parsed.flag(Option.json.primaryName), stdout: stdout,
        stderr: stderr)
      do {
        try parsed.command.run?(parsed, context)
      } catch let error as UsageError {
        stderr.writeLine(error.description)
        return ExitCode.usage.rawValue
      } catch {
        context.fail(error)
      }
      return context.status.rawValue
    }
  }
}

extension CommandLineTool {
  /// The position (from 1) of the first of this process's arguments whose bytes are not
  /// valid UTF-8, or nil. Read from `CommandLine.unsafeArgv`, before Swift repairs them.
  static func argumentNotUTF8() -> Int? {
    let argv = CommandLine.unsafeArgv
    for index in 1..<Int(CommandLine.argc) {
      guard let pointer = argv[index] else { continue }
      let bytes = UnsafeBufferPointer(
        start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
      if String(validating: bytes, as: UTF8.self) == nil { return index }
    }
    return nil
  }
}

/// An error's human-readable message: `LocalizedError.errorDescription`, else the
/// `CustomStringConvertible` description, else nil.
func errorMessage(_ error: any Error) -> String? {
  if let localized = error as? any LocalizedError, let text = localized.errorDescription { return text }
  if let describable = (error as Any) as? any CustomStringConvertible { return describable.description }
  return nil
}
