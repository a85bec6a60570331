import Foundation
import TestSupport
import Testing

@testable import ChatStore

@Suite(.ownThreads) struct FileSystemTests {
  /// Paths as a person types them, and the folder that holds each.
  static let folders: [(String, String)] = [
    ("x", "."), ("ab", "."), ("chats-1.db", "."), ("/a", "/"), ("/", "/"), ("a/b", "a"), ("./x", "."),
    ("/data/chats-1.db", "/data"), ("data/", "."), ("/data//", "/"), ("a//b", "a"), ("", "."),
  ]

  @Test("folder(of:) never traps, even on a one-character path", arguments: folders)
  func folderOf(path: String, folder: String) {
    #expect(FileSystem.parentFolder(of: path) == folder)
  }

  @Test("Free space of a missing one-character relative path is measured in the current folder")
  func diskSpaceOfABareName() throws {
    let here = try DiskSpace.of(".")
    let space = try DiskSpace.of("q")
    #expect(space.total == here.total)
  }

  @Test("createNewPrivateFile makes an empty 0600 file and refuses one that exists")
  func createNewPrivateFile() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/new.db"
      try FileSystem.createNewPrivateFile(atPath: path)
      #expect(FileSystem.size(atPath: path) == 0)
      #expect(FileSystem.permissions(atPath: path) == 0o600)
      _ = expectStoreError(.badInput) { try FileSystem.createNewPrivateFile(atPath: path) }
    }
  }
}
