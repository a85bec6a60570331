import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

#if canImport(Glibc)
  import Glibc
#endif

/// The temporary-then-rename output file behind `chatdb export`.
@Suite(.ownThreads) struct OutputFileTests {
  static func write(_ text: String, to file: OutputFile) {
    let bytes = Array(text.utf8)
    #expect(bytes.withUnsafeBytes { Glibc.write(file.fileDescriptor, $0.baseAddress, $0.count) } == bytes.count)
  }

  @Test func commitPutsTheFileInPlaceWithMode0600() throws {
    let folder = try HistoryFolder()
    let path = folder.file("out.ndjson.zst")
    do {
      let file = try OutputFile(path: path)
      Self.write("hello", to: file)
      try file.commit()
    }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "hello")
    #expect(FileSystem.permissions(atPath: path) == 0o600)
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["out.ndjson.zst"])
  }

  @Test func aFailedRenameIsReportedAndLeavesNoTemporaryFile() throws {
    let folder = try HistoryFolder()
    let path = folder.file("out.ndjson.zst")
    do {
      let file = try OutputFile(path: path)
      Self.write("hello", to: file)
      // Something takes the destination while the export runs: a non-empty folder,
      // which rename(2) cannot replace.
      try FileSystem.createPrivateDirectory(atPath: path)
      #expect(FileManager.default.createFile(atPath: path + "/keep", contents: Data()))
      #expect(throws: StoreError.self) { try file.commit() }
      #expect(FileSystem.exists(file.temporaryPath), "still there until the file is released")
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["out.ndjson.zst"])
    #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["keep"])
  }
}
