/// A command (or command group) in a command-line tool's tree, described declaratively.
public struct Command: Sendable {
  /// The word that selects this command, e.g. `"migrate"`; for the root, the program name.
  public var name: String
  /// One-line summary, shown as OVERVIEW and in the parent's SUBCOMMANDS list.
  public var abstract: String
  /// Extra paragraph(s) shown after OVERVIEW in help.
  public var discussion: String?
  /// Positional arguments, in order; only the last one may be variadic.
  public var arguments: [Argument]
  /// Options and flags belonging to this command only (parents' options are not inherited).
  public var options: [Option]
  /// Child commands.
  public var subcommands: [Command]
  /// Command lines shown under EXAMPLES at the end of the help, e.g. `chatdb check --all`.
  public var examples: [String]
  /// The action; `nil` for a pure group, which prints its help when invoked without a subcommand.
  /// It reports through the context and throws what ends the command.
  public var run: (@Sendable (ParsedArguments, CommandContext) throws -> Void)?
  /// Reads and validates the options from parsed arguments without running anything
  /// (a usage error is thrown as `UsageError`); `nil` for a group.
  public var check: (@Sendable (ParsedArguments) throws -> Void)?
  /// Examples of the command's JSON `result`, for `docs/json.md`; empty for a group.
  /// Made when asked (only `--json-reference` does), not each time the program starts.
  public var resultExamples: @Sendable () -> [any CommandResult]
  /// An example of what the command adds to the envelope's `summary`, for `docs/json.md`.
  public var summaryExample: @Sendable () -> (any Encodable & Sendable)?

  /// Creates a command; every part but the name is optional.
  public init(
    name: String,
    abstract: String = "",
    discussion: String? = nil,
    arguments: [Argument] = [],
    options: [Option] = [],
    subcommands: [Command] = [],
    examples: [String] = [],
    run: (@Sendable (ParsedArguments, CommandContext) throws -> Void)? = nil
  ) {
    self.name = name
    self.abstract = abstract
    self.discussion = discussion
    self.arguments = arguments
    self.options = options
    self.subcommands = subcommands
    self.examples = examples
    self.run = run
    self.check = nil
    self.resultExamples = { [] }
    self.summaryExample = { nil }
  }

  /// A runnable command from its type: the options are declared by running
  /// `C.Options.init` in describing mode, and the action parses them (every conversion
  /// and `validate()` error is a usage error) before calling `C.run`.
  public init<C: ParsableCommand>(_ type: C.Type, subcommands: [Command] = []) {
    var describing = OptionReader(mode: .describing)
    _ = C.Options(&describing)
    self.init(
      name: C.name, abstract: C.abstract, discussion: C.discussion, arguments: describing.arguments,
      options: describing.options, subcommands: subcommands, examples: C.examples
    ) { parsed, context in
      let options = try Self.read(C.self, parsed)
      do { try C.run(options, in: context) } catch let error as ValidationError {
        throw parsed.usageError(error.description)
      }
    }
    check = { parsed in _ = try Self.read(C.self, parsed) }
    resultExamples = { C.Result.allExamples }
    summaryExample = { C.Result.summaryExample }
  }

  /// The options of `C` read from `parsed` and validated; every conversion and
  /// `validate()` error is a usage error.
  private static func read<C: ParsableCommand>(_: C.Type, _ parsed: ParsedArguments) throws -> C.Options {
    var reader = OptionReader(mode: .reading(parsed))
    let options = C.Options(&reader)
    if let message = reader.firstError { throw parsed.usageError(message) }
    do { try options.validate() } catch let error as ValidationError { throw parsed.usageError(error.description) }
    return options
  }

  /// A command group: its help lists `subcommands`.
  public static func group(
    name: String, abstract: String, discussion: String? = nil, subcommands: [Command], examples: [String] = []
  ) -> Command {
    Command(name: name, abstract: abstract, discussion: discussion, subcommands: subcommands, examples: examples)
  }

  /// Returns a copy where `shared` is appended to the options of every runnable command
  /// (one with `run`) in this tree, this one included. Use it to give each command its own
  /// copy of shared options such as `--data-dir` or `--json`.
  public func addingOptions(_ shared: [Option]) -> Command {
    var copy = self
    if run != nil { copy.options += shared }
    copy.subcommands = subcommands.map { $0.addingOptions(shared) }
    return copy
  }

  /// This command if it runs, else the first runnable one below it (depth first).
  var firstRunnable: Command? {
    run != nil ? self : subcommands.lazy.compactMap(\.firstRunnable).first
  }

  /// The declared option that has `name` among its names, if any.
  func option(named name: String) -> Option? {
    options.first { $0.names.contains(name) }
  }
}

/// An option that takes a value (`--user <id>`) or a flag (`--dry-run`).
public struct Option: Sendable {
  /// All spellings, e.g. `["-o", "--output"]`; long names start with `--`.
  public var names: [String]
  /// The placeholder shown for the value (`"id"` → `<id>`); `nil` makes the option a flag.
  public var valueName: String?
  /// One-line help text.
  public var help: String
  /// Whether the usage line shows `...` (every occurrence is kept either way; `value` takes the last).
  public var isRepeatable: Bool
  /// Whether the command refuses to run without it (shown without brackets in usage).
  public var isRequired: Bool

  /// Creates an option from its parts.
  public init(
    names: [String], valueName: String? = nil, help: String, isRepeatable: Bool = false, isRequired: Bool = false
  ) {
    self.names = names
    self.valueName = valueName
    self.help = help
    self.isRepeatable = isRepeatable
    self.isRequired = isRequired
  }

  /// A flag (no value), e.g. `.flag("--dry-run", help: "...")`.
  public static func flag(_ names: String..., help: String) -> Option {
    Option(names: names, help: help)
  }

  /// An option taking a value, e.g. `.value("--user", valueName: "id", help: "...")`.
  public static func value(_ names: String..., valueName: String, help: String, repeatable: Bool = false) -> Option {
    Option(names: names, valueName: valueName, help: help, isRepeatable: repeatable)
  }

  /// The automatic `-h, --help` flag every command gets.
  public static let help = Option.flag("-h", "--help", help: "Show help information.")
  /// The `--json` flag every runnable command gets from `CommandLineTool`.
  public static let json = Option.flag(
    "--json", help: "Print the result as JSON (the envelope described in docs/json.md).")
  /// The automatic `--version` flag of the root command.
  public static let version = Option.flag("--version", help: "Show the version.")

  /// The name used as the storage key and in messages: the first long name, else the first name.
  var primaryName: String { names.first { $0.hasPrefix("--") } ?? names.first ?? "" }

  /// `--user <id>` or `--dry-run`, as quoted in error messages.
  var synopsis: String { valueName.map { "\(primaryName) <\($0)>" } ?? primaryName }
}

/// A positional argument such as `<file>`.
public struct Argument: Sendable {
  /// The name without brackets, e.g. `"file"`; also the key for `ParsedArguments.positional(_:)`.
  public var name: String
  /// One-line help text.
  public var help: String
  /// Whether the argument may be omitted.
  public var isOptional: Bool
  /// Whether the argument collects all remaining positionals (must be last).
  public var isVariadic: Bool

  /// Creates a positional argument.
  public init(name: String, help: String, isOptional: Bool = false, isVariadic: Bool = false) {
    self.name = name
    self.help = help
    self.isOptional = isOptional
    self.isVariadic = isVariadic
  }

  /// `<file>`, `[<file>]`, `<file> ...` or `[<file> ...]`, as shown in usage lines.
  var synopsis: String {
    let base = "<\(name)>" + (isVariadic ? " ..." : "")
    return isOptional ? "[\(base)]" : base
  }
}

/// An error that chooses its own row of the exit-code table (`ExitCode`).
public protocol ExitCodeProviding: Error {
  /// The exit code to return; a code outside the table is reported as `internalError`.
  var exitCode: Int32 { get }
}

/// A command: its name and help, its options as one typed value, and its action.
///
/// ```swift
/// enum VacuumCommand: ParsableCommand {
///   static let name = "vacuum"
///   static let abstract = "Rebuild a chat database without its free pages."
///   struct Options: ParsableOptions { … }
///   static func run(_ options: Options, in context: CommandContext) throws { … }
/// }
/// ```
public protocol ParsableCommand: SendableMetatype {
  associatedtype Options: ParsableOptions
  /// The JSON `result` the command reports for a file (see `CommandResult`).
  associatedtype Result: CommandResult
  /// The word that selects the command.
  static var name: String { get }
  /// One-line summary (OVERVIEW and the parent's SUBCOMMANDS list).
  static var abstract: String { get }
  /// Paragraphs shown after OVERVIEW.
  static var discussion: String? { get }
  /// Two or three command lines shown under EXAMPLES at the end of the help; a test
  /// parses every one.
  static var examples: [String] { get }
  /// Does the work; results and errors go through `context`, a thrown error ends the command.
  static func run(_ options: Options, in context: CommandContext) throws
}

extension ParsableCommand {
  public static var discussion: String? { nil }
  public static var examples: [String] { [] }
}
