import Foundation
import TestSupport
import Testing

@testable import ChatStore

/// `FileSystem.splitPath` over tables of edge cases and over generated paths.
@Suite(.ownThreads) struct PathTextTests {
  @Test(
    "splitPath gives POSIX dirname and basename",
    arguments: [
      ("", ".", ""), ("/", "/", ""), ("//", "/", ""), ("a", ".", "a"), ("é", ".", "é"), ("🙂", ".", "🙂"),
      (".", ".", "."), ("..", ".", ".."), ("/x", "/", "x"), ("//x", "/", "x"), ("x/", ".", "x"), ("x//", ".", "x"),
      ("/x/", "/", "x"), ("a/b", "a", "b"), ("a//b", "a", "b"), ("a/b/", "a", "b"), ("a//b//c", "a/b", "c"),
      ("./x", ".", "x"), ("../x", "..", "x"), ("a/..", "a", ".."), ("a/.", "a", "."), ("/a/b/c.db", "/a/b", "c.db"),
      ("données/日本/chats-1.db", "données/日本", "chats-1.db"), ("x y/z w", "x y", "z w"),
    ])
  func table(_ path: String, _ folder: String, _ name: String) {
    let split = FileSystem.splitPath(path)
    #expect(split.folder == folder)
    #expect(split.name == name)
    #expect(FileSystem.parentFolder(of: path) == folder)
    #expect(FileSystem.lastComponent(of: path) == name)
  }

  /// Repeated slashes as one, no trailing slash (except "/" itself).
  static func normalised(_ path: String) -> String {
    var out = ""
    for character in path where !(character == "/" && out.hasSuffix("/")) { out.append(character) }
    while out.count > 1, out.hasSuffix("/") { out.removeLast() }
    return out
  }

  static let pieces = ["a", "b", "é", "日本", "🙂", ".", "..", "...", "x y", "-", "chats-1.db", "e\u{301}", "\u{10FFFF}"]

  /// Relative and absolute paths of 0 to 5 components, with doubled and trailing slashes.
  static func randomPath(_ rng: inout SplitMix64) -> String {
    var path = Int.random(in: 0..<3, using: &rng) == 0 ? "/" : ""
    let count = Int.random(in: 0...5, using: &rng)
    for index in 0..<count {
      if index > 0 { path += String(repeating: "/", count: Int.random(in: 1...3, using: &rng)) }
      path += pieces.randomElement(using: &rng)!
    }
    if Int.random(in: 0..<4, using: &rng) == 0 {
      path += String(repeating: "/", count: Int.random(in: 1...3, using: &rng))
    }
    return path
  }

  @Test("splitPath keeps its invariants on generated paths", arguments: [UInt64(1), 2, 3, 4])
  func generated(seed: UInt64) {
    var rng = SplitMix64(state: seed)
    var paths = ["", "/", ".", "..", "a", "é", "🙂", "x/", "/x"] + Self.pieces
    for _ in 0..<2_000 { paths.append(Self.randomPath(&rng)) }
    for path in paths {
      let (folder, name) = FileSystem.splitPath(path)
      let normal = Self.normalised(path)
      #expect(!folder.isEmpty, "\(path)")
      #expect(!name.contains("/"), "\(path)")
      #expect(folder == "/" || !folder.hasSuffix("/"), "\(path)")
      #expect(folder.hasPrefix("/") == path.hasPrefix("/"), "absolute stays absolute: \(path)")
      if normal == "/" || normal.isEmpty {
        #expect(name.isEmpty, "\(path)")
      } else if !normal.contains("/") {
        #expect(folder == "." && name == normal, "\(path)")
      } else {
        #expect(FileSystem.joinPath(folder, name) == normal, "\(path)")
      }
      // Walking up always ends at "/" or ".", in fewer steps than the path has bytes.
      var probe = path
      var steps = 0
      while probe != "/" && probe != "." && steps <= path.utf8.count {
        probe = FileSystem.parentFolder(of: probe)
        steps += 1
      }
      #expect(probe == "/" || probe == ".", "\(path)")
    }
  }

  @Test("DiskSpace.of walks up from a missing one-character or dotted path without trapping")
  func diskSpaceOfMissingPaths() throws {
    for path in ["x", "é", "🙂", "./missing/x", "missing/../y", "/missing-\(UUID().uuidString)/z/"] {
      #expect(try DiskSpace.of(path).total > 0, "\(path)")
    }
  }
}
