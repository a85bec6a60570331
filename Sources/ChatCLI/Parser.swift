/// What a command line asks for, as decided by `CommandLineTool.parse(_:)`.
public enum ParseResult: Sendable {
  /// Run the leaf command with these arguments.
  case run(ParsedArguments)
  /// Print this help text (stdout, exit 0).
  case help(String)
  /// Print this version (stdout, exit 0).
  case version(String)
  /// Print this error (stderr, exit 64).
  case usageError(UsageError)
}

/// The hand-written parser, following swift-argument-parser's conventions:
/// - `-h`/`--help` anywhere before `--` asks for help of the deepest command named; other
///   errors are then ignored, but for a word that names no subcommand of a group. `help <command> [<subcommand>...]` works at the root, and
///   `--version` at the root before any subcommand.
/// - `--name value` and `--name=value`. The token after an option that takes a value is its
///   value even when it starts with a single `-` (so `--user -5` gives `-5`, which the command's
///   own validation can reject, and `--input -` means stdin); a token starting with `--` is never
///   taken as a value (`--user --json` is "Missing value"), use `--user=--odd` for that.
/// - `--` ends options; short flags are not bundled; options may appear anywhere after their
///   command's name; a parent's options are not inherited by its subcommands.
struct Parser {
  let root: Command
  let version: String
  let arguments: [String]
  let helpRequested: Bool
  var stack: [Command]
  var values: [String: [String]] = [:]
  var positionals: [String] = []
  var index = 0
  var afterTerminator = false

  init(root: Command, version: String, arguments: [String]) {
    self.root = root
    self.version = version
    self.arguments = arguments
    self.stack = [root]
    self.helpRequested = arguments.prefix { $0 != "--" }.contains { $0 == "-h" || $0 == "--help" }
  }

  var command: Command { stack[stack.count - 1] }
  var path: [String] { stack.map(\.name) }
  var helpText: ParseResult { .help(Help.text(for: command, path: path)) }

  func error(_ message: String) -> UsageError {
    UsageError(
      message: message, usage: Help.usage(command, path: path, truncated: true),
      commandPath: path.joined(separator: " "))
  }

  /// `Unexpected argument 'x'`, with a suggestion among the current command's subcommands.
  func unexpected(_ token: String) -> UsageError {
    let hint = suggestion(for: token, among: command.subcommands.map(\.name))
    return error("Unexpected argument '\(token)'" + (hint.map { ". Did you mean '\($0)'?" } ?? ""))
  }

  mutating func parse() -> ParseResult {
    if arguments.first == "help", !root.subcommands.isEmpty, root.subcommands.allSatisfy({ $0.name != "help" }) {
      for word in arguments.dropFirst() where word != "-h" && word != "--help" {
        guard let next = command.subcommands.first(where: { $0.name == word }) else {
          return .usageError(unexpected(word))
        }
        stack.append(next)
      }
      return helpText
    }
    while index < arguments.count {
      let token = arguments[index]
      index += 1
      do {
        if let result = try consume(token) { return result }
      } catch {
        // A word that names no command of a group is an error even beside --help:
        // `chat-sync edit --help` must not answer with the top-level help and 0.
        let unknownCommand =
          !token.hasPrefix("-") && !afterTerminator && !command.subcommands.isEmpty && positionals.isEmpty
        if !helpRequested || unknownCommand { return .usageError(error) }
      }
    }
    if helpRequested { return helpText }
    guard command.run != nil else {
      // A pure group: without a subcommand it shows its help; stray words were rejected above.
      return helpText
    }
    do {
      return .run(ParsedArguments(command: command, path: path, options: values, positionals: try assignPositionals()))
    } catch {
      return .usageError(error)
    }
  }

  /// Handles one token; returns a result when parsing ends early (`--version`).
  mutating func consume(_ token: String) throws(UsageError) -> ParseResult? {
    if afterTerminator || token == "-" || !token.hasPrefix("-") {
      if !afterTerminator && positionals.isEmpty, let sub = command.subcommands.first(where: { $0.name == token }) {
        stack.append(sub)
        values = [:]  // options given to the parent belong to the parent and are dropped
        return nil
      }
      if command.arguments.isEmpty { throw unexpected(token) }
      positionals.append(token)
      return nil
    }
    if token == "--" {
      afterTerminator = true
      return nil
    }
    if token == "-h" || token == "--help" { return nil }  // handled via `helpRequested`
    if token == "--version" && stack.count == 1 && command.option(named: token) == nil {
      return helpRequested ? nil : .version(version)
    }
    var name = token
    var inlineValue: String?
    if token.hasPrefix("--"), let equals = token.firstIndex(of: "=") {
      name = String(token[..<equals])
      inlineValue = String(token[token.index(after: equals)...])
    }
    guard let option = command.option(named: name) else {
      let known = Help.displayedOptions(command, isRoot: stack.count == 1).flatMap(\.names)
      let hint = suggestion(for: name, among: known)
      throw error("Unknown option '\(name)'" + (hint.map { ". Did you mean '\($0)'?" } ?? ""))
    }
    guard option.valueName != nil else {
      if let inlineValue { throw error("Unexpected value '\(inlineValue)' for '\(option.primaryName)'") }
      values[option.primaryName, default: []] += []
      return nil
    }
    if let inlineValue {
      values[option.primaryName, default: []].append(inlineValue)
    } else if index < arguments.count, !arguments[index].hasPrefix("--") {
      values[option.primaryName, default: []].append(arguments[index])
      index += 1
    } else {
      throw error("Missing value for '\(option.synopsis)'")
    }
    return nil
  }

  /// Distributes the collected positionals over the leaf command's declared arguments.
  func assignPositionals() throws(UsageError) -> [String: [String]] {
    var remaining = positionals[...]
    var assigned: [String: [String]] = [:]
    for argument in command.arguments {
      if argument.isVariadic {
        assigned[argument.name] = Array(remaining)
        remaining = []
      } else if let first = remaining.popFirst() {
        assigned[argument.name] = [first]
      }
      if assigned[argument.name] == nil || assigned[argument.name]!.isEmpty, !argument.isOptional {
        throw error("Missing expected argument '<\(argument.name)>'")
      }
    }
    if let extra = remaining.first { throw error("Unexpected argument '\(extra)'") }
    return assigned
  }
}

/// The closest candidate to a mistyped `input`: the shortest one it is a prefix of (when at least
/// two characters besides dashes were typed), else the nearest within edit distance 2 (and less
/// than half the typed length, so short words get no far-fetched suggestions).
func suggestion(for input: String, among candidates: [String]) -> String? {
  let typed = input.drop { $0 == "-" }.count
  if typed >= 2, let match = candidates.filter({ $0.hasPrefix(input) && $0 != input }).min(by: { $0.count < $1.count })
  {
    return match
  }
  let scored = candidates.map { ($0, editDistance(input, $0)) }.filter { $0.1 <= 2 && $0.1 * 2 < typed }
  return scored.min { $0.1 < $1.1 }?.0
}

/// Levenshtein distance between two strings, by characters.
func editDistance(_ a: String, _ b: String) -> Int {
  let a = Array(a)
  let b = Array(b)
  var previous = Array(0...b.count)
  for (i, character) in a.enumerated() {
    var current = [i + 1] + Array(repeating: 0, count: b.count)
    for (j, other) in b.enumerated() {
      current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (character == other ? 0 : 1))
    }
    previous = current
  }
  return previous[b.count]
}
