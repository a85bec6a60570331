import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Behaviours of the running relay beyond the happy path (docs/protocol.md): who may see
/// what, what survives `kill -9`, slow clients and bad frames, the `websockets` package
/// as a client, and the injected faults clients are tested against. Each test starts its
/// own relay on a free port and stops it; every child process is bounded in time and no
/// check is about time.
@Suite(.serialized, .ownThreads) struct RelayBehaviourTests {
  static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
    "interop/relay_auth_faults.py"
  ).path

  /// A relay.db with users 1 (Alice), 2 (Bob) and 3 (Carol); their tokens.
  static func users(_ folder: Folder) throws -> (db: String, alice: String, bob: String, carol: String) {
    let db = folder.path + "/relay.db"
    var tokens: [String] = []
    for (id, name) in [(1, "Alice"), (2, "Bob"), (3, "Carol")] {
      let add = try relay(["user", "add", "--db", db, "--id", String(id), "--name", name])
      #expect(add.status == 0, "\(add.stderr)")
      tokens.append(String(add.stdout.split(separator: "\n").last ?? ""))
    }
    return (db, tokens[0], tokens[1], tokens[2])
  }

  /// The checker under Debian's python3 (its `websockets` 10.4), killed after 90 s.
  static func python(_ arguments: [String]) throws -> Output {
    try runBounded("/usr/bin/python3", [script] + arguments, seconds: 90)
  }

  static func post(_ port: Int, _ token: String, request: Int, to user: Int) throws -> [String: Any] {
    let result = try python(["post", String(port), token, String(request), String(user)])
    #expect(result.status == 0, "\(result.stderr)")
    return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
  }

  static func inbox(_ port: Int, _ token: String) throws -> [Int] {
    let result = try python(["inbox", String(port), token])
    #expect(result.status == 0, "\(result.stderr)")
    return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [Int])
  }

  /// 1. Every endpoint and the socket upgrade × no, wrong and another user's token.
  @Test func everyEndpointRefusesAMissingOrWrongTokenAndATokenSeesOnlyItsUser() throws {
    let folder = try Folder()
    let (db, alice, bob, carol) = try Self.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try Self.python(["auth", String(server.port), alice, bob, carol])
    #expect(result.status == 0, "\(result.stderr)")
  }

  /// 2. A 201 survives `kill -9`; its requestId keeps naming the message after a restart,
  /// after delivery and after the recipient is removed.
  @Test func anAnsweredMessageSurvivesKillDashNineAndItsRequestIdKeepsNamingIt() throws {
    let folder = try Folder()
    let (db, alice, bob, _) = try Self.users(folder)
    let first = try Server(db: db)
    let sent = try Self.post(first.port, alice, request: 41, to: 2)  // Bob is offline
    #expect(sent["status"] as? Int == 201 && sent["replayed"] as? Bool == false)
    let id = try #require(sent["messageId"] as? Int)
    kill(first.process.processIdentifier, SIGKILL)
    first.process.waitUntilExit()
    #expect(first.process.terminationReason == .uncaughtSignal && first.process.terminationStatus == SIGKILL)

    let second = try Server(db: db)
    defer { second.stop() }
    #expect(try Self.inbox(second.port, bob) == [id], "the answered message is delivered after the crash")
    let retry = try Self.post(second.port, alice, request: 41, to: 2)
    #expect(retry["status"] as? Int == 201 && retry["replayed"] as? Bool == true)
    #expect(retry["messageId"] as? Int == id)

    // Bob acknowledges: the message is delivered (it stays in both logs), the requestId still names it.
    let ack = try Self.python(["ack", String(second.port), alice, bob, String(id)])
    #expect(ack.status == 0, "\(ack.stderr)")
    #expect(try Self.inbox(second.port, bob) == [])
    let afterAck = try Self.post(second.port, alice, request: 41, to: 2)
    #expect(
      afterAck["status"] as? Int == 201 && afterAck["replayed"] as? Bool == true && afterAck["messageId"] as? Int == id)

    // Bob is removed: Alice's retry still names the same message.
    #expect(try relay(["user", "remove", "--db", db, "--id", "2"]).status == 0)
    let afterRemoval = try Self.post(second.port, alice, request: 41, to: 2)
    #expect(afterRemoval["status"] as? Int == 201 && afterRemoval["replayed"] as? Bool == true)
    #expect(afterRemoval["messageId"] as? Int == id)
    #expect(try relay(["user", "remove", "--db", db, "--id", "2"]).status == 66, "removing twice: not found")
  }

  /// 3. A client dribbling its request head one byte at a time stalls nobody.
  @Test func aSlowClientStallsNobody() throws {
    let folder = try Folder()
    let (db, _, _, _) = try Self.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try Self.python(["slow", String(server.port)])
    #expect(result.status == 0, "\(result.stderr)")
  }

  /// 4. A binary frame closes only its socket (1003); a text frame that is not JSON gets an
  /// `error` event and the socket stays open.
  @Test func badFramesCloseOnlyTheirSocketOrGetAnErrorEvent() throws {
    let folder = try Folder()
    let (db, alice, bob, _) = try Self.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try Self.python(["frames", String(server.port), alice, bob])
    #expect(result.status == 0, "\(result.stderr)")
  }

  /// 5. The `websockets` package as a client: new_message, delivery_ack, ping/pong, a normal
  /// close (1000); SIGTERM closes an open socket with 1001 and the relay exits 0.
  @Test func thePythonWebsocketsPackageInteroperates() throws {
    let folder = try Folder()
    let (db, alice, bob, _) = try Self.users(folder)
    let server = try Server(db: db)
    defer { server.stop() }
    let result = try Self.python(["interop", String(server.port), alice, bob])
    #expect(result.status == 0, "\(result.stderr)")

    let stopping = try Self.python(["going-away", String(server.port), alice, String(server.process.processIdentifier)])
    #expect(stopping.status == 0, "\(stopping.stderr)")
    #expect(server.stop() == 0, "SIGTERM is a clean exit")
  }

  /// 6. `--faults`: a dropped answer after a commit, 503 and 429.
  @Test func injectedFaultsBehaveAsDocumented() throws {
    let folder = try Folder()
    let (db, alice, bob, _) = try Self.users(folder)
    do {
      let server = try Server(db: db, extra: ["--faults", "drop-response=1", "--faults-seed", "3"])
      defer { server.stop() }
      let dropped = try Self.python(["drop", String(server.port), alice, "7", "2"])
      #expect(dropped.status == 0 && dropped.stdout.contains("dropped"), "\(dropped.stderr)")
    }
    // The dropped answer's message was committed: a retry is a replay, and Bob has it once.
    do {
      let server = try Server(db: db)
      defer { server.stop() }
      let retry = try Self.post(server.port, alice, request: 7, to: 2)
      #expect(retry["status"] as? Int == 201 && retry["replayed"] as? Bool == true)
      let id = try #require(retry["messageId"] as? Int)
      #expect(try Self.inbox(server.port, bob) == [id])
    }
    do {
      let server = try Server(db: db, extra: ["--faults", "error-503=1", "--faults-seed", "3"])
      defer { server.stop() }
      let answer = try Self.post(server.port, alice, request: 8, to: 2)
      #expect(answer["status"] as? Int == 503 && answer["code"] as? String == "unavailable", "\(answer)")
    }
    do {
      let server = try Server(db: db, extra: ["--faults", "throttle-429=1", "--faults-seed", "3"])
      defer { server.stop() }
      let answer = try Self.post(server.port, alice, request: 9, to: 2)
      #expect(
        answer["status"] as? Int == 429 && answer["code"] as? String == "throttled"
          && answer["retryAfter"] as? String == "1", "\(answer)")
    }
    // The 503 came "before doing anything": request 8 was never committed.
    do {
      let server = try Server(db: db)
      defer { server.stop() }
      let fresh = try Self.post(server.port, alice, request: 8, to: 2)
      #expect(fresh["status"] as? Int == 201 && fresh["replayed"] as? Bool == false, "\(fresh)")
    }
  }

  /// Presence follows half-open connections: a socket whose pings go unanswered is
  /// closed after twice `--ping-seconds` and its user announced offline to contacts.
  @Test func aSilentSocketIsClosedAndItsUserAnnouncedOffline() throws {
    let folder = try Folder()
    let db = folder.path + "/relay.db"
    var tokens: [String] = []
    for (id, name) in [(1, "Alice"), (2, "Bob")] {
      let add = try relay(["user", "add", "--db", db, "--id", String(id), "--name", name])
      #expect(add.status == 0, "\(add.stderr)")
      tokens.append(String(add.stdout.split(separator: "\n").last ?? ""))
    }
    let server = try Server(db: db, extra: ["--ping-seconds", "1"])
    defer { server.stop() }
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
      "interop/relay_presence.py"
    ).path
    let result = try ChatRelayTests.run("/usr/bin/python3", [script, String(server.port)] + tokens)
    #expect(result.status == 0, "\(result.stderr)")
  }
}

// MARK: - Bounded child processes

/// Runs a program to its end, reading both pipes before waiting, and SIGKILLs it after
/// `seconds` (its stderr then says so): a hung child fails the test instead of hanging
/// the suite.
func runBounded(_ path: String, _ arguments: [String], seconds: Double) throws -> Output {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: path)
  process.arguments = arguments
  let out = Pipe()
  let err = Pipe()
  process.standardOutput = out
  process.standardError = err
  process.standardInput = FileHandle.nullDevice
  try process.run()
  let watchdog = Watchdog(pid: process.processIdentifier)
  DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { watchdog.fire() }
  let errData = Box()
  let group = DispatchGroup()
  group.enter()
  DispatchQueue.global().async {
    errData.data = err.fileHandleForReading.readDataToEndOfFile()
    group.leave()
  }
  let outData = out.fileHandleForReading.readDataToEndOfFile()
  group.wait()
  process.waitUntilExit()
  watchdog.disarm()
  var stderr = String(decoding: errData.data, as: UTF8.self)
  if watchdog.fired { stderr += "\n[killed after \(seconds) s]" }
  return Output(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self), stderr: stderr)
}

/// Kills a child once unless disarmed first; it is disarmed right after the child's exit,
/// which leaves only that moment for its pid to be reused.
final class Watchdog: @unchecked Sendable {
  private let lock = NSLock()
  private let pid: pid_t
  private var armed = true
  private var killed = false
  var fired: Bool {
    lock.lock()
    defer { lock.unlock() }
    return killed
  }
  init(pid: pid_t) { self.pid = pid }
  func fire() {
    lock.lock()
    defer { lock.unlock() }
    guard armed else { return }
    armed = false
    killed = true
    kill(pid, SIGKILL)
  }
  func disarm() {
    lock.lock()
    defer { lock.unlock() }
    armed = false
  }

}
