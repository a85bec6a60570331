@testable import ChatCLI

/// A small command tree shaped like `chatdb`'s, used by the parser tests.
enum Fixture {
  struct Locked: Error, ExitCodeProviding, CustomStringConvertible {
    var exitCode: Int32 { 75 }
    var description: String { "database is locked" }
  }
  struct Plain: Error {}

  enum Migrate: ParsableCommand {

    typealias Result = EmptyResult
    static let name = "migrate"
    static let abstract = "Apply pending schema migrations."
    static let discussion: String? = "Migrations run in one transaction per version."
    struct Options: ParsableOptions {
      var to: String?
      var dryRun: Bool
      var file: String?
      init(_ o: inout OptionReader) {
        to = o.option("--to", valueName: "n", help: "Migrate to version n (default: latest).")
        dryRun = o.flag("--dry-run", help: "Print the migrations and their SQL without changing the file.")
        file = o.argument("file", help: "The database file.")
      }
    }
    static func run(_ options: Options, in context: CommandContext) throws {}
  }

  enum Status: ParsableCommand {

    typealias Result = EmptyResult
    static let name = "status"
    static let abstract = "Show the schema version and pending migrations."
    struct Options: ParsableOptions { init(_ o: inout OptionReader) {} }
    static func run(_ options: Options, in context: CommandContext) throws {}
  }

  enum Evict: ParsableCommand {

    typealias Result = EmptyResult
    static let name = "evict"
    static let abstract = "Remove old cached media."
    struct Options: ParsableOptions {
      var olderThan: String?
      var maxSize: String?
      var dryRun: Bool
      var user: Int64?
      var dataDir: String?
      init(_ o: inout OptionReader) {
        olderThan = o.option("--older-than", valueName: "age", help: "Only media older than age.")
        maxSize = o.option("--max-size", valueName: "size", help: "Evict until the cache is below size.")
        dryRun = o.flag("--dry-run", help: "Show what would be removed.")
        user = o.option("--user", valueName: "id", help: "Only this user's media.") { text -> Int64? in
          guard let id = Int64(text) else { return nil }
          guard id > 0 else { throw InvalidValue("must be positive") }
          return id
        }
        dataDir = o.option("--data-dir", valueName: "dir", help: "The data directory.")
      }
      func validate() throws {
        if user != nil && dataDir != nil { throw ValidationError("--user and --data-dir cannot be used together") }
      }
    }
    static func run(_ options: Options, in context: CommandContext) throws {}
  }

  enum Import: ParsableCommand {

    typealias Result = EmptyResult
    static let name = "import"
    static let abstract = "Import NDJSON files."
    struct Options: ParsableOptions {
      var tags: [String]
      var user: String?
      init(_ o: inout OptionReader) {
        tags = o.repeated("-t", "--tag", valueName: "tag", help: "Tag imported records.") { $0 }
        user = o.option("--user", valueName: "id", help: "Owner.")
        o.variadic("file", help: "The NDJSON files to import.")
      }
    }
    static func run(_ options: Options, in context: CommandContext) throws {}
  }

  enum Fail: ParsableCommand {

    typealias Result = EmptyResult
    static let name = "fail"
    static let abstract = "Fails on purpose."
    struct Options: ParsableOptions {
      var how: String?
      init(_ o: inout OptionReader) {
        how = o.option("--how", valueName: "kind", help: "locked, plain, usage or code.")
      }
    }
    static func run(_ options: Options, in context: CommandContext) throws {
      switch options.how {
      case "locked": throw Locked()
      case "plain": throw Plain()
      case "usage": throw ValidationError("bad combination")
      default: context.exit(.findings)
      }
    }
  }

  enum Leaf: ParsableCommand {

    typealias Result = EmptyResult
    static let name = "list"
    static let abstract = "List remotes."
    struct Options: ParsableOptions { init(_ o: inout OptionReader) {} }
    static func run(_ options: Options, in context: CommandContext) throws {}
  }

  enum Add: ParsableCommand {

    typealias Result = EmptyResult
    static let name = "add"
    static let abstract = "Add a remote."
    struct Options: ParsableOptions {
      var url: String?
      init(_ o: inout OptionReader) { url = o.argument("url", help: "The URL.") }
    }
    static func run(_ options: Options, in context: CommandContext) throws {}
  }

  static let root = Command.group(
    name: "chatdb",
    abstract: "Inspect and maintain chat databases.",
    subcommands: [
      Command(Migrate.self, subcommands: [Command(Status.self)]),
      Command(Evict.self),
      Command(Import.self),
      Command(Fail.self),
      Command.group(
        name: "remote", abstract: "Manage sync remotes.", subcommands: [Command(Add.self), Command(Leaf.self)]),
    ]
  )

  static let tool = CommandLineTool(root: root, version: "1.2.3")

  /// Runs the tool with captured output.
  static func run(_ arguments: [String]) -> (code: Int32, out: String, err: String) {
    let out = TextBuffer()
    let err = TextBuffer()
    let code = tool.main(arguments, stdout: .capturing(into: out), stderr: .capturing(into: err))
    return (code, out.text, err.text)
  }

  /// Parses and returns the arguments the leaf command would receive (nil when it would not run).
  static func parsed(_ arguments: [String]) -> ParsedArguments? {
    if case .run(let parsed) = tool.parse(arguments) { return parsed }
    return nil
  }
}
