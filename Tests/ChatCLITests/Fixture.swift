import ChatCLI

/// A small command tree shaped like `chatdb`'s, used by the parser tests.
enum Fixture {
  struct Locked: Error, ExitCodeProviding, CustomStringConvertible {
    var exitCode: Int32 { 75 }
    var description: String { "database is locked" }
  }
  struct Plain: Error {}
  struct Reason: Error, CustomStringConvertible { var description: String { "must be positive" } }

  static let shared: [Option] = [
    .value("--data-dir", valueName: "dir", help: "The data directory."),
    .flag("--json", help: "Print JSON."),
  ]

  static let root = Command(
    name: "chatdb",
    abstract: "Inspect and maintain chat databases.",
    subcommands: [
      Command(
        name: "migrate",
        abstract: "Apply pending schema migrations.",
        discussion: "Migrations run in one transaction per version.",
        arguments: [Argument(name: "file", help: "The database file.")],
        options: [
          .value("--to", valueName: "n", help: "Migrate to version n (default: latest)."),
          .flag("--dry-run", help: "Print the migrations and their SQL without changing the file."),
        ],
        subcommands: [
          Command(name: "status", abstract: "Show the schema version and pending migrations.", run: { _ in 0 }),
        ],
        run: { _ in 0 }
      ),
      Command(
        name: "evict",
        abstract: "Remove old cached media.",
        options: [
          .value("--older-than", valueName: "age", help: "Only media older than age."),
          .value("--max-size", valueName: "size", help: "Evict until the cache is below size."),
          .flag("--dry-run", help: "Show what would be removed."),
          .value("--user", valueName: "id", help: "Only this user's media."),
        ] + shared,
        run: { args in
          let user = try args.value("--user") { text -> Int64? in
            guard let id = Int64(text) else { return nil }
            guard id > 0 else { throw Reason() }
            return id
          }
          if user != nil && args.value("--data-dir") != nil {
            throw args.usageError("--user and --data-dir cannot be used together")
          }
          return 0
        }
      ),
      Command(
        name: "import",
        abstract: "Import NDJSON files.",
        arguments: [Argument(name: "file", help: "The NDJSON files to import.", isVariadic: true)],
        options: [
          .value("-t", "--tag", valueName: "tag", help: "Tag imported records.", repeatable: true),
          .value("--user", valueName: "id", help: "Owner."),
        ],
        run: { _ in 0 }
      ),
      Command(
        name: "fail",
        abstract: "Fails on purpose.",
        options: [.value("--how", valueName: "kind", help: "locked, plain, usage or code.")],
        run: { args in
          switch args.value("--how") {
          case "locked": throw Locked()
          case "plain": throw Plain()
          case "usage": throw args.usageError("bad combination")
          default: return 5
          }
        }
      ),
      Command(
        name: "remote",
        abstract: "Manage sync remotes.",
        subcommands: [
          Command(name: "add", abstract: "Add a remote.", arguments: [Argument(name: "url", help: "The URL.")], run: { _ in 0 }),
          Command(name: "list", abstract: "List remotes.", run: { _ in 0 }),
        ]
      ),
    ]
  )

  static let tool = CommandLineTool(root: root, version: "1.2.3")

  /// Runs the tool with captured output.
  static func run(_ arguments: [String]) -> (code: Int32, out: String, err: String) {
    let out = TextBuffer(), err = TextBuffer()
    let code = tool.main(arguments, stdout: .capturing(into: out), stderr: .capturing(into: err))
    return (code, out.text, err.text)
  }

  /// Parses and returns the arguments the leaf command would receive (nil when it would not run).
  static func parsed(_ arguments: [String]) -> ParsedArguments? {
    if case .run(let parsed) = tool.parse(arguments) { return parsed }
    return nil
  }
}
