import ChatStore
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Security through the built binaries (issue 14): private files and folders under a
/// permissive umask, paths that try to leave the data folder (bad ids, symbolic links),
/// and hostile values in options and imported records: stored exactly or refused with
/// one line, never an SQL error or a crash.
@Suite(.serialized, .ownThreads) struct SecurityCommandTests {
  // MARK: - Modes under umask 000

  /// `chatdb` run by `/bin/sh` after `umask 000`.
  static func chatdbUnderUmaskZero(_ arguments: [String], stdin: String? = nil) throws -> Run {
    try shell("umask 000; exec \"$0\" \"$@\"", [binaryDirectory.appendingPathComponent("chatdb").path] + arguments)
  }

  @Test func everyFileAndFolderTheCommandsCreateIsPrivateUnderUmaskZero() throws {
    let folder = try TemporaryFolder()
    let data = folder.file("deep/er/data")
    func ok(_ arguments: String...) throws {
      let run = try Self.chatdbUnderUmaskZero(arguments)
      #expect(run.status == 0, "\(arguments.joined(separator: " ")): \(run.stderr)")
    }
    try ok("generate", "--data-dir", data, "--user", "1", "--contacts", "5", "--messages", "300", "--seed", "1")
    try ok(
      "generate", "--data-dir", folder.file("fleet"), "--users", "2", "--contacts", "3", "--messages", "50", "--seed",
      "2")
    try ok("migrate", "--data-dir", folder.file("old"), "--user", "3", "--to", "1")
    try ok("migrate", "--data-dir", folder.file("old"), "--user", "3")  // the backup .bak-v1
    try ok("export", "--data-dir", data, "--user", "1", "-o", folder.file("one.ndjson.zst"))
    try ok("export", "--data-dir", data, "--user", "1", "-o", folder.file("one.ndjson"))
    try ok("export", "--data-dir", data, "--all", "-o", folder.file("exports") + "/")
    try ok("vacuum", "--data-dir", data, "--user", "1", "--into", folder.file("copy.db"))
    try ok("vacuum", "--data-dir", data, "--user", "1")
    try ok("evict", "--data-dir", data, "--user", "1", "--older-than", "1d")
    // A rejects file, from a history with one bad line.
    let history = folder.file("bad.ndjson")
    let records = try String(contentsOfFile: folder.file("one.ndjson"), encoding: .utf8).split(separator: "\n")
      .filter { !$0.contains("\"header\"") && !$0.contains("\"trailer\"") }
    try (records.joined(separator: "\n") + "\n{\"type\":\"nonsense\"}\n").write(
      toFile: history, atomically: true, encoding: .utf8)
    try ok(
      "import", "--data-dir", folder.file("imported"), "--user", "1", "--skip-bad-records", "--rejects",
      folder.file("rejects.ndjson"), history)

    var checked: [String] = []
    for path in try allPaths(under: folder.path) {
      var info = stat()
      guard lstat(path, &info) == 0 else { continue }
      let kind = info.st_mode & S_IFMT
      let bits = Int(info.st_mode & 0o777)
      if path == folder.path { continue }  // made by the test
      if kind == S_IFDIR {
        #expect(bits == 0o700, "\(path) is a folder with mode \(String(bits, radix: 8))")
      } else if path != history {
        #expect(bits == 0o600, "\(path) has mode \(String(bits, radix: 8))")
      }
      checked.append(FileSystem.lastComponent(of: path))
    }
    for name in [
      "chats-1.db", "chats-2.db", "chats-3.db.bak-v1", "one.ndjson.zst", "chats-1.ndjson.zst", "copy.db",
      "rejects.ndjson", "er",
    ] {
      #expect(checked.contains(name), "\(name) was made and checked: \(checked)")
    }
  }

  /// A writer's `-wal` and `-shm` (they exist only while a connection is open): an
  /// import from a pipe that is kept open holds the file.
  @Test func theWalAndShmOfAFileBeingWrittenArePrivateUnderUmaskZero() throws {
    let folder = try TemporaryFolder()
    let one = folder.file("one.ndjson")
    #expect(
      try chatdb("generate", "--format", "ndjson", "--user", "1", "--contacts", "3", "--messages", "50", "-o", one)
        .status == 0)
    let lines = try String(contentsOfFile: one, encoding: .utf8).split(separator: "\n").filter {
      !$0.contains("\"trailer\"") && !$0.contains("\"header\"")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = [
      "-c", "umask 000; exec \"$0\" \"$@\"", binaryDirectory.appendingPathComponent("chatdb").path,
      "import", "--data-dir", folder.file("data"), "--user", "1", "--batch-size", "1", "-",
    ]
    let input = Pipe()
    process.standardInput = input
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    let db = folder.file("data/chats-1.db")
    var seen = false
    for _ in 0..<200 where !seen {
      seen = FileSystem.exists(db + "-wal") && FileSystem.exists(db + "-shm")
      if !seen { usleep(50_000) }
    }
    #expect(seen, "the -wal and -shm appeared while the import ran")
    for suffix in ["", "-wal", "-shm"] {
      #expect(FileSystem.permissions(atPath: db + suffix) == 0o600, "chats-1.db\(suffix)")
    }
    #expect(FileSystem.permissions(atPath: folder.file("data")) == 0o700)
    try input.fileHandleForWriting.close()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
  }

  // MARK: - Ids that try to leave the data folder

  static let badUserIDs = [
    "../x", "../1", "1/../2", "-5", "0", "007", "+1", " 1", "1 ", "1e3", "0x1", "1.0", "", "9223372036854775808",
    String(repeating: "9", count: 10_000), "１", "٣", "1;rm -rf x", "'; DROP TABLE Messages; --", "/etc/passwd",
  ]

  @Test(arguments: badUserIDs)
  func aUserIDThatIsNotPlainDigitsIsAUsageError(_ id: String) throws {
    let folder = try TemporaryFolder()
    for command in [
      ["check"], ["migrate"], ["generate", "--messages", "10"], ["search", "hi"], ["import", folder.file("x.ndjson")],
    ] {
      let run = try chatdb(command + ["--data-dir", folder.path, "--user", id])
      #expect(run.status == 64, "\(command) --user \(id.prefix(20)): \(run.status) \(run.stderr.prefix(200))")
      #expect(run.stderr.hasPrefix("Error: "), "\(run.stderr.prefix(200))")
      #expect(!run.stderr.contains("SQL"))
    }
    #expect(try allPaths(under: folder.path).count == 1, "nothing was created")
  }

  /// NUL bytes cannot reach a program through argv; the parsers refuse them anyway.
  @Test func idsWithNULOrOtherDigitsAreRefusedByTheParser() {
    for text in ["1\u{0}", "\u{0}1", "1\u{0}/../2", "١", "1\u{301}"] {
      #expect(StoreLocation.parseUserID(text) == nil, "\(text.debugDescription)")
    }
    #expect(StoreLocation.userID(fromFileName: "chats-1\u{0}.db") == nil)
    #expect(StoreLocation.userID(fromFileName: "chats-../1.db") == nil)
  }

  @Test func anArgumentThatIsNotUTF8IsAUsageErrorNotRepairedText() throws {
    let folder = try TemporaryFolder()
    let chatdbPath = binaryDirectory.appendingPathComponent("chatdb").path
    let run = try shell("exec \"$0\" check --data-dir \"$1\" --user \"$(printf '1\\377')\"", [chatdbPath, folder.path])
    #expect(run.status == 64, "\(run.stderr)")
    #expect(run.stderr.hasPrefix("Error: argument 5 is not valid UTF-8"), "\(run.stderr)")
    let search = try shell(
      "exec \"$0\" search --data-dir \"$1\" --user 1 \"$(printf 'a\\377b')\"", [chatdbPath, folder.path])
    #expect(search.status == 64, "\(search.stderr)")
  }

  // MARK: - Symbolic links out of the data folder

  /// A data folder with a good chats-2.db and a chats-1.db linking to a file outside it.
  static func linkedFolder() throws -> (folder: TemporaryFolder, data: String, outside: String) {
    let folder = try TemporaryFolder()
    let data = folder.file("data")
    let outside = folder.file("elsewhere/chats-7.db")
    #expect(try chatdb("generate", "--db", outside, "--contacts", "3", "--messages", "100", "--seed", "1").status == 0)
    #expect(
      try chatdb("generate", "--data-dir", data, "--user", "2", "--contacts", "3", "--messages", "100", "--seed", "1")
        .status == 0)
    #expect(symlink("../elsewhere/chats-7.db", data + "/chats-1.db") == 0)
    return (folder, data, outside)
  }

  static let commandsOnOneFile: [[String]] = [
    ["check"], ["check", "--full"], ["usage"], ["migrate"], ["migrate", "status"], ["index", "list"],
    ["index", "verify"],
    ["index", "apply"], ["index", "analyze"], ["vacuum"], ["evict", "--older-than", "1d"],
    ["evict", "--older-than", "1d", "--dry-run"],
    ["search", "hello"], ["generate", "--contacts", "3", "--messages", "10"], ["export", "-o", "{out}"],
    ["import", "{in}"],
  ]

  @Test(arguments: commandsOnOneFile)
  func aLinkOutOfTheDataFolderIsRefusedByEveryCommandAndItsTargetLeftAlone(_ command: [String]) throws {
    let (folder, data, outside) = try Self.linkedFolder()
    let history = folder.file("in.ndjson")
    #expect(try chatdb("export", "--db", outside, "-o", history).status == 0)
    let before = try Data(contentsOf: URL(fileURLWithPath: outside))
    let arguments = command.map { $0 == "{out}" ? folder.file("out.ndjson") : $0 == "{in}" ? history : $0 }
    let run = try chatdb(arguments + ["--data-dir", data, "--user", "1"])
    #expect(run.status == 65, "\(command): \(run.status) \(run.stderr)")
    let lines = run.stderr.split(separator: "\n")
    #expect(lines.count == 1 && lines[0].hasPrefix("Error: \(data)/chats-1.db is a symbolic link to "), "\(run.stderr)")
    #expect(lines.first?.contains("outside the data folder") == true)
    #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == before, "the file the link leads to is unchanged")
    #expect(!FileSystem.exists(outside + "-wal") && !FileSystem.exists(folder.file("out.ndjson")))
  }

  @Test(arguments: [
    ["check"], ["usage"], ["migrate"], ["migrate", "status"], ["index", "verify"], ["vacuum"],
    ["evict", "--older-than", "1d"], ["export", "-o", "{out}/"],
  ])
  func allReportsTheLinkAsItsOwnFailureAndGoesOn(_ command: [String]) throws {
    let (folder, data, _) = try Self.linkedFolder()
    let arguments = command.map { $0 == "{out}/" ? folder.file("exports") + "/" : $0 }
    let run = try chatdb(arguments + ["--data-dir", data, "--all", "--json"])
    #expect(run.status == 1, "\(command): \(run.stderr)")
    let files = try fileEntries(run)
    let byName = Dictionary(
      uniqueKeysWithValues: files.map { (FileSystem.lastComponent(of: $0["path"] as? String ?? ""), $0) })
    #expect(byName["chats-2.db"]?["ok"] as? Bool == true, "\(command): the good file was done")
    let error = byName["chats-1.db"]?["error"] as? [String: Any]
    #expect(
      error?["exitCode"] as? Int == 65 && (error?["message"] as? String)?.contains("symbolic link") == true,
      "\(String(describing: error))")
  }

  @Test func aLinkInsideTheFolderIsFollowedAndDbFollowsAnyLink() throws {
    let (folder, data, _) = try Self.linkedFolder()
    #expect(symlink("chats-2.db", data + "/chats-3.db") == 0)
    let inside = try chatdb("check", "--data-dir", data, "--user", "3")
    #expect(inside.status == 0, "\(inside.stderr)")
    let explicit = try chatdb("check", "--db", data + "/chats-1.db")
    #expect(explicit.status == 0, "--db is the user's own choice: \(explicit.stderr)")
    _ = folder
  }

  /// A dangling link out of the folder: a command that would create the file creates
  /// nothing at the link's target (chatdb and chat-sync alike).
  @Test func aDanglingLinkOutIsNotFollowedToCreateAFile() throws {
    let folder = try TemporaryFolder()
    let data = folder.file("data")
    try FileSystem.createPrivateDirectory(atPath: data)
    try FileSystem.createPrivateDirectory(atPath: folder.file("elsewhere"))
    let target = folder.file("elsewhere/planted.db")
    #expect(symlink(target, data + "/chats-1.db") == 0)
    for command in [["migrate"], ["generate", "--contacts", "3", "--messages", "10"]] {
      let run = try chatdb(command + ["--data-dir", data, "--user", "1"])
      #expect(run.status == 65, "\(command): \(run.stderr)")
    }
    let sync = try run(
      binaryDirectory.appendingPathComponent("chat-sync").path,
      ["send", "--data-dir", data, "--user", "1", "--to", "2", "hi"])
    #expect(sync.status == 65, "chat-sync send: \(sync.stderr)")
    #expect(!FileSystem.exists(target), "nothing was created outside the data folder")
  }

  // MARK: - Hostile option values

  static let hostileOptions: [[String]] = [
    ["search", "--limit", "-1", "x"], ["search", "--limit", String(repeating: "9", count: 10_000), "x"],
    ["search", "--with", "-2", "x"], ["search", "--with", "2'; DROP TABLE Messages; --", "x"],
    ["search", "--before", "-1", "x"],
    ["search", "--before", String(repeating: "9", count: 10_000), "x"],
    ["evict", "--older-than", "-1d"], ["evict", "--older-than", String(repeating: "9", count: 10_000) + "d"],
    ["evict", "--older-than", "1d'; DROP TABLE Messages; --"], ["evict", "--max-size", "-1MB"],
    ["evict", "--max-size", String(repeating: "9", count: 10_000) + "MB"],
    ["evict", "--before", "2026-01-01'; DROP TABLE Messages; --"],
    ["generate", "--messages", "-1"], ["generate", "--contacts", String(repeating: "9", count: 10_000)],
    ["generate", "--seed", "-1x"],
    ["migrate", "--to", "-1"], ["migrate", "--to", String(repeating: "9", count: 10_000)],
    ["migrate", "--to", "1; DROP TABLE Messages"],
    ["check", "--jobs", "-1"], ["usage", "--warn-below", "-5%"],
    ["usage", "--critical-below", String(repeating: "9", count: 10_000) + "GB"],
  ]

  @Test(arguments: hostileOptions)
  func hostileOptionValuesAreUsageErrorsAndChangeNothing(_ arguments: [String]) throws {
    let folder = try TemporaryFolder()
    #expect(
      try chatdb(
        "generate", "--data-dir", folder.path, "--user", "1", "--contacts", "3", "--messages", "100", "--seed", "1"
      ).status == 0)
    let before = try rowCounts(folder.file("chats-1.db"))
    let run = try chatdb(arguments + ["--data-dir", folder.path, "--user", "1"])
    #expect(
      run.status == 64 || run.status == 0,
      "\(arguments.map { String($0.prefix(30)) }): \(run.status) \(run.stderr.prefix(300))")
    if run.status == 64 {
      #expect(run.stderr.hasPrefix("Error: ") && !run.stderr.contains("SQLite"), "\(run.stderr.prefix(300))")
    }
    if arguments[0] != "evict" || run.status != 0 {
      #expect(try rowCounts(folder.file("chats-1.db")) == before)
    }
    #expect(
      try Database(path: folder.file("chats-1.db"), mode: .readOnly).int64(
        "SELECT count(*) FROM sqlite_schema WHERE name = 'Messages'") == 1)
  }

  /// Search text is bound, never part of the SQL: SQL and FTS5 syntax find nothing or
  /// match as words, and the file is as it was.
  @Test(arguments: [
    "'; DROP TABLE Messages; --", "\"", "a OR b NEAR(c) * ^ -x", "Messages:*", ")(", "\\", "%_",
    String(repeating: "x", count: 100_000),
  ])
  func searchTextIsNeverSQL(_ text: String) throws {
    let folder = try TemporaryFolder()
    #expect(
      try chatdb(
        "generate", "--data-dir", folder.path, "--user", "1", "--contacts", "3", "--messages", "100", "--seed", "1"
      ).status == 0)
    let run = try chatdb("search", "--data-dir", folder.path, "--user", "1", text)
    #expect(run.status == 0, "\(run.stderr.prefix(300))")
    #expect(try rowCounts(folder.file("chats-1.db"))[1] == 100)
  }

  // MARK: - Hostile imported records

  static let owner = #"{"type":"user","id":1,"name":"Me","avatarUrl":null,"lastConnectedAt":null}"#
  static let peer = #"{"type":"user","id":2,"name":"Ada","avatarUrl":null,"lastConnectedAt":null}"#
  static func message(_ fields: String) -> String {
    #"{"type":"message","id":1000,"fromUserId":2,"toUserId":1,"status":"READ","createdAt":"2025-12-31T10:00:00.000Z","content":"Hi"\#(fields)}"#
  }
  static func request(_ fields: String) -> String {
    #"{"type":"request","requestId":7,"toUserId":2,"content":"x","status":"FAILED","createdAt":"2025-12-31T10:00:00.000Z","lastModifiedAt":"2025-12-31T10:00:00.000Z","lastSentAt":null,"failCount":2,"nextAttemptAt":null,"failReason":"HTTP 403"\#(fields)}"#
  }

  /// Each refused line: (the line, the field its one-line error must name).
  static let refusedRecords: [(String, String)] = [
    (message(#","id":-5"#), "'id'"), (message(#","id":0"#), "'id'"),
    (message(#","id":\#(String(repeating: "9", count: 10_000))"#), "'id'"),
    (message(#","id":1000.5"#), "'id'"), (message(#","id":"1000"#), "'id'"),
    (message(#","fromUserId":-2"#), "'fromUserId'"),
    (message(#","toUserId":-1"#), "'toUserId'"), (message(#","status":"READ'; DROP TABLE Messages; --""#), "'status'"),
    (message(#","createdAt":"2025'); DROP TABLE Messages;--""#), "'createdAt'"),
    (message(#","content":"\ud800""#), "'content'"),
    (message(#","content":"\#(String(repeating: "x", count: 70_000))""#), "content"),
    (request(#","failCount":-1"#), "'failCount'"), (request(#","requestId":-7"#), "'requestId'"),
    (request(#","failCount":\#(String(repeating: "9", count: 10_000))"#), "'failCount'"),
    (#"{"type":"user","id":-2,"name":"x","avatarUrl":null,"lastConnectedAt":null}"#, "'id'"),
    (#"{"type":"user'; DROP TABLE Users; --","id":3}"#, "type"),
  ]

  @Test(arguments: refusedRecords)
  func aHostileRecordIsRefusedWithOneLineNamingTheLineAndField(_ record: (String, String)) throws {
    let folder = try TemporaryFolder()
    let input = folder.file("in.ndjson")
    try [Self.owner, Self.peer, record.0].joined(separator: "\n").appending("\n").write(
      toFile: input, atomically: true, encoding: .utf8)
    let run = try chatdb("import", "--data-dir", folder.file("data"), "--user", "1", input)
    #expect(run.status == 65, "\(run.status) \(run.stderr.prefix(300))")
    let lines = run.stderr.split(separator: "\n")
    #expect(
      lines.count == 1 && lines[0].hasPrefix("Error: \(input):3: ") && lines[0].contains(record.1),
      "\(run.stderr.prefix(300))")
    #expect(!FileSystem.exists(folder.file("data/chats-1.db")), "nothing was imported")
  }

  @Test func invalidUTF8AndHugeLinesInAHistoryAreRefusedNamingTheLine() throws {
    let folder = try TemporaryFolder()
    let cases: [(Data, String)] = [
      (
        Data(Self.message("").replacingOccurrences(of: "\"Hi\"", with: "\"H\u{1}i\"").utf8).map { $0 == 1 ? 0xFF : $0 }
          .data, "invalid UTF-8"
      ),
      (
        Data(
          Self.message("").replacingOccurrences(of: "\"Hi\"", with: "\"\(String(repeating: "x", count: 10 << 20))\"")
            .utf8), "longer than"
      ),
      (Data(Self.message(#","id":\#(String(repeating: "9", count: 3_000_000))"#).utf8), "longer than"),
      (Data([0, 0, 0, 0x7B, 0]), ":3:"),
    ]
    for (line, expected) in cases {
      let input = folder.file("in.ndjson")
      var data = Data((Self.owner + "\n" + Self.peer + "\n").utf8)
      data.append(line)
      data.append(0x0A)
      try data.write(to: URL(fileURLWithPath: input))
      let run = try chatdb("import", "--data-dir", folder.file("data"), "--user", "1", input)
      #expect(run.status == 65, "\(expected): \(run.status) \(run.stderr.prefix(300))")
      let lines = run.stderr.split(separator: "\n")
      #expect(
        lines.count == 1 && lines[0].contains("in.ndjson:3") && lines[0].contains(expected), "\(run.stderr.prefix(300))"
      )
    }
  }

  /// SQL metacharacters, NUL bytes, quotes and emoji in every text field are stored and
  /// exported exactly as given.
  @Test func hostileTextIsStoredAndExportedExactly() throws {
    let folder = try TemporaryFolder()
    let hostile = #"a\u0000b'; DROP TABLE Messages; -- \" \\ 👋 ‮"#
    let records = [
      Self.owner,
      #"{"type":"user","id":2,"name":"\#(hostile)","avatarUrl":"\#(hostile)","lastConnectedAt":null}"#,
      Self.message(#","content":"\#(hostile)""#),
      Self.request(#","content":"\#(hostile)","failReason":"\#(hostile)""#),
    ]
    let input = folder.file("in.ndjson")
    try (records.joined(separator: "\n") + "\n").write(toFile: input, atomically: true, encoding: .utf8)
    let imported = try chatdb("import", "--data-dir", folder.file("data"), "--user", "1", input)
    #expect(imported.status == 0, "\(imported.stderr)")
    let expected = "a\u{0}b'; DROP TABLE Messages; -- \" \\ 👋 \u{202E}"
    let db = try Database(path: folder.file("data/chats-1.db"), mode: .readOnly)
    let hex = expected.utf8.map { String(format: "%02X", $0) }.joined()
    for sql in [
      "SELECT hex(content) FROM Messages", "SELECT hex(name) FROM Users WHERE id = 2",
      "SELECT hex(avatar_url) FROM Users WHERE id = 2",
      "SELECT hex(content) FROM MessageRequests", "SELECT hex(fail_reason) FROM MessageRequests",
    ] {
      #expect(try db.string(sql) == hex, "\(sql)")
    }
    let exported = try chatdb(
      "export", "--data-dir", folder.file("data"), "--user", "1", "-o", folder.file("out.ndjson"))
    #expect(exported.status == 0, "\(exported.stderr)")
    let text = try String(contentsOfFile: folder.file("out.ndjson"), encoding: .utf8)
    let written = #"a\u0000b'; DROP TABLE Messages; -- \" \\ 👋"#
    #expect(
      text.components(separatedBy: written).count - 1 == 5,
      "content, name, avatar, request content, reason: \(text.prefix(800))")
  }
}

// MARK: - Support

/// Runs `/bin/sh -c script` with `arguments` as `$0`, `$1`, …
func shell(_ script: String, _ arguments: [String]) throws -> Run {
  try run("/bin/sh", ["-c", script] + arguments)
}

/// Every path under `root`, itself included, without following links.
func allPaths(under root: String) throws -> [String] {
  var result = [root]
  for name in try FileManager.default.contentsOfDirectory(atPath: root) {
    let path = root + "/" + name
    var info = stat()
    if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR {
      result += try allPaths(under: path)
    } else {
      result.append(path)
    }
  }
  return result
}

extension Array where Element == UInt8 {
  var data: Data { Data(self) }
}
