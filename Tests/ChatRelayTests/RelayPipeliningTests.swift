import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// HTTP/1.1 keep-alive and pipelining against the real `chat-relay serve` (docs/protocol.md,
/// "Connections"). Two requests sent in one TCP write used to make libwebsockets 4.1.6
/// call the body-completion callback in an endless loop: the relay spun, answered nobody
/// and ignored SIGTERM. Every child process is bounded in time, so a hang fails the test.
@Suite(.serialized, .ownThreads) struct RelayPipeliningTests {
  static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
    "interop/relay_pipelining.py"
  ).path

  /// Two and three requests in one write, a GET behind a POST and the other way round,
  /// a body in pieces on a kept-alive connection, clients that go away behind pipelined
  /// requests: each pipelined connection gets its first answer with `Connection: close`
  /// and is closed, other clients are served meanwhile, the idle relay uses no CPU, and
  /// SIGTERM still stops it.
  @Test func pipelinedRequestsGetTheFirstAnswerAndACloseAndNeverSpinTheRelay() throws {
    let folder = try Folder()
    let (db, alice, _, _) = try RelayBehaviourTests.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try runBounded(
      "/usr/bin/python3", [Self.script, String(server.port), alice, String(server.process.processIdentifier)],
      seconds: 90)
    #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
    let facts = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    #expect((facts?["idleCpuSeconds"] as? Double ?? 1) < 0.3, "\(result.stdout)")
    // SIGTERM ends it (stop() sends SIGKILL after 10 s, which would not be status 0).
    #expect(server.stop() == 0)
  }
}
