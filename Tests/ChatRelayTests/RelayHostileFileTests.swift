import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `chat-relay` on hostile files named by `--db` (issue 14): the three fixes that
/// `scripts/torture.d/hostile_relay.py` found, pinned by the built binary. Every run is
/// bounded (a hang is killed and fails the test); nothing here is about time.
@Suite(.serialized, .ownThreads) struct RelayHostileFileTests {
  /// Every command that opens the file (`serve` refuses before it listens).
  static let commands: [[String]] = [
    ["user", "list"], ["push", "list"], ["user", "add", "--id", "99", "--name", "New"],
    ["user", "remove", "--id", "1"],
    ["user", "token", "--id", "1"], ["serve", "--port", "0"], ["device", "list", "--user", "1"],
    ["device", "add", "--user", "1", "--name", "laptop"], ["device", "remove", "--user", "1", "--device", "1"],
  ]
  static let readers: [[String]] = [["user", "list"], ["push", "list"], ["device", "list", "--user", "1"]]

  static func run(_ command: [String], db: String) throws -> Output {
    try runBounded(relayPath, command + ["--db", db], seconds: 60)
  }

  /// A pipe would block `open(2)` for ever; a socket or a device is no database. Each is
  /// refused with 65 and one line naming it, and left as it was (nothing created beside).
  @Test(arguments: ["fifo", "socket", "device"], commands)
  func aPipeSocketOrDeviceIsRefusedWithoutBlocking(_ kind: String, _ command: [String]) throws {
    let folder = try Folder()
    var db = folder.path + "/relay.db"
    switch kind {
    case "fifo": #expect(mkfifo(db, 0o600) == 0)
    case "socket":
      let made = try runBounded(
        "/usr/bin/python3", ["-c", "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])", db],
        seconds: 60)
      try #require(made.status == 0, "\(made.stderr)")
    default: db = "/dev/null"
    }
    let before = try FileManager.default.contentsOfDirectory(atPath: folder.path)
    let result = try Self.run(command, db: db)
    #expect(result.status == 65, "\(kind), \(command): \(result.stderr)")
    #expect(result.stderr.hasPrefix("Error: \(db) is not a regular file"), "\(result.stderr)")
    #expect(result.stderr.split(separator: "\n").count == 1)
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == before)
  }

  /// The `-wal` of another SQLite database beside a good `relay.db`: SQLite would replay
  /// it into the file on a read-write open's first checkpoint, before the identity check
  /// could refuse it. The file stays byte for byte, and the command fails with 65 or 11.
  @Test(arguments: commands)
  func aWalFromAnotherDatabaseIsNeverCheckpointedIntoTheFile(_ command: [String]) throws {
    let folder = try Folder()
    let users = try RelayUsers(folder)
    let wal = try foreignWAL(in: folder)
    try wal.write(to: URL(fileURLWithPath: users.db + "-wal"))
    let before = try Data(contentsOf: URL(fileURLWithPath: users.db))
    let result = try Self.run(command, db: users.db)
    #expect([65, 11].contains(result.status), "\(command): \(result.status) \(result.stderr)")
    #expect(result.stderr.hasPrefix("Error: ") && result.stderr.contains(users.db), "\(result.stderr)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: users.db)) == before, "\(command) changed relay.db")
  }

  /// `user list` and `push list` open read-only: an empty file is no relay (66) and stays
  /// empty, with nothing created beside it.
  @Test(arguments: readers)
  func listingAnEmptyFileIs66AndLeavesItEmpty(_ command: [String]) throws {
    let folder = try Folder()
    let db = folder.path + "/relay.db"
    #expect(FileManager.default.createFile(atPath: db, contents: nil))
    let result = try Self.run(command, db: db)
    #expect(result.status == 66, "\(command): \(result.stderr)")
    #expect(result.stderr.hasPrefix("Error: ") && result.stderr.contains(db), "\(result.stderr)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["relay.db"])
    #expect(try Data(contentsOf: URL(fileURLWithPath: db)).isEmpty)
  }

  /// A garbage `-wal` beside a good file: listing neither deletes nor rewrites it (a
  /// read-write open would have), and the file itself is unchanged.
  @Test(arguments: readers)
  func listingLeavesAGarbageWalInPlace(_ command: [String]) throws {
    let folder = try Folder()
    let users = try RelayUsers(folder)
    let garbage = Data((0..<40_000).map { _ in UInt8.random(in: 0...255) })
    try garbage.write(to: URL(fileURLWithPath: users.db + "-wal"))
    let before = try Data(contentsOf: URL(fileURLWithPath: users.db))
    let result = try Self.run(command, db: users.db)
    #expect(result.status == 0 || result.stderr.hasPrefix("Error: "), "\(command): \(result.status) \(result.stderr)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: users.db + "-wal")) == garbage, "\(command) changed the -wal")
    #expect(try Data(contentsOf: URL(fileURLWithPath: users.db)) == before, "\(command) changed relay.db")
  }
}

// MARK: - Support

/// The `-wal` another SQLite database (not a relay file) leaves, copied while its
/// connection is open (closing would checkpoint and delete it).
func foreignWAL(in folder: Folder) throws -> Data {
  let other = folder.path + "/other.db"
  let script = """
    import sqlite3, sys
    con = sqlite3.connect(sys.argv[1])
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA wal_autocheckpoint = 0")
    con.executescript("CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(5000));")
    open(sys.argv[2], "wb").write(open(sys.argv[1] + "-wal", "rb").read())
    con.close()
    """
  let made = try runBounded("/usr/bin/python3", ["-c", script, other, other + ".wal-copy"], seconds: 60)
  try #require(made.status == 0, "\(made.stderr)")
  let wal = try Data(contentsOf: URL(fileURLWithPath: other + ".wal-copy"))
  try #require(wal.count > 4096, "the other database left no -wal")
  return wal
}
