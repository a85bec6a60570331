import ChatRelay
import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatSync

#if canImport(Glibc)
  import Glibc
#endif

/// ``MediaTransfer`` (tus uploads, ranged downloads) against a real relay on loopback:
/// chunk by chunk, resumed after a stop part-way, and a download whose bytes do not hash
/// to the expected SHA-256 dropped.
@Suite(.serialized, .ownThreads) struct MediaTransferTests {
  /// Runs `body` with a relay (in this process, its own database) with user 1, its URL and
  /// token, and a scratch folder holding ``content`` as `photo.bin`; then stops the relay.
  static func withRelay(_ body: (_ base: URL, _ token: String, _ folder: String) async throws -> Void) async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("media-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    try Data(content).write(to: URL(fileURLWithPath: folder + "/photo.bin"))
    let token = try RelayStore(path: folder + "/relay.db").addUser(id: 1, name: "Ada", avatarURL: nil)
    let relay = try Relay(databasePath: folder + "/relay.db")
    let server = try RelayServer(port: 0, handlers: relay.handlers())
    relay.attach(server)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      server.run()
      done.signal()
    }
    defer {
      server.stop()
      done.wait()
    }
    try await body(URL(string: "http://127.0.0.1:\(server.port)")!, token, folder)
  }

  /// 300,000 bytes that are not all alike.
  static let content: [UInt8] = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }

  @Test func aFileGoesUpInChunksResumesAfterAStopAndComesBackWhole() async throws {
    try await Self.withRelay { base, token, folder in
      let file = folder + "/photo.bin"
      let digest = SHA256.digest(Self.content)
      let transfer = MediaTransfer(http: .libwebsockets(base: base, token: token), chunkSize: 64 * 1024)

      let url = try await transfer.create(length: Int64(Self.content.count), sha256: digest, mime: "image/jpeg")
      // A run that stops after two chunks (the caller's task ends: a kill, as far as the relay knows).
      let seen = Locked<[Int64]>([])
      let partial = MediaTransfer(
        http: HTTPTransport { call in
          if call.method == "PATCH" && seen.withLock({ $0.count }) >= 2 { throw CancellationError() }
          return try await HTTPTransport.libwebsockets(base: base, token: token).send(call)
        }, chunkSize: 64 * 1024)
      await #expect(throws: MediaTransfer.Failure.self) {
        try await partial.send(file: file, to: url) { offset in seen.withLock { $0.append(offset) } }
      }
      #expect(seen.withLock { $0 } == [65_536, 131_072])
      #expect(try await transfer.offset(of: url)?.offset == 131_072)

      // The next run goes on from the relay's offset: the rest, and the media id.
      var offsets: [Int64] = []
      let media = try await transfer.send(file: file, to: url) { offsets.append($0) }
      #expect(offsets == [196_608, 262_144, 300_000])
      #expect(try await transfer.offset(of: url)?.media == media)

      // Down again, into a .part first; a stopped download resumes from what it has.
      let copy = folder + "/copy.bin"
      try Data(Self.content[0..<100_000]).write(to: URL(fileURLWithPath: copy + ".part"))
      var got: [Int64] = []
      try await transfer.download(media: media, size: Int64(Self.content.count), sha256: digest, to: copy) {
        got.append($0)
      }
      #expect(got.first == 165_536 && got.last == 300_000)
      #expect(try Array(Data(contentsOf: URL(fileURLWithPath: copy))) == Self.content)
      #expect(!FileManager.default.fileExists(atPath: copy + ".part"))

      // Bytes that do not hash as expected are dropped, the file not made.
      let wrong = folder + "/wrong.bin"
      await #expect(throws: MediaTransfer.Failure.self) {
        try await transfer.download(
          media: media, size: Int64(Self.content.count), sha256: SHA256.digest([1, 2, 3]), to: wrong)
      }
      #expect(
        !FileManager.default.fileExists(atPath: wrong) && !FileManager.default.fileExists(atPath: wrong + ".part"))
    }
  }

  @Test func anUploadTheRelayDoesNotHaveAndAFileTooLargeAreRefusedForGood() async throws {
    try await Self.withRelay { base, token, folder in
      let transfer = MediaTransfer(http: .libwebsockets(base: base, token: token))
      let file = folder + "/photo.bin"
      await #expect {
        try await transfer.send(file: file, to: "/v2/uploads/0123456789abcdef0123456789abcdef")
      } throws: { error in
        (error as? MediaTransfer.Failure)?.retryable == false
      }
      await #expect {
        try await transfer.create(length: 1 << 40, sha256: SHA256.digest(Self.content), mime: "video/mp4")
      } throws: { error in
        guard let failure = error as? MediaTransfer.Failure else { return false }
        return !failure.retryable && failure.description.contains("413 too_large")
      }
    }
  }
}
