import ChatProtocol
import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatRelay

#if canImport(Glibc)
  import Glibc
#endif

/// Uploads (tus 1.0) and media downloads (docs/protocol.md, "Media"): an outside tus
/// client (`tuspy` from PyPI, installed by scripts/test), hostile requests from
/// http.client, kill -9 in the middle of an upload, and expiry with a moved clock.
@Suite(.serialized, .ownThreads) struct RelayUploadTests {
  static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
    "interop/relay_uploads.py"
  ).path

  /// The checker under the `python3` on PATH (the one scripts/test gave `tuspy`),
  /// killed after 120 s.
  static func python(_ arguments: [String]) throws -> Output {
    try runBounded("/usr/bin/env", ["python3", script] + arguments, seconds: 120)
  }

  @Test func anOutsideTusClientUploadsInChunksAndTheUploaderDownloadsTheSameBytes() throws {
    let folder = try Folder()
    let (db, alice, _, _) = try RelayBehaviourTests.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try Self.python(["tus", String(server.port), alice])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains(#""bytes": 3158073"#), "\(result.stdout)")
  }

  @Test func hostileUploadRequestsAreRefusedAndNothingTheClientSentIsLost() throws {
    let folder = try Folder()
    let (db, alice, bob, _) = try RelayBehaviourTests.users(folder)
    let server = try Server(db: db, extra: ["--max-media-size", "4MiB"])
    defer { server.stop() }
    let result = try Self.python(["hostile", String(server.port), alice, bob, String(4 << 20)])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains(#""kept after an interrupted PATCH": 80000"#), "\(result.stdout)")
    // Nothing of an upload is left open or half-moved: the folder is the owner's alone.
    var info = stat()
    #expect(stat(db + ".media", &info) == 0 && info.st_mode & 0o777 == 0o700)
    let blobs = try FileManager.default.contentsOfDirectory(atPath: db + ".media/blobs")
    #expect(blobs.count == 2, "\(blobs)")  // the 200,000 bytes (twice uploaded) and the empty file
    for blob in blobs {
      #expect(stat(db + ".media/blobs/" + blob, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }
  }

  @Test func attachmentsTravelWithTheirMessageAndOpenTheMediaToItsPartiesOnly() throws {
    let folder = try Folder()
    let (db, alice, bob, carol) = try RelayBehaviourTests.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try Self.python(["attachments", String(server.port), alice, bob, carol])
    #expect(result.status == 0, "\(result.stderr)")
  }

  /// kill -9 of the relay in the middle of a PATCH: what reached the file is the offset
  /// after the restart, and the upload completes from there.
  @Test func anUploadResumesAfterTheRelayIsKilledMidPatch() throws {
    let folder = try Folder()
    let (db, alice, _, _) = try RelayBehaviourTests.users(folder)
    let content = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) }
    let first = try Server(db: db)
    let location = try Self.create(port: first.port, token: alice, content: content)
    // Half the declared body, and the relay dies before the rest.
    let socket = try RawClient(port: first.port)
    try socket.send(
      Array(
        ("PATCH \(location) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice)\r\nTus-Resumable: 1.0.0\r\n"
          + "Upload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: \(content.count)\r\n\r\n")
          .utf8) + content[0..<250_000])
    // The relay holds what was sent once the file has it.
    #expect(
      Self.eventually { MediaFolder.size(db + ".media/uploads/" + location.split(separator: "/").last!) == 250_000 })
    kill(first.process.processIdentifier, SIGKILL)
    first.process.waitUntilExit()
    socket.close()

    let second = try Server(db: db)
    defer { second.stop() }
    let held = try Self.head(port: second.port, token: alice, location: location)
    #expect(held.offset == 250_000)
    let done = try Self.patch(
      port: second.port, token: alice, location: location, offset: held.offset, Array(content[held.offset...]))
    #expect(done.status == 204, "\(done)")
    let media = try #require(done.headers["chat-media-id"])
    let fetched = try Self.get(port: second.port, token: alice, path: "/v2/media/\(media)")
    #expect(fetched.status == 200 && fetched.body == content)
  }

  /// Expiry (`serve --upload-expiry`): an upload left unfinished and a media no upload
  /// names any more go, files and rows, at the first sweep past their time.
  @Test func uploadsAndTheirMediaExpire() throws {
    let folder = try Folder()
    let db = folder.path + "/relay.db"
    let clock = Locked<Int64>(1_800_000_000_000)
    let relay = try Relay(
      databasePath: db, media: MediaLimits(uploadExpiryHours: 1), now: { clock.withLock { $0 } })
    try relay.store.addUser(id: 1, name: "Ada", avatarURL: nil)
    let (device, token) = try relay.store.addDevice(user: 1, name: "phone")
    _ = device
    let handlers = relay.handlers()
    func call(_ method: String, _ path: String, _ headers: [String: String], body: [UInt8] = []) -> HTTPResponse {
      var request = HTTPRequest(
        method: method, path: path,
        headers: headers.merging(["authorization": "Bearer \(token)", "tus-resumable": "1.0.0"]) { a, _ in a })
      request.exchange = HTTPExchangeID(connection: 1, sequence: Int.random(in: 1...1_000_000))
      if case .stream(let sink, _) = handlers.bodyRoute(request) {
        body.withUnsafeBytes { sink.write($0) }
      }
      // The handler's answer as the server would get it after the turn's commit.
      let response = relay.respond(to: request)
      relay.endTurn(log: { _ in })
      return response
    }
    let content = Array("a photo".utf8)
    let digest = SHA256.hex(content)
    func create() -> String {
      let created = call(
        "POST", "/v2/uploads",
        [
          "upload-length": String(content.count),
          "upload-metadata": "sha256 \(Data(digest.utf8).base64EncodedString())",
        ])
      return created.headers.first { $0.0 == "Location" }?.1 ?? ""
    }
    let finished = create()
    let unfinished = create()
    _ = call(
      "PATCH", finished, ["upload-offset": "0", "content-type": "application/offset+octet-stream"], body: content)
    _ = call(
      "PATCH", unfinished, ["upload-offset": "0", "content-type": "application/offset+octet-stream"],
      body: Array(content[0..<3]))
    let blob = db + ".media/blobs/" + digest
    #expect(MediaFolder.size(blob) == Int64(content.count))
    #expect(MediaFolder.size(db + ".media/uploads/" + unfinished.split(separator: "/").last!) == 3)

    // A message carries the media: it stays as long as the message does.
    try relay.store.addUser(id: 2, name: "Bo", avatarURL: nil)
    _ = try relay.store.post(
      from: 1, requestID: 1, to: 2, content: "", createdAt: Timestamp.string(milliseconds: clock.withLock { $0 }),
      attachments: [AttachmentPost(mediaId: 1)], now: clock.withLock { $0 })
    relay.endTurn(log: { _ in })

    // Past the hour (and the sweep's minute): both uploads and the unfinished one's file go;
    // the media stays for the message.
    clock.withLock { $0 += 3_600_000 + 61_000 }
    relay.sweepIfDue(now: clock.withLock { $0 })
    relay.endTurn(log: { _ in })
    #expect(call("HEAD", finished, [:]).status == 404)
    #expect(MediaFolder.size(db + ".media/uploads/" + unfinished.split(separator: "/").last!) == nil)
    #expect(try relay.store.upload(id: String(finished.split(separator: "/").last!)) == nil)
    #expect(MediaFolder.size(blob) == Int64(content.count))
    #expect(try relay.store.mayFetch(user: 2, media: 1))

    // Past the retention window (30 days): the message leaves, and its media with it.
    clock.withLock { $0 += 31 * 86_400_000 }
    relay.sweepIfDue(now: clock.withLock { $0 })
    relay.endTurn(log: { _ in })
    #expect(MediaFolder.size(blob) == nil)
    #expect(try relay.store.media(id: 1) == nil)
  }

  // MARK: - A small HTTP client over a plain socket

  static func create(port: Int, token: String, content: [UInt8]) throws -> String {
    let metadata = "sha256 " + Data(SHA256.hex(content).utf8).base64EncodedString()
    let reply = try exchange(
      port: port, method: "POST", path: "/v2/uploads",
      headers: [
        "Authorization": "Bearer \(token)", "Tus-Resumable": "1.0.0", "Upload-Length": String(content.count),
        "Upload-Metadata": metadata, "Content-Length": "0",
      ])
    return try #require(reply.headers["location"])
  }

  static func head(port: Int, token: String, location: String) throws -> (status: Int, offset: Int) {
    let reply = try exchange(
      port: port, method: "HEAD", path: location,
      headers: ["Authorization": "Bearer \(token)", "Tus-Resumable": "1.0.0"])
    return (reply.status, Int(reply.headers["upload-offset"] ?? "") ?? -1)
  }

  static func patch(port: Int, token: String, location: String, offset: Int, _ body: [UInt8]) throws -> Reply {
    try exchange(
      port: port, method: "PATCH", path: location,
      headers: [
        "Authorization": "Bearer \(token)", "Tus-Resumable": "1.0.0", "Upload-Offset": String(offset),
        "Content-Type": "application/offset+octet-stream", "Content-Length": String(body.count),
      ], body: body)
  }

  static func get(port: Int, token: String, path: String) throws -> Reply {
    try exchange(port: port, method: "GET", path: path, headers: ["Authorization": "Bearer \(token)"])
  }

  struct Reply: CustomStringConvertible {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
    var description: String { "\(status) \(headers) \(String(decoding: body.prefix(300), as: UTF8.self))" }
  }

  /// One request with `Connection: close`; the answer read to the end.
  static func exchange(port: Int, method: String, path: String, headers: [String: String], body: [UInt8] = [])
    throws -> Reply
  {
    let client = try RawClient(port: port)
    defer { client.close() }
    var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    try client.send(Array((head + "\r\n").utf8) + body)
    let bytes = client.readAll()
    guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { throw ServerError(message: "no answer") }
    let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
    var fields: [String: String] = [:]
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { continue }
      fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
    return Reply(status: status, headers: fields, body: Array(bytes[end.upperBound...]))
  }

  static func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if condition() { return true }
      usleep(10_000)
    }
    return condition()
  }
}

/// A TCP connection to 127.0.0.1, blocking, with a 20 s receive timeout.
final class RawClient {
  private let descriptor: Int32

  init(port: Int) throws {
    descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else {
      Glibc.close(descriptor)
      throw ServerError(message: "cannot connect to 127.0.0.1:\(port)")
    }
    var timeout = timeval(tv_sec: 20, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  }

  func send(_ bytes: [UInt8]) throws {
    var sent = 0
    while sent < bytes.count {
      let count = bytes[sent...].withUnsafeBytes {
        Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
      }
      guard count > 0 else { throw ServerError(message: "send failed: errno \(errno)") }
      sent += count
    }
  }

  /// Everything until the peer closes (or the timeout).
  func readAll() -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
      guard count > 0 else { break }
      result += buffer[0..<count]
    }
    return result
  }

  func close() { Glibc.close(descriptor) }
}
