import Foundation
import TestSupport
import Testing

@testable import ChatStore

@Suite(.ownThreads) struct MigrationSetTests {
  /// The package root: Tests/ChatStoreTests/MigrationSetTests.swift, up three levels.
  static let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  /// `Migrations/*.sql` on disk, sorted by name, with their text.
  static func filesOnDisk() throws -> [(name: String, text: String)] {
    let folder = packageRoot.appendingPathComponent("Migrations")
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }
      .sorted()
    return try names.map { ($0, try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)) }
  }

  @Test("The shipped set has the files on disk, in order, by name and checksum")
  func shippedMatchesDisk() throws {
    let disk = try Self.filesOnDisk()
    try #require(!disk.isEmpty, "no Migrations/*.sql under \(Self.packageRoot.path)")
    #expect(Migration.shipped.map(\.fileName) == disk.map(\.name))
    for (migration, file) in zip(Migration.shipped, disk) {
      #expect(migration.checksum == (try Migration(fileName: file.name, sql: file.text)).checksum, "\(file.name)")
    }
  }

  /// The embedded text is documented as "the file's text". The build script puts a
  /// newline before the closing `"""#`, which a Swift multi-line literal drops, so a file
  /// that ends in a newline is embedded without it.
  @Test("The shipped SQL is each file's text exactly")
  func shippedTextMatchesDisk() throws {
    let disk = try Self.filesOnDisk()
    for (migration, file) in zip(Migration.shipped, disk) {
      #expect(
        migration.sql == file.text,
        "\(file.name): embedded \(migration.sql.utf8.count) bytes, file \(file.text.utf8.count) bytes")
    }
  }

  @Test("Versions run 1...n without gaps and match the file names")
  func versions() {
    #expect(Migration.shipped.map(\.version) == Array(1...Migration.shipped.count))
    for migration in Migration.shipped {
      #expect(migration.fileName == String(format: "%04d_%@.sql", migration.version, migration.name))
      #expect(migration.checksum.count == 64)
    }
    #expect(Migrator().latestVersion == Migration.shipped.count)
    #expect(Set(Migration.shipped.map(\.checksum)).count == Migration.shipped.count)
  }

  @Test("Every shipped migration applies in turn to an empty in-memory database")
  func appliesInOrder() throws {
    let db = try Database(path: ":memory:")
    let applied = try Migrator().apply(Migration.shipped, to: db, owner: 1)
    #expect(applied == Migration.shipped)
    #expect(try db.int64("PRAGMA user_version") == Int64(Migration.shipped.count))
    #expect(try db.int64("SELECT count(*) FROM pragma_foreign_key_check") == 0)
  }

  static let base = "-- header\nCREATE TABLE a (x);\n\nINSERT INTO a VALUES (1);\n"

  @Test(
    "Normalising ignores line endings, trailing spaces, blank lines and whole-line comments",
    arguments: [
      "-- header\r\nCREATE TABLE a (x);\r\n\r\nINSERT INTO a VALUES (1);\r\n",
      "CREATE TABLE a (x);   \nINSERT INTO a VALUES (1);\t\n",
      "\n\n-- a different comment\n   -- an indented comment\nCREATE TABLE a (x);\n\n\n\nINSERT INTO a VALUES (1);",
      "CREATE TABLE a (x);\n  \t \nINSERT INTO a VALUES (1);\n-- trailing comment\n",
    ])
  func normaliseIgnores(_ variant: String) throws {
    #expect(Migration.normalise(variant) == Migration.normalise(Self.base))
    #expect(Migration.normalise(variant) == "CREATE TABLE a (x);\nINSERT INTO a VALUES (1);")
    let a = try Migration(fileName: "0001_a.sql", sql: Self.base)
    let b = try Migration(fileName: "0001_a.sql", sql: variant)
    #expect(a.checksum == b.checksum)
  }

  @Test(
    "A changed statement changes the checksum",
    arguments: [
      "-- header\nCREATE TABLE a (y);\n\nINSERT INTO a VALUES (1);\n",
      "-- header\nCREATE TABLE a (x);\n\nINSERT INTO a VALUES (2);\n",
      "-- header\nCREATE TABLE a (x);\n\nINSERT INTO a VALUES (1); -- inline comments are SQL\n",
      "-- header\n  CREATE TABLE a (x);\n\nINSERT INTO a VALUES (1);\n",
      "-- header\nCREATE TABLE a (x);\n",
    ])
  func checksumChanges(_ variant: String) throws {
    let a = try Migration(fileName: "0001_a.sql", sql: Self.base)
    let b = try Migration(fileName: "0001_a.sql", sql: variant)
    #expect(a.checksum != b.checksum)
  }

  @Test("A file name is parsed into version and name")
  func parsesFileName() throws {
    let m = try Migration(fileName: "0042_add_things.sql", sql: "SELECT 1;")
    #expect(m.version == 42)
    #expect(m.name == "add_things")
    #expect(m.fileName == "0042_add_things.sql")
    #expect(m.sql == "SELECT 1;")
  }

  @Test(
    "A bad file name is refused",
    arguments: [
      "1_x.sql", "0001.sql", "abcd_x.sql", "0001_x.txt", "0001_.sql", "0000_x.sql", "00001_x.sql", "_x.sql",
      "0001_x.sql.bak", "+001_x.sql", "-001_x.sql", " 001_x.sql",
    ])
  func badFileName(_ name: String) {
    let error = expectStoreError(.schemaMismatch) { _ = try Migration(fileName: name, sql: "SELECT 1;") }
    #expect(error?.message.contains(name) == true)
  }

  static func migration(_ version: Int, _ name: String = "m") throws -> Migration {
    try Migration(fileName: String(format: "%04d_%@.sql", version, name), sql: "SELECT \(version);")
  }

  @Test("validated sorts a complete set")
  func validatedSorts() throws {
    let set = try [3, 1, 2].map { try Self.migration($0) }
    #expect(try Migration.validated(set).map(\.version) == [1, 2, 3])
    #expect(try Migration.validated([]).isEmpty)
  }

  @Test(
    "validated refuses gaps, repeats and a set that does not start at 1",
    arguments: [[1, 3], [1, 2, 2], [2, 3], [1, 1], [2]])
  func validatedRefuses(_ versions: [Int]) throws {
    let set = try versions.enumerated().map { try Self.migration($0.element, "m\($0.offset)") }
    _ = expectStoreError(.schemaMismatch) { _ = try Migration.validated(set) }
  }

  @Test(
    "SHA-256 known answers (FIPS 180-4)",
    arguments: [
      ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
      ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
      (
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
      ),
    ])
  func sha256(_ input: String, _ digest: String) {
    #expect(SHA256.hex(Array(input.utf8)) == digest)
  }

  @Test("SHA-256 of one million 'a'")
  func sha256Million() {
    #expect(
      SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
        == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
  }

  @Test("SHA-256 around the padding boundaries (55, 56, 63, 64 bytes) differs per length and is stable")
  func sha256Boundaries() {
    let digests = [55, 56, 63, 64, 65].map { SHA256.hex([UInt8](repeating: 0x61, count: $0)) }
    #expect(Set(digests).count == digests.count)
    // 64 × "a", a published vector.
    #expect(digests[3] == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
  }
}
