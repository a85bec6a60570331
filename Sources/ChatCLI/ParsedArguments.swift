/// The result of parsing a command line: the leaf command and the values given to it.
public struct ParsedArguments: Sendable {
  /// The leaf command that runs.
  public let command: Command
  /// The command names from the root to the leaf, e.g. `["chatdb", "migrate", "status"]`.
  public let path: [String]
  /// Option values keyed by `Option.primaryName`, in command-line order (flags map to `[]`).
  let optionValues: [String: [String]]
  /// Positional values keyed by `Argument.name`.
  let positionalValues: [String: [String]]

  /// Creates parsed arguments directly, e.g. to unit-test a command's `run` closure;
  /// `options` is keyed by any of an option's names and holds `[]` for a given flag.
  public init(
    command: Command, path: [String], options: [String: [String]] = [:], positionals: [String: [String]] = [:]
  ) {
    self.command = command
    self.path = path
    var values: [String: [String]] = [:]
    for (name, list) in options { values[command.option(named: name)?.primaryName ?? name, default: []] += list }
    self.optionValues = values
    self.positionalValues = positionals
  }

  private func key(_ name: String) -> String { command.option(named: name)?.primaryName ?? name }

  /// Whether the flag was given; `name` is any of its names, usually the long one (`"--dry-run"`).
  func flag(_ name: String) -> Bool { optionValues[key(name)] != nil }

  /// The option's value, the last one when it was given several times.
  func value(_ name: String) -> String? { optionValues[key(name)]?.last }

  /// Every value given for a (repeatable) option, in command-line order.
  func values(_ name: String) -> [String] { optionValues[key(name)] ?? [] }

  /// The value of a single positional argument (`name` without brackets).
  func positional(_ name: String) -> String? { positionalValues[name]?.first }

  /// All values of a variadic positional argument.
  func positionals(_ name: String) -> [String] { positionalValues[name] ?? [] }

  /// A usage error for this command, for its own validation
  /// (e.g. "--user and --db cannot be used together").
  public func usageError(_ message: String) -> UsageError {
    UsageError(
      message: message, usage: Help.usage(command, path: path, truncated: true),
      commandPath: path.joined(separator: " "))
  }
}
