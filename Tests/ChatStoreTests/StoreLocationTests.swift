import Foundation
import TestSupport
import Testing

@testable import ChatStore

@Suite(.ownThreads) struct StoreLocationTests {
  @Test(
    "parseUserID refuses anything but a positive plain-decimal Int64",
    arguments: [
      "../x", "1;drop", "-5", "007x", "007", "", " 5", "5 ", "+5", "0", "00", "9223372036854775808",
      "18446744073709551616", "99999999999999999999", "1e3", "0x10", "1.0", "1_000", "٣", "５", "5\n", "5\u{0}",
      "/5", "5/..", "¹",
    ])
  func parseUserIDRefuses(_ text: String) {
    #expect(StoreLocation.parseUserID(text) == nil)
  }

  @Test(
    "parseUserID accepts plain decimal ids",
    arguments: [
      ("1", Int64(1)), ("42", 42), ("10", 10), ("9223372036854775807", .max),
      ("1000000000000000000", 1_000_000_000_000_000_000),
    ])
  func parseUserIDAccepts(_ text: String, _ value: Int64) {
    #expect(StoreLocation.parseUserID(text) == value)
  }

  @Test("path(forUser:in:) names chats-<id>.db directly inside the folder", arguments: [Int64(1), 42, .max])
  func pathStaysInside(_ id: Int64) {
    for folder in ["/data", "/data/", "relative/dir", "/tmp/with space/ü"] {
      let path = StoreLocation.path(forUser: id, in: folder)
      let url = URL(fileURLWithPath: path)
      #expect(url.lastPathComponent == "chats-\(id).db")
      #expect(url.deletingLastPathComponent().standardized.path == URL(fileURLWithPath: folder).standardized.path)
      #expect(!path.contains(".."))
      #expect(StoreLocation.userID(fromFileName: path) == id)
    }
    #expect(StoreLocation.fileName(forUser: id) == "chats-\(id).db")
  }

  @Test(
    "userID(fromFileName:) reads chats-<id>.db only",
    arguments: [
      ("chats-1.db", Int64?(1)), ("/a/b/chats-42.db", 42), ("chats-9223372036854775807.db", .max),
      ("chats-0.db", nil), ("chats-01.db", nil), ("chats-x.db", nil), ("chats-.db", nil), ("chats.db", nil),
      ("chats-1.db-wal", nil), ("chats-1.db.bak-v1", nil), ("chats-1.sqlite", nil), ("Chats-1.db", nil),
      ("chats--1.db", nil), ("legacy.db", nil), ("chats-9223372036854775808.db", nil),
    ])
  func userIDFromFileName(_ name: String, _ id: Int64?) {
    #expect(StoreLocation.userID(fromFileName: name) == id)
  }

  @Test("databaseFiles(in:) lists chats-<id>.db files by numeric id and nothing else")
  func databaseFiles() throws {
    try withTemporaryDirectory { dir in
      let names = [
        "chats-10.db", "chats-9.db", "chats-1.db", "chats-100.db", "chats-2.db",
        "chats-x.db", "chats-1.db-wal", "chats-1.db-shm", "chats-1.db.bak-v1", "chats-0.db", "chats-01.db",
        "legacy.db", "notes.txt", ".chats-3.db",
      ]
      for name in names { _ = FileManager.default.createFile(atPath: dir + "/" + name, contents: Data()) }
      let files = try StoreLocation.databaseFiles(in: dir)
      #expect(
        files == ["chats-1.db", "chats-2.db", "chats-9.db", "chats-10.db", "chats-100.db"].map { dir + "/" + $0 })
    }
  }

  @Test("databaseFiles(in:) of a missing folder is a not-found error naming it")
  func databaseFilesMissing() throws {
    try withTemporaryDirectory { dir in
      let missing = dir + "/nope"
      let error = expectStoreError(.notFound) { _ = try StoreLocation.databaseFiles(in: missing) }
      #expect(error?.message.contains(missing) == true)
      #expect(error?.path == missing)
    }
  }

  @Test(
    "defaultDataDirectory: CHATDB_DATA_DIR, then XDG_DATA_HOME/chatdb, then HOME/.local/share/chatdb",
    arguments: [
      (["CHATDB_DATA_DIR": "/d", "XDG_DATA_HOME": "/x", "HOME": "/h"], "/d"),
      (["CHATDB_DATA_DIR": "", "XDG_DATA_HOME": "/x", "HOME": "/h"], "/x/chatdb"),
      (["XDG_DATA_HOME": "/x", "HOME": "/h"], "/x/chatdb"),
      (["XDG_DATA_HOME": "", "HOME": "/h"], "/h/.local/share/chatdb"),
      (["HOME": "/h"], "/h/.local/share/chatdb"),
      (["CHATDB_DATA_DIR": "/d"], "/d"),
    ])
  func defaultDataDirectory(_ environment: [String: String], _ expected: String) {
    #expect(StoreLocation.defaultDataDirectory(environment: environment) == expected)
  }

  @Test("defaultDataDirectory with no HOME falls back to the user's home folder")
  func defaultDataDirectoryNoHome() {
    let dir = StoreLocation.defaultDataDirectory(environment: [:])
    #expect(dir.hasSuffix("/.local/share/chatdb"))
    #expect(dir.hasPrefix("/"))
  }

  @Test("DiskSpace.of the temporary folder reports available > 0 and total ≥ available")
  func diskSpace() throws {
    try withTemporaryDirectory { dir in
      let space = try DiskSpace.of(dir)
      #expect(space.available > 0)
      #expect(space.total >= space.available)
    }
  }

  @Test("DiskSpace.of a missing path measures its nearest existing parent")
  func diskSpaceMissing() throws {
    try withTemporaryDirectory { dir in
      let missing = dir + "/a/b/c/chats-1.db"
      let space = try DiskSpace.of(missing)
      let parent = try DiskSpace.of(dir)
      #expect(space.total == parent.total)
      #expect(space.available > 0)
      #expect(!FileSystem.exists(dir + "/a"), "measuring creates nothing")
    }
  }

  @Test("FileSystem helpers: private file and folder, size, permissions, rename")
  func fileSystem() throws {
    try withTemporaryDirectory { dir in
      let folder = dir + "/x/y"
      try FileSystem.createPrivateDirectory(atPath: folder)
      #expect(FileSystem.permissions(atPath: folder) == 0o700)
      let file = folder + "/f"
      try FileSystem.createPrivateFile(atPath: file)
      #expect(FileSystem.permissions(atPath: file) == 0o600)
      #expect(FileSystem.size(atPath: file) == 0)
      #expect(FileSystem.size(atPath: folder + "/missing") == nil)
      #expect(FileSystem.permissions(atPath: folder + "/missing") == nil)
      try FileSystem.rename(file, to: folder + "/g")
      #expect(!FileSystem.exists(file))
      #expect(FileSystem.exists(folder + "/g"))
      let error = expectStoreError(.notFound) { try FileSystem.rename(folder + "/missing", to: folder + "/h") }
      #expect(error?.message.contains(folder + "/h") == true)
    }
  }
}
