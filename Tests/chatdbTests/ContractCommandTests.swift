import ChatCLI
import ChatStore
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The command contract through the built binary: every exit code provoked, every
/// command's `--json` in the one envelope, docs/cli.md's table equal to the code's.
@Suite(.serialized, .ownThreads) struct ContractCommandTests {
  /// A data folder with two generated users.
  static func fleet() throws -> TemporaryFolder {
    let folder = try TemporaryFolder()
    let run = try chatdb(
      "generate", "--data-dir", folder.path, "--users", "2", "--contacts", "8", "--messages", "600", "--seed", "9")
    #expect(run.status == 0, "\(run.stderr)")
    return folder
  }

  // MARK: - Exit codes

  /// How each row of the exit-code table is provoked through the binary; the rows a
  /// root-run test cannot provoke are checked in-process (`inProcessOnly`).
  static func provoke(_ code: ExitCode, in folder: TemporaryFolder) throws -> Run? {
    let dir = folder.path
    let one = folder.file("chats-1.db")
    func sql(_ text: String, _ path: String? = nil) throws { try Database(path: path ?? one).execute(text) }
    switch code {
    case .success: return try chatdb("usage", "--data-dir", dir, "--user", "1")
    case .partialFailure:
      try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: folder.file("chats-9.db")))
      defer { try? FileManager.default.removeItem(atPath: folder.file("chats-9.db")) }
      return try chatdb("check", "--data-dir", dir, "--all")
    case .diskLow:
      return try chatdb(
        "usage", "--data-dir", dir, "--user", "1", "--check", "--warn-below", "100%", "--critical-below", "0B")
    case .diskCritical:
      return try chatdb(
        "usage", "--data-dir", dir, "--user", "1", "--check", "--warn-below", "100%", "--critical-below", "99%")
    case .findings:
      try sql("UPDATE MessageRequests SET fail_count = -1 WHERE rowid = (SELECT min(rowid) FROM MessageRequests)")
      defer { try? sql("UPDATE MessageRequests SET fail_count = 0 WHERE fail_count < 0") }
      return try chatdb("check", "--data-dir", dir, "--user", "1")
    case .unplannable:
      let copy = folder.file("unplannable.db")
      try FileManager.default.copyItem(atPath: one, toPath: copy)
      try sql("DROP TABLE MessageRequests", copy)
      return try chatdb("index", "verify", "--db", copy)
    case .newerSchema:
      let copy = folder.file("newer.db")
      try FileManager.default.copyItem(atPath: one, toPath: copy)
      try sql("PRAGMA user_version = 99", copy)
      return try chatdb("export", "--db", copy, "-o", folder.file("newer.ndjson.zst"))
    case .schemaMismatch:
      let copy = folder.file("drift.db")
      try FileManager.default.copyItem(atPath: one, toPath: copy)
      try sql("UPDATE chatdb_migrations SET checksum = 'edited' WHERE version = 1", copy)
      return try chatdb("migrate", "--db", copy)
    case .badTarget: return try chatdb("migrate", "--data-dir", dir, "--user", "1", "--to", "1")
    case .diskSpace:
      // A 1 MiB tmpfs: the import's free-space preflight refuses. Mounting needs root
      // and a kernel that allows it; without, the row is checked in-process below.
      let mountPoint = folder.file("small")
      try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
      guard run("/bin/mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint) == 0 else { return nil }
      defer { _ = run("/bin/umount", mountPoint) }
      let export = folder.file("h.ndjson.zst")
      #expect(try chatdb("export", "--data-dir", dir, "--user", "1", "-o", export).status == 0)
      return try chatdb("import", "--data-dir", mountPoint, "--user", "1", export)
    case .writeFailed:
      let copy = folder.file("chats-3.db")
      try FileManager.default.copyItem(atPath: one, toPath: copy)
      try sql("UPDATE StoreInfo SET value = 3 WHERE key = 'owner_user_id'", copy)
      // A table of the user's that refers to the oldest message: deleting it breaks the
      // foreign key. (Not a refusing trigger: evict runs with its connection's triggers
      // off, keeping the conversation summaries itself.)
      try sql("CREATE TABLE pins (message_id INTEGER REFERENCES Messages (id))", copy)
      try sql("INSERT INTO pins SELECT min(id) FROM Messages", copy)
      return try chatdb("evict", "--db", copy, "--older-than", "1d", "--now", "2030-01-01")
    case .olderSchema:
      let path = folder.file("chats-5.db")
      #expect(try chatdb("migrate", "--db", path, "--to", "2").status == 0)
      return try chatdb("export", "--db", path, "-o", folder.file("old.ndjson.zst"))
    case .usage: return try chatdb("usage", "--data-dir", dir, "--user", "1", "--bogus")
    case .dataError:
      let path = folder.file("notadb.db")
      try Data(repeating: 0x41, count: 10_000).write(to: URL(fileURLWithPath: path))
      return try chatdb("check", "--db", path)
    case .notFound: return try chatdb("evict", "--data-dir", dir, "--user", "42", "--older-than", "1d")
    case .io:
      let input = folder.file("a-folder")
      try FileManager.default.createDirectory(atPath: input, withIntermediateDirectories: true)
      return try chatdb("import", "--data-dir", dir, "--user", "1", input)
    case .busy:
      // Another connection holds the write lock past the busy timeout (5 s).
      let holder = try Database(path: one)
      try holder.execute("BEGIN IMMEDIATE")
      defer { try? holder.execute("ROLLBACK") }
      return try chatdb("evict", "--data-dir", dir, "--user", "1", "--older-than", "1d", "--now", "2030-01-01")
    case .brokenPipe: return try generateIntoAClosedPipe()
    case .readFailed, .internalError, .permission, .unsent, .unavailable: return nil
    }
  }

  /// Rows no test run as root can provoke: permission is never denied to root, a failed
  /// read needs a failing disk, and an internal error is a bug. Their mapping is checked
  /// in-process (`ExitStatusTests` in ChatCLITests, and here).
  static let inProcessOnly: Set<ExitCode> = [.readFailed, .internalError, .permission]
  /// Rows only `chat-sync` gives; `SystemTests.runOnceSaysHowItEndedInItsExitCode` in
  /// ChatSyncTests provokes them (and 77) through that binary.
  static let chatSyncOnly: Set<ExitCode> = [.unsent, .unavailable]

  @Test func everyRowOfTheExitCodeTableIsProvoked() throws {
    let folder = try Self.fleet()
    for code in ExitCode.allCases {
      guard let run = try Self.provoke(code, in: folder) else {
        if code == .diskSpace {
          #expect(ExitCode(for: StoreError(.diskSpace, "full")) == .diskSpace)
        } else {
          #expect(
            Self.inProcessOnly.contains(code) || Self.chatSyncOnly.contains(code), "\(code) has no way to be provoked")
        }
        continue
      }
      #expect(run.status == code.rawValue, "\(code): got \(run.status); \(run.stderr)")
      let errorLines = run.stderr.split(separator: "\n").filter { $0.hasPrefix("Error: ") }
      switch code {
      case .success, .diskLow, .diskCritical, .findings, .unplannable, .partialFailure, .brokenPipe:
        #expect(errorLines.isEmpty, "\(code): \(run.stderr)")
      default:
        #expect(errorLines.count == 1, "\(code): one error line, got \(run.stderr)")
      }
    }
    #expect(ExitCode(.permission).rawValue == 77 && ExitCode(.readFailed).rawValue == 16)
  }

  @Test func anOlderFileGetsAPointerToMigrateFromEveryCommandThatNeedsTheLatestSchema() throws {
    let folder = try TemporaryFolder()
    let path = folder.file("chats-5.db")
    #expect(try chatdb("migrate", "--db", path, "--to", "2").status == 0)
    for command in [
      ["export", "-o", folder.file("x.ndjson.zst")], ["evict", "--older-than", "1d"],
      ["evict", "--older-than", "1d", "--dry-run"],
      ["index", "verify"],
    ] {
      let run = try chatdb(command + ["--db", path])
      #expect(run.status == 15, "\(command): \(run.stderr)")
      #expect(run.stderr.contains("chatdb migrate"), "\(command): \(run.stderr)")
    }
  }

  // MARK: - docs/cli.md mirrors the table

  static let cliDoc: String = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    return (try? String(contentsOf: root.appendingPathComponent("docs/cli.md"), encoding: .utf8)) ?? ""
  }()

  @Test func theDocumentedExitCodeTableIsTheCodes() {
    // The rows of the table under "## Exit codes" only (other tables have numbered rows too).
    let section =
      Self.cliDoc.components(separatedBy: "\n## Exit codes").dropFirst().first?.components(separatedBy: "\n## ").first
      ?? ""
    let rows = section.split(separator: "\n").filter { $0.hasPrefix("| ") && $0.dropFirst(2).first?.isNumber == true }
    let documented = rows.compactMap { row -> (Int32, String)? in
      let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
      guard cells.count >= 2, let code = Int32(cells[0]) else { return nil }
      return (code, cells[1])
    }
    let table = Dictionary(documented, uniquingKeysWith: { a, _ in a })
    for code in ExitCode.allCases {
      #expect(table[code.rawValue] == code.meaning, "docs/cli.md row for \(code.rawValue) (\(code))")
    }
    #expect(Set(table.keys) == Set(ExitCode.allCases.map(\.rawValue)))
  }

  // MARK: - One envelope

  @Test func everyCommandPrintsTheEnvelope() throws {
    let folder = try Self.fleet()
    let dir = ["--data-dir", folder.path]
    let export = folder.file("h.ndjson.zst")
    let commands: [[String]] = [
      ["migrate", "--user", "1"], ["migrate", "--all"], ["migrate", "status", "--user", "1"],
      ["migrate", "status", "--all"],
      ["usage", "--user", "1"], ["usage", "--all"], ["check", "--user", "1"], ["check", "--all"],
      ["index", "list", "--all"], ["index", "verify", "--user", "1"], ["index", "apply", "--all", "--dry-run"],
      ["index", "analyze", "--user", "2"], ["vacuum", "--all"],
      ["vacuum", "--user", "1", "--into", folder.file("copy.db")],
      ["evict", "--all", "--older-than", "200d", "--now", "2026-01-01", "--dry-run"],
      ["evict", "--user", "2", "--older-than", "200d", "--now", "2026-01-01"],
      ["export", "--user", "1", "-o", export], ["export", "--all", "-o", folder.file("exports/")],
      ["import", "--user", "3", export], ["generate", "--user", "4", "--messages", "50", "--contacts", "3"],
      ["generate", "--users", "2", "--messages", "50", "--contacts", "3", "--seed", "9"],
      ["generate", "--user", "1", "--format", "ndjson", "-o", folder.file("g.ndjson"), "--messages", "10"],
      ["evict", "--user", "77", "--older-than", "1d"],  // a failure is an envelope too
    ]
    for command in commands {
      // `import --user 3` of user 1's export is refused: 65, with the envelope.
      let run = try chatdb(command + dir + ["--json"])
      let object = try envelope(run)
      #expect(object["command"] as? String == "chatdb " + command.prefix { !$0.hasPrefix("-") }.joined(separator: " "))
      let files = try #require(object["files"] as? [[String: Any]], "\(command)")
      for file in files {
        #expect(file["path"] is String && file.keys.contains("userId") && file["ok"] is Bool, "\(command)")
        #expect((file["result"] != nil) != (file["error"] != nil), "\(command)")
      }
      #expect(object["ok"] as? Bool == (run.status == 0), "\(command): \(run.stderr)")
    }
  }

  @Test func anExportToStandardOutputPutsTheEnvelopeOnStandardError() throws {
    let folder = try Self.fleet()
    let run = try chatdb("export", "--data-dir", folder.path, "--user", "1", "-o", "-", "--json")
    #expect(run.status == 0)
    #expect(!run.stdout.isEmpty, "the export on stdout")
    #expect(try jsonObject(run.stderr)["command"] as? String == "chatdb export")
  }

  // MARK: - --all --jobs

  @Test func jobsKeepUserIdOrderAndOneFailureChangesNothingElse() throws {
    let folder = try TemporaryFolder()
    #expect(
      try chatdb(
        "generate", "--data-dir", folder.path, "--users", "12", "--messages", "40", "--contacts", "3", "--jobs", "4"
      ).status == 0)
    try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: folder.file("chats-7.db")))
    let one = try chatdb("check", "--data-dir", folder.path, "--all", "--jobs", "1", "--json")
    let many = try chatdb("check", "--data-dir", folder.path, "--all", "--jobs", "4", "--json")
    #expect(one.status == 1 && many.status == 1)
    #expect(try fileEntries(many).map { $0["userId"] as? Int } == (1...12).map { $0 })
    #expect(try fileEntries(many).filter { $0["ok"] as? Bool == false }.map { $0["userId"] as? Int } == [7])
    #expect(one.stdout == many.stdout)
  }

  @Test(arguments: [["--jobs", "0"], ["--jobs", "x"], ["--jobs", "2000"]])
  func badJobsAreUsageErrors(_ options: [String]) throws {
    #expect(try chatdb(["check", "--all", "--data-dir", "/nonexistent"] + options).status == 64)
  }

  // MARK: - Defects of issue 9, each through the binary

  /// Item 1: a one-character relative folder that does not exist yet.
  @Test func aOneCharacterDataFolderWorks() throws {
    let folder = try TemporaryFolder()
    let export = folder.file("h.ndjson")
    #expect(try chatdb("generate", "--user", "1", "--format", "ndjson", "-o", export, "--messages", "20").status == 0)
    let process = Process()
    process.executableURL = binaryDirectory.appendingPathComponent("chatdb")
    process.arguments = ["import", "--data-dir", "d", "--user", "1", export]
    process.currentDirectoryURL = URL(fileURLWithPath: folder.path)
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    #expect(FileSystem.exists(folder.file("d/chats-1.db")))
    for args in [["usage", "--db", "x"], ["vacuum", "--db", "y", "--into", "z"], ["migrate", "status", "--db", "q"]] {
      let run = try chatdb(args)
      #expect(run.status != 132 && run.status < 128, "\(args): trapped")
    }
  }

  /// Item 2: read-only commands leave the folder exactly as they found it.
  @Test func readOnlyCommandsLeaveNothingBehind() throws {
    let folder = try Self.fleet()
    let before = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    #expect(before == ["chats-1.db", "chats-2.db"])
    for command in [
      ["migrate", "--all"], ["migrate", "status", "--all"], ["usage", "--all"], ["check", "--all"],
      ["index", "list", "--all"],
      ["index", "verify", "--all"], ["evict", "--all", "--older-than", "30d", "--dry-run"],
      ["index", "apply", "--all", "--dry-run"],
      ["export", "--user", "1", "-o", "-"],
    ] {
      let run = try chatdb(command + ["--data-dir", folder.path])
      #expect(run.status == 0, "\(command): \(run.stderr)")
      #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == before, "\(command)")
    }
    let usage = try fileResult(try chatdb("usage", "--data-dir", folder.path, "--user", "1", "--json"))
    #expect(usage["totalBytes"] as? Int == Int(FileSystem.size(atPath: folder.file("chats-1.db")) ?? -1))
  }

  /// Item 8: `import --db NEW` takes the owner from the export's header, or from --user.
  @Test func importIntoANewPathTakesTheOwnerFromTheHeaderOrUser() throws {
    let folder = try Self.fleet()
    let export = folder.file("h.ndjson.zst")
    #expect(try chatdb("export", "--data-dir", folder.path, "--user", "2", "-o", export).status == 0)
    let byHeader = try chatdb("import", "--db", folder.file("restored.db"), export, "--json")
    #expect(byHeader.status == 0, "\(byHeader.stderr)")
    #expect(try fileResult(byHeader)["owner"] as? Int == 2)
    let byUser = try chatdb("import", "--db", folder.file("other.db"), "--user", "2", export)
    #expect(byUser.status == 0, "\(byUser.stderr)")
    let wrongUser = try chatdb("import", "--db", folder.file("wrong.db"), "--user", "3", export)
    #expect(wrongUser.status == 65)
    #expect(!FileSystem.exists(folder.file("wrong.db")), "a failed import leaves no new database behind")
  }

  /// Item 10: another seed into the same file is a data conflict, in a whole sentence.
  @Test func generateIntoAFileOfAnotherSeedIsAConflict() throws {
    let folder = try Self.fleet()
    let run = try chatdb(
      "generate", "--data-dir", folder.path, "--user", "1", "--contacts", "8", "--messages", "600", "--seed", "10")
    #expect(run.status == 65)
    #expect(
      run.stderr.hasPrefix("Error: ") && run.stderr.hasSuffix("\n") && run.stderr.split(separator: "\n").count == 1)
    #expect(run.stderr.contains("--seed"), "\(run.stderr)")
    let far = try chatdb("generate", "--data-dir", folder.path, "--user", "9", "--end", "9999-12-31")
    #expect(far.status == 64)
    #expect(far.stderr.contains("'--end <date>'"))
  }

  /// Item 11: the output's extension decides the compression; --output is required.
  @Test func exportFollowsTheExtension() throws {
    let folder = try Self.fleet()
    #expect(
      try chatdb("export", "--help").stdout.contains(
        "USAGE: chatdb export [--data-dir <dir>] [--user <id>] [--db <path>] [--all]"))
    #expect(
      try chatdb("export", "--help").stdout.contains("-o <file>")
        || chatdb("export", "--help").stdout.contains("--output <file> "))
    let plain = folder.file("h.ndjson")
    #expect(try chatdb("export", "--data-dir", folder.path, "--user", "1", "-o", plain).status == 0)
    let firstLine = try String(contentsOfFile: plain, encoding: .utf8).split(separator: "\n").first ?? ""
    #expect(firstLine.hasPrefix("{"))
    let zst = folder.file("h.ndjson.zst")
    #expect(try chatdb("export", "--data-dir", folder.path, "--user", "1", "-o", zst).status == 0)
    #expect(try Data(contentsOf: URL(fileURLWithPath: zst)).prefix(4) == Data([0x28, 0xB5, 0x2F, 0xFD]))
    #expect(try chatdb("export", "--data-dir", folder.path, "--user", "1", "-o", folder.file("h.txt")).status == 64)
    #expect(try chatdb("export", "--data-dir", folder.path, "--user", "1").status == 64)
  }

  /// Item 13: thresholds need a unit or %, and critical must be below low.
  @Test(arguments: [
    ["--warn-below", "5"], ["--warn-below", "1GiB", "--critical-below", "2GiB"],
    ["--warn-below", "5%", "--critical-below", "10%"],
  ])
  func badThresholdsAreUsageErrors(_ options: [String]) throws {
    let folder = try Self.fleet()
    let run = try chatdb(["usage", "--data-dir", folder.path, "--user", "1"] + options)
    #expect(run.status == 64, "\(options): \(run.stderr)")
  }

  /// Item 14: a closed standard output ends generate quietly.
  static func generateIntoAClosedPipe() throws -> Run {
    try intoAClosedPipe(["generate", "--user", "1", "--format", "ndjson", "--messages", "200000"])
  }

  /// `chatdb ARGUMENTS` whose standard output's reader goes away after 100 bytes.
  static func intoAClosedPipe(_ arguments: [String]) throws -> Run {
    let process = Process()
    process.executableURL = binaryDirectory.appendingPathComponent("chatdb")
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    _ = out.fileHandleForReading.readData(ofLength: 100)
    try out.fileHandleForReading.close()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Run(status: process.terminationStatus, stdout: "", stderr: String(decoding: stderr, as: UTF8.self))
  }

  @Test func aClosedPipeEndsGenerateQuietly() throws {
    let run = try Self.generateIntoAClosedPipe()
    #expect(run.status == ExitCode.brokenPipe.rawValue)
    #expect(run.stderr.isEmpty, "\(run.stderr)")
  }

  /// Issue 28: `export -o - | head -c 10` printed "Error: … Broken pipe".
  @Test func aClosedPipeEndsExportQuietly() throws {
    let folder = try Self.fleet()
    let made = try chatdb("generate", "--data-dir", folder.path, "--user", "7", "--messages", "20000", "--seed", "3")
    #expect(made.status == 0, "\(made.stderr)")
    let run = try Self.intoAClosedPipe(["export", "--data-dir", folder.path, "--user", "7", "-o", "-"])
    #expect(run.status == ExitCode.brokenPipe.rawValue)
    #expect(!run.stderr.contains("Error"), "\(run.stderr)")
  }

  /// Item 15: a conversation the file does not hold is named.
  @Test func evictingAnUnknownConversationSaysSo() throws {
    let folder = try Self.fleet()
    let run = try chatdb("evict", "--data-dir", folder.path, "--user", "1", "--conversation", "999", "--dry-run")
    #expect(run.status == 0)
    #expect(run.stdout.contains("no messages in conversation(s) 999"), "\(run.stdout)")
    let json = try fileResult(
      try chatdb("evict", "--data-dir", folder.path, "--user", "1", "--conversation", "999", "--json"))
    #expect(json["unknownConversations"] as? [Int] == [999])
  }
}

/// Runs a program and returns its exit status (output discarded).
private func run(_ path: String, _ arguments: String...) -> Int32 {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: path)
  process.arguments = arguments
  process.standardOutput = FileHandle.nullDevice
  process.standardError = FileHandle.nullDevice
  guard (try? process.run()) != nil else { return -1 }
  process.waitUntilExit()
  return process.terminationStatus
}
