import TestSupport
import Testing

@testable import ChatCLI

@Suite(.ownThreads) struct HelpTests {
  @Test(arguments: [
    (["-h"], "USAGE: chatdb <subcommand>"),
    (["--help"], "USAGE: chatdb <subcommand>"),
    ([], "USAGE: chatdb <subcommand>"),  // a group without a subcommand prints its help
    (["help"], "USAGE: chatdb <subcommand>"),
    (["migrate", "-h"], "USAGE: chatdb migrate [--to <n>]"),
    (["migrate", "--to", "3", "--help"], "USAGE: chatdb migrate [--to <n>]"),
    (["help", "migrate"], "USAGE: chatdb migrate [--to <n>]"),
    (["migrate", "status", "--help"], "USAGE: chatdb migrate status"),
    (["migrate", "-h", "status"], "USAGE: chatdb migrate status"),
    (["help", "migrate", "status"], "USAGE: chatdb migrate status"),
    (["remote"], "USAGE: chatdb remote <subcommand>"),
    (["remote", "add", "--help"], "USAGE: chatdb remote add [--json] <url>"),
    (["evict", "--bogus", "--help"], "USAGE: chatdb evict [--older-than <age>]"),
  ])
  func helpGoesToStdoutWithExitZero(arguments: [String], usagePrefix: String) {
    let result = Fixture.run(arguments)
    #expect(result.code == 0)
    #expect(result.err == "")
    #expect(result.out.split(separator: "\n").contains { $0.hasPrefix(usagePrefix) }, "\(result.out)")
  }

  @Test func commandHelpLayout() {
    let expected = """
      OVERVIEW: Apply pending schema migrations.

      Migrations run in one transaction per version.

      USAGE: chatdb migrate [--to <n>] [--dry-run] [--json] <file> [<subcommand>]

      ARGUMENTS:
        <file>                  The database file.

      OPTIONS:
        --to <n>                Migrate to version n (default: latest).
        --dry-run               Print the migrations and their SQL without changing
                                the file.
        --json                  Print the result as JSON (the envelope described in
                                docs/json.md).
        -h, --help              Show help information.

      SUBCOMMANDS:
        status                  Show the schema version and pending migrations.

        See 'chatdb help migrate <subcommand>' for detailed help.

      """
    #expect(Fixture.run(["migrate", "--help"]).out == expected)
  }

  @Test func rootHelpListsVersionBeforeHelpAndSubcommands() {
    let out = Fixture.run(["--help"]).out
    #expect(
      out.contains("  --version               Show the version.\n  -h, --help              Show help information.\n"))
    #expect(out.contains("  remote                  Manage sync remotes.\n"))
    #expect(out.contains("  See 'chatdb help <subcommand>' for detailed help."))
    #expect(!Fixture.run(["migrate", "--help"]).out.contains("--version"))
  }

  @Test(arguments: [
    (["--version"], 0, "1.2.3\n", ""), (["migrate", "--version"], 64, "", "Error: Unknown option '--version'"),
  ])
  func version(arguments: [String], code: Int32, out: String, errPrefix: String) {
    let result = Fixture.run(arguments)
    #expect(result.code == code)
    #expect(result.out == out)
    #expect(result.err.hasPrefix(errPrefix))
  }
}

@Suite(.ownThreads) struct UsageErrorTests {
  @Test(arguments: [
    (["evict", "--older", "5d"], "Unknown option '--older'. Did you mean '--older-than'?"),
    (["evict", "--dry-rn"], "Unknown option '--dry-rn'. Did you mean '--dry-run'?"),
    (["evict", "--zzzz"], "Unknown option '--zzzz'"),
    (["evict", "-x"], "Unknown option '-x'"),
    (["evict", "--user"], "Missing value for '--user <id>'"),
    (["evict", "--user", "--json"], "Missing value for '--user <id>'"),
    (["evict", "--dry-run=yes"], "Unexpected value 'yes' for '--dry-run'"),
    (["evict", "extra"], "Unexpected argument 'extra'"),
    (["evict", "--user", "abc"], "The value 'abc' is invalid for '--user <id>'"),
    (["evict", "--user=-5"], "The value '-5' is invalid for '--user <id>': must be positive"),
    (["evict", "--user", "-5"], "The value '-5' is invalid for '--user <id>': must be positive"),
    (["evict", "--user", "5", "--data-dir", "/d"], "--user and --data-dir cannot be used together"),
    (["migrate"], "Missing expected argument '<file>'"),
    (["migrate", "a.db", "b.db"], "Unexpected argument 'b.db'"),
    (["import"], "Missing expected argument '<file>'"),
    (["migrat"], "Unexpected argument 'migrat'. Did you mean 'migrate'?"),
    (["remote", "lst"], "Unexpected argument 'lst'. Did you mean 'list'?"),
    (["frobnicate"], "Unexpected argument 'frobnicate'"),
    (["help", "remote", "ad"], "Unexpected argument 'ad'. Did you mean 'add'?"),
    // An unknown command stays an error beside --help (issue 28: it printed the top help, 0).
    (["edit", "--help"], "Unexpected argument 'edit'"),
    (["migrat", "-h"], "Unexpected argument 'migrat'. Did you mean 'migrate'?"),
    (["remote", "lst", "--help"], "Unexpected argument 'lst'. Did you mean 'list'?"),
    (["fail", "--how", "usage"], "bad combination"),
    // Control characters in quoted input are escaped: the message stays one line (fuzzing).
    (["evict", "a\nb"], "Unexpected argument 'a\\nb'"),
    (["evict", "--user", "1\r\u{1B}[2J"], "The value '1\\r\\u{1B}[2J' is invalid for '--user <id>'"),
  ])
  func usageErrorsGoToStderrWithExit64(arguments: [String], message: String) {
    let result = Fixture.run(arguments)
    #expect(result.code == 64)
    #expect(result.out == "")
    let lines = result.err.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.count == 4 && lines[3] == "", "three lines, newline-terminated: \(result.err)")
    #expect(lines.first == "Error: \(message)"[...])
    #expect(lines.dropFirst().first?.hasPrefix("Usage: chatdb") == true)
  }

  @Test func threeLineShapeWithTruncatedUsage() {
    #expect(
      Fixture.run(["evict", "--older-than"]).err == """
        Error: Missing value for '--older-than <age>'
        Usage: chatdb evict [--older-than <age>] [--max-size <size>] [--dry-run] ...
          See 'chatdb evict --help' for more information.

        """)
    #expect(
      Fixture.run(["remote", "add"]).err.contains(
        "Usage: chatdb remote add [--json] <url>\n  See 'chatdb remote add --help'"))
  }
}

@Suite(.ownThreads) struct ParsingTests {
  @Test(arguments: [
    ["evict", "--user=5"], ["evict", "--user", "5"], ["evict", "--user", "3", "--user", "5"],
    ["evict", "--user=", "--user=5"],
  ])
  func optionValueForms(arguments: [String]) throws {
    let parsed = try #require(Fixture.parsed(arguments))
    #expect(parsed.value("--user") == "5")
    #expect(parsed.path == ["chatdb", "evict"])
  }

  @Test func flagsValuesAndPositionalsInAnyOrder() throws {
    let parsed = try #require(Fixture.parsed(["migrate", "--dry-run", "app.db", "--to", "7"]))
    #expect(parsed.command.name == "migrate")
    #expect(parsed.flag("--dry-run"))
    #expect(parsed.value("--to") == "7")
    #expect(parsed.positional("file") == "app.db")
    let plain = try #require(Fixture.parsed(["migrate", "app.db"]))
    #expect(!plain.flag("--dry-run"))
    #expect(plain.value("--to") == nil)
  }

  @Test func doubleDashEndsOptions() throws {
    let parsed = try #require(Fixture.parsed(["import", "--tag", "a", "--", "--tag", "-h", "-"]))
    #expect(parsed.positionals("file") == ["--tag", "-h", "-"])
    #expect(parsed.values("--tag") == ["a"])
  }

  @Test func repeatableOptionsKeepEveryValueInOrder() throws {
    let parsed = try #require(Fixture.parsed(["import", "-t", "x", "a.ndjson", "--tag=y", "b.ndjson", "--tag", "z"]))
    #expect(parsed.values("--tag") == ["x", "y", "z"])
    #expect(parsed.values("-t") == ["x", "y", "z"])
    #expect(parsed.value("--tag") == "z")
    #expect(parsed.positionals("file") == ["a.ndjson", "b.ndjson"])
    #expect(UsageLine.of(Fixture.root, "import").hasSuffix("[--tag <tag> ...] [--user <id>] <file> ..."))
  }

  @Test func subcommandNameAfterPositionalIsAPositional() throws {
    let parsed = try #require(Fixture.parsed(["migrate", "status"]))
    #expect(parsed.path == ["chatdb", "migrate", "status"])
    #expect(Fixture.parsed(["import", "x", "status"])?.positionals("file") == ["x", "status"])
  }

  @Test func addingOptionsReachesEveryRunnableCommand() throws {
    let tree = Fixture.root.addingOptions([.flag("--verbose", help: "More output.")])
    let tool = CommandLineTool(root: tree, version: "1")
    for path in [["migrate", "a.db"], ["migrate", "status"], ["remote", "list"]] {
      guard case .run(let parsed) = tool.parse(path + ["--verbose"]) else {
        Issue.record("\(path) did not parse")
        continue
      }
      #expect(parsed.flag("--verbose"))
    }
    guard case .usageError = tool.parse(["--verbose"]) else {
      Issue.record("pure group got the option")
      return
    }
  }
}

@Suite(.ownThreads) struct ExitCodeTests {
  @Test(arguments: [
    (["fail", "--how", "locked"], Int32(75), "Error: database is locked\n"),
    (["fail", "--how", "plain"], Int32(70), "Error: "),
    (["fail", "--how", "usage"], Int32(64), "Error: bad combination\nUsage: chatdb fail"),
    (["fail"], Int32(4), ""),
    (["migrate", "a.db"], Int32(0), ""),
  ])
  func exitCodes(arguments: [String], code: Int32, errPrefix: String) {
    let result = Fixture.run(arguments)
    #expect(result.code == code)
    #expect(result.err.hasPrefix(errPrefix))
    #expect(errPrefix.isEmpty == result.err.isEmpty)
    #expect(result.out == "")
  }
}

/// Renders a command's one-line usage through the public API (the usage line of a usage error).
enum UsageLine {
  static func of(_ root: Command, _ name: String) -> String {
    let command = root.subcommands.first { $0.name == name }!
    return ParsedArguments(command: command, path: [root.name, name]).usageError("").usage
  }
}
