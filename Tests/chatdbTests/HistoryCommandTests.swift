import ChatStore
import Foundation
import TestSupport
import Testing

/// All rows of a file's three tables, for comparing two files.
func tableContents(_ path: String) throws -> [String] {
  let db = try Database(path: path, mode: .readOnly)
  var rows: [String] = []
  for (table, order) in [("Users", "id"), ("Messages", "id"), ("MessageRequests", "request_id")] {
    rows += try db.query("SELECT * FROM \(table) ORDER BY \(order)") {
      $0.values.map(\.description).joined(separator: "|")
    }
  }
  return rows
}

@Suite(.ownThreads) struct HistoryCommandTests {
  @Test func generateIsDeterministicAndQuietWhenPiped() throws {
    let folder = try TemporaryFolder()
    for dir in ["a", "b"] {
      let run = try chatdb(
        "generate", "--data-dir", folder.file(dir), "--user", "5", "--contacts", "20", "--messages", "3000", "--seed",
        "9")
      #expect(run.status == 0, "\(run.stderr)")
      #expect(run.stderr.isEmpty, "no progress when not on a terminal")
      #expect(run.stdout.contains("Generated 3,046 records for 1 user(s)"))
    }
    let a = try tableContents(folder.file("a/chats-5.db"))
    #expect(a.count == 3046)
    #expect(try tableContents(folder.file("b/chats-5.db")) == a)
    let other = try chatdb(
      "generate", "--data-dir", folder.file("c"), "--user", "5", "--contacts", "20", "--messages", "3000", "--seed",
      "10")
    #expect(other.status == 0)
    #expect(try tableContents(folder.file("c/chats-5.db")) != a)
  }

  @Test func generateNDJSONMatchesWhatItWritesIntoAFile() throws {
    let folder = try TemporaryFolder()
    let ndjson = folder.file("h.ndjson")
    let run = try chatdb(
      "generate", "--user", "2", "--contacts", "10", "--messages", "500", "--format", "ndjson", "-o", ndjson)
    #expect(run.status == 0, "\(run.stderr)")
    #expect(try chatdb("import", "--data-dir", folder.file("x"), "--user", "2", ndjson).status == 0)
    #expect(
      try chatdb("generate", "--data-dir", folder.file("y"), "--user", "2", "--contacts", "10", "--messages", "500")
        .status == 0)
    #expect(try tableContents(folder.file("x/chats-2.db")) == tableContents(folder.file("y/chats-2.db")))
  }

  @Test func aFleetMakesOneFilePerUser() throws {
    let folder = try TemporaryFolder()
    let run = try chatdb(
      "generate", "--data-dir", folder.path, "--users", "3", "--contacts", "5", "--messages", "100", "--json")
    #expect(run.status == 0, "\(run.stderr)")
    #expect((try jsonObject(run.stdout)["files"] as? [Any])?.count == 3)
    #expect(try StoreLocation.databaseFiles(in: folder.path).count == 3)
  }

  @Test func exportThenImportRoundTripsThroughTheCommands() throws {
    let folder = try TemporaryFolder()
    #expect(
      try chatdb("generate", "--data-dir", folder.path, "--user", "1", "--contacts", "30", "--messages", "4000").status
        == 0)
    let export = folder.file("out/h.ndjson.zst")
    try FileManager.default.createDirectory(atPath: folder.file("out"), withIntermediateDirectories: true)
    let exported = try chatdb("export", "--data-dir", folder.path, "--user", "1", "-o", export, "--json")
    #expect(exported.status == 0, "\(exported.stderr)")
    let result = try fileResult(exported)
    #expect(result["messages"] as? Int == 4000)
    #expect((result["bytesOut"] as? Int ?? 0) > 0)
    #expect(FileSystem.permissions(atPath: export) == 0o600)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: folder.file("out")) == ["h.ndjson.zst"],
      "no temporary file left")

    let back = try chatdb("import", "--data-dir", folder.file("restored"), "--user", "1", export, "--json")
    #expect(back.status == 0, "\(back.stderr)")
    #expect(try tableContents(folder.file("restored/chats-1.db")) == tableContents(folder.file("chats-1.db")))
    let again = try fileResult(
      try chatdb("import", "--data-dir", folder.file("restored"), "--user", "1", export, "--json"))
    #expect(again["messages"] as? Int == 0)
    #expect(again["unchanged"] as? Int == again["records"] as? Int)

    // Into a new file of any name, by path and from standard input alike: the owner is
    // the export's header's (standard input is read once, its header looked at first).
    let chatdbPath = binaryDirectory.appendingPathComponent("chatdb").path
    for (name, command) in [
      ("by-path.db", #"exec "$0" import --db "$1" "$2" --json"#),
      ("from-stdin.db", #"exec "$0" import --db "$1" - --json < "$2""#),
    ] {
      let db = folder.file(name)
      let imported = try run("/bin/sh", ["-c", command, chatdbPath, db, export])
      #expect(imported.status == 0, "\(name): \(imported.stderr)")
      #expect(try fileResult(imported)["owner"] as? Int == 1, "\(name)")
      #expect(try tableContents(db) == tableContents(folder.file("chats-1.db")), "\(name)")
    }
  }

  @Test func aBadRecordIsOneLineNamingFileLineAndFieldWithExit65() throws {
    let folder = try TemporaryFolder()
    let file = folder.file("bad.ndjson")
    try """
    {"type":"user","id":1,"name":"Me"}
    {"type":"user","id":2,"name":"You"}
    {"type":"message","id":10,"fromUserId":2,"toUserId":1,"content":"hi","status":"SENDING","createdAt":"2026-01-01"}

    """.write(toFile: file, atomically: true, encoding: .utf8)
    let run = try chatdb("import", "--data-dir", folder.path, "--user", "1", file)
    #expect(run.status == 65)
    #expect(
      run.stderr
        == "Error: \(file):3: field 'status': 'SENDING' is not one of SYNCED, DELIVERED, READ (nothing was imported)\n")
    // The file this import created held nothing of value: it is gone (issue 9, item 8).
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["bad.ndjson"])
  }

  @Test func aTruncatedExportIsRefusedAndTheFileUntouched() throws {
    let folder = try TemporaryFolder()
    #expect(try chatdb("generate", "--data-dir", folder.path, "--user", "1", "--messages", "3000").status == 0)
    let export = folder.file("h.ndjson.zst")
    #expect(try chatdb("export", "--data-dir", folder.path, "--user", "1", "-o", export).status == 0)
    let bytes = try Data(contentsOf: URL(fileURLWithPath: export))
    try bytes.prefix(bytes.count * 2 / 3).write(to: URL(fileURLWithPath: export))
    let run = try chatdb("import", "--data-dir", folder.file("t"), "--user", "1", export)
    #expect(run.status == 65)
    #expect(run.stderr.hasPrefix("Error: \(export): truncated zstd stream"), "\(run.stderr)")
    #expect(!FileSystem.exists(folder.file("t/chats-1.db")))
    #expect(
      ((try? FileManager.default.contentsOfDirectory(atPath: folder.file("t"))) ?? []).isEmpty, "no temporary file left"
    )
  }

  /// A new file is imported in one pass into a temporary file beside it: a byte damaged
  /// in the middle of the export (caught by the zstd checksum at the end) leaves nothing,
  /// and a good export ends as the file, with no companion of the temporary one left.
  @Test func aNewFileIsImportedInOnePassAndOnlyAWholeExportLands() throws {
    let folder = try TemporaryFolder()
    #expect(
      try chatdb("generate", "--data-dir", folder.path, "--user", "1", "--contacts", "20", "--messages", "20000").status
        == 0)
    let export = folder.file("h.ndjson.zst")
    #expect(try chatdb("export", "--data-dir", folder.path, "--user", "1", "-o", export).status == 0)
    var bytes = try Data(contentsOf: URL(fileURLWithPath: export))
    let damaged = folder.file("damaged.ndjson.zst")
    bytes[bytes.count / 2] ^= 0x5A
    try bytes.write(to: URL(fileURLWithPath: damaged))
    try FileManager.default.createDirectory(atPath: folder.file("new"), withIntermediateDirectories: true)
    let refused = try chatdb("import", "--data-dir", folder.file("new"), "--user", "1", damaged)
    #expect(refused.status == 65, "\(refused.stderr)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file("new")).isEmpty, "nothing left behind")
    // Into a file that exists the whole-file check still comes first: untouched.
    let before = try tableContents(folder.file("chats-1.db"))
    #expect(try chatdb("import", "--data-dir", folder.path, "--user", "1", damaged).status == 65)
    #expect(try tableContents(folder.file("chats-1.db")) == before)

    let landed = try chatdb("import", "--data-dir", folder.file("new"), "--user", "1", export, "--json")
    #expect(landed.status == 0, "\(landed.stderr)")
    #expect(try fileResult(landed)["created"] as? Bool == true)
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file("new")) == ["chats-1.db"])
    #expect(try tableContents(folder.file("new/chats-1.db")) == before)
    #expect(FileSystem.permissions(atPath: folder.file("new/chats-1.db")) == 0o600)
    #expect(try chatdb("check", "--data-dir", folder.file("new"), "--user", "1").status == 0)
    // Another user's export is refused before anything is made.
    let other = try chatdb("import", "--data-dir", folder.file("other"), "--user", "2", export)
    #expect(other.status == 65 && other.stderr.contains("belongs to user 1"), "\(other.stderr)")
  }

  @Test func importRefusesAnOlderSchema() throws {
    let folder = try TemporaryFolder()
    #expect(try chatdb("migrate", "--data-dir", folder.path, "--user", "1", "--to", "2").status == 0)
    let file = folder.file("x.ndjson")
    try #"{"type":"user","id":1,"name":"Me"}"#.write(toFile: file, atomically: true, encoding: .utf8)
    let run = try chatdb("import", "--data-dir", folder.path, "--user", "1", file)
    #expect(run.status == 15)
    #expect(run.stderr.contains("run 'chatdb migrate'"), "\(run.stderr)")
  }
}

@Suite(.ownThreads) struct HostileInputTests {
  @Test func anOutputThatIsNotARegularFileIsRefusedNotReplaced() throws {
    let folder = try TemporaryFolder()
    #expect(try chatdb("migrate", "--data-dir", folder.path, "--user", "1").status == 0)
    let target = folder.file("out.ndjson.zst")
    try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
    let run = try chatdb("export", "--data-dir", folder.path, "--user", "1", "-o", target)
    #expect(run.status == 74)
    #expect(run.stderr.contains("is not a regular file"), "\(run.stderr)")
    var isFolder: ObjCBool = false
    #expect(FileManager.default.fileExists(atPath: target, isDirectory: &isFolder) && isFolder.boolValue)
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).allSatisfy { !$0.contains(".tmp-") })
  }

  @Test func aDanglingLinkInTheDataFolderIsNotFollowedOutOfIt() throws {
    let folder = try TemporaryFolder()
    let outside = folder.file("outside.db")
    try FileManager.default.createDirectory(atPath: folder.file("data"), withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(atPath: folder.file("data/chats-8.db"), withDestinationPath: outside)
    #expect(try chatdb("migrate", "--data-dir", folder.file("data"), "--all").status == 0)
    #expect(!FileSystem.exists(outside))
  }

  @Test(arguments: [
    ["--messages", "9223372036854775807"], ["--contacts", "100000000000"], ["--users", "9223372036854775807"],
    ["--pending", "4611686018427387904"],
  ])
  func absurdGeneratorSizesAreUsageErrors(arguments: [String]) throws {
    let folder = try TemporaryFolder()
    let run = try chatdb(
      ["generate", "--data-dir", folder.path] + (arguments[0] == "--users" ? [] : ["--user", "1"]) + arguments)
    #expect(run.status == 64, "\(run.stderr)")
  }

  @Test func rejectsMustNotOverwriteTheInput() throws {
    let folder = try TemporaryFolder()
    let input = folder.file("in.ndjson")
    try #"{"type":"user","id":1,"name":"Me"}"#.write(toFile: input, atomically: true, encoding: .utf8)
    let run = try chatdb(
      "import", "--data-dir", folder.path, "--user", "1", "--skip-bad-records", "--rejects", input, input)
    #expect(run.status == 64)
    #expect(try String(contentsOfFile: input, encoding: .utf8).contains("Me"))
  }
}
