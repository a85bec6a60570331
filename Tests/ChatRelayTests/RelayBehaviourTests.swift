import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Behaviours of the running relay beyond the happy path: who may see what, what
/// survives `kill -9`, and the injected faults clients are tested against.
@Suite(.serialized) struct RelayBehaviourTests {
  static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("interop/relay_auth_faults.py").path

  /// A relay.db with users 1 (Alice) and 2 (Bob); their tokens.
  static func users(_ folder: Folder) throws -> (db: String, alice: String, bob: String) {
    let db = folder.path + "/relay.db"
    var tokens: [String] = []
    for (id, name) in [(1, "Alice"), (2, "Bob")] {
      let add = try relay(["user", "add", "--db", db, "--id", String(id), "--name", name])
      #expect(add.status == 0, "\(add.stderr)")
      tokens.append(String(add.stdout.split(separator: "\n").last ?? ""))
    }
    return (db, tokens[0], tokens[1])
  }

  static func python(_ arguments: [String]) throws -> Output { try run("/usr/bin/python3", [script] + arguments) }

  static func post(_ port: Int, _ token: String, request: Int, to user: Int) throws -> [String: Any] {
    let result = try python(["post", String(port), token, String(request), String(user)])
    #expect(result.status == 0, "\(result.stderr)")
    return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
  }

  @Test func everyEndpointRefusesAMissingOrWrongTokenAndATokenSeesOnlyItsUser() throws {
    let folder = try Folder()
    let (db, alice, bob) = try Self.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try Self.python(["auth", String(server.port), alice, bob])
    #expect(result.status == 0, "\(result.stderr)")
  }

  @Test func anAnsweredMessageSurvivesKillDashNineAndItsRequestIdKeepsNamingIt() throws {
    let folder = try Folder()
    let (db, alice, _) = try Self.users(folder)
    let first = try Server(db: db)
    let sent = try Self.post(first.port, alice, request: 41, to: 2)
    #expect(sent["status"] as? Int == 201)
    kill(first.process.processIdentifier, SIGKILL)
    first.process.waitUntilExit()
    #expect(first.process.terminationReason == .uncaughtSignal)

    let second = try Server(db: db)
    defer { second.stop() }
    let retry = try Self.post(second.port, alice, request: 41, to: 2)
    #expect(retry["status"] as? Int == 201 && retry["replayed"] as? Bool == true)
    #expect(retry["messageId"] as? Int == sent["messageId"] as? Int)
    // Bob is removed: Alice's retry still names the same message.
    #expect(try relay(["user", "remove", "--db", db, "--id", "2"]).status == 0)
    let afterRemoval = try Self.post(second.port, alice, request: 41, to: 2)
    #expect(afterRemoval["messageId"] as? Int == sent["messageId"] as? Int)
    #expect(try relay(["user", "remove", "--db", db, "--id", "2"]).status == 66, "removing twice: not found")
  }

  @Test func injectedFaultsBehaveAsDocumented() throws {
    let folder = try Folder()
    let (db, alice, _) = try Self.users(folder)
    do {
      let server = try Server(db: db, extra: ["--faults", "drop-response=1", "--faults-seed", "3"])
      defer { server.stop() }
      let dropped = try Self.python(["drop", String(server.port), alice, "7", "2"])
      #expect(dropped.status == 0 && dropped.stdout.contains("dropped"), "\(dropped.stderr)")
    }
    // The dropped answer's message was committed: a retry is a replay.
    do {
      let server = try Server(db: db)
      defer { server.stop() }
      let retry = try Self.post(server.port, alice, request: 7, to: 2)
      #expect(retry["status"] as? Int == 201 && retry["replayed"] as? Bool == true)
    }
    do {
      let server = try Server(db: db, extra: ["--faults", "error-503=1"])
      defer { server.stop() }
      let answer = try Self.post(server.port, alice, request: 8, to: 2)
      #expect(answer["status"] as? Int == 503 && answer["code"] as? String == "unavailable")
    }
    do {
      let server = try Server(db: db, extra: ["--faults", "throttle-429=1"])
      defer { server.stop() }
      let answer = try Self.post(server.port, alice, request: 9, to: 2)
      #expect(answer["status"] as? Int == 429 && answer["code"] as? String == "throttled" && answer["retryAfter"] as? String == "1")
    }
  }

  @Test func badFramesCloseOnlyTheirSocketAndASlowClientStallsNobody() throws {
    let folder = try Folder()
    let (db, alice, bob) = try Self.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try Self.python(["sockets", String(server.port), alice, bob])
    #expect(result.status == 0, "\(result.stderr)")
  }

  @Test func stoppingTheRelayClosesSocketsWithGoingAway() throws {
    let folder = try Folder()
    let (db, alice, _) = try Self.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try Self.python(["going-away", String(server.port), alice, String(server.process.processIdentifier)])
    #expect(result.status == 0, "\(result.stderr)")
    server.process.waitUntilExit()
    #expect(server.process.terminationStatus == 0)
  }
}
