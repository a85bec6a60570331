import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The relay against hostile clients (issue 14, security): the auth matrix, size limits,
/// hostile fields, slow clients, a flood of failed logins, file modes under a permissive
/// umask, and logs that never hold a message's content or a token. Checks are made by
/// outside clients (`interop/relay_security.py`); no check is about time: the latency
/// figures the script prints are for whoever reads the run, never assertions.
@Suite(.serialized, .ownThreads) struct RelaySecurityTests {
  static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("interop/relay_security.py").path

  static func python(_ arguments: [String], seconds: Double = 120) throws -> Output {
    try runBounded("/usr/bin/python3", [script] + arguments, seconds: seconds)
  }

  /// Runs the script's `check` against a fresh relay with Alice, Bob and Carol.
  static func check(_ check: String, _ tokens: (RelayUsers) -> [String], seconds: Double = 120) throws -> Output {
    let folder = try Folder()
    let users = try RelayUsers(folder)
    let server = try Server(db: users.db)
    defer { server.stop() }
    let result = try python([check, String(server.port)] + tokens(users), seconds: seconds)
    #expect(result.status == 0, "\(check): \(result.stderr)")
    return result
  }

  @Test func everyEndpointTimesNoTokenABadTokenAnotherUsersTokenAndTheRightOne() throws {
    let result = try Self.check("matrix") { [$0.alice, $0.bob, $0.carol] }
    #expect(result.stdout.hasSuffix("ok\n"))
  }

  @Test func bodiesContentAndHeadersOverTheirLimitsAreRefusedAndTheRelayGoesOn() throws {
    let result = try Self.check("limits") { [$0.alice] }
    #expect(result.stdout.hasSuffix("ok\n"))
  }

  /// SQL metacharacters, NUL, invalid UTF-8, lone surrogates, 10,000-digit and negative
  /// numbers in bodies, queries and paths: stored exactly, or refused with one line.
  @Test func hostileFieldsAreStoredExactlyOrRefusedWithOneLine() throws {
    let result = try Self.check("inject") { [$0.alice, $0.bob] }
    #expect(result.stdout.hasSuffix("ok\n"))
  }

  /// Garbage and HTTP/2 first lines, chunked and length-less bodies, `Expect`, heads
  /// libwebsockets cannot parse: each answered (or the connection ended) as
  /// docs/protocol.md's "Malformed requests" says, and the relay goes on.
  @Test func malformedRequestsGetTheAnswersTheProtocolDocuments() throws {
    let result = try Self.check("wire") { [$0.alice] }
    #expect(result.stdout.hasSuffix("ok\n"))
  }

  /// A head and a body sent a byte a second and a silent connection: others are served
  /// meanwhile, and the relay closes each slow one (head 10 s, body 20 s).
  @Test func slowClientsAreClosedAndStallNobody() throws {
    let result = try Self.check("slowloris", { [$0.alice, $0.bob] }, seconds: 90)
    let figures = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    #expect((figures["answered"] as? Int ?? 0) > 0)
  }

  /// 1,000 bad tokens from one client: each is a 401, and another client's requests
  /// are all answered (their latency is printed, never asserted).
  @Test func aThousandFailedLoginsAreAllRefusedWhileAnotherClientIsServed() throws {
    let result = try Self.check("logins", { [$0.bob] }, seconds: 240)
    let figures = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    #expect(figures["failedLogins"] as? Int == 1000)
    print("relay failed-login figures: \(result.stdout)")
  }

  // MARK: - Files and logs

  /// Under umask 000, `relay.db` and its `-wal` and `-shm` are 0600 while the relay runs.
  @Test func relayFilesArePrivateUnderAPermissiveUmask() throws {
    let folder = try Folder()
    let db = folder.path + "/relay.db"
    let add = try runBounded(
      "/bin/sh",
      ["-c", "umask 000; exec \"$0\" \"$@\"", relayPath, "user", "add", "--db", db, "--id", "1", "--name", "A"],
      seconds: 60)
    #expect(add.status == 0, "\(add.stderr)")
    #expect(mode(db) == 0o600)
    #expect(try relay(["user", "add", "--db", db, "--id", "2", "--name", "B"]).status == 0)
    let server = try LoggedServer(db: db, folder: folder, umaskZero: true)
    defer { server.stop() }
    let token = String(add.stdout.split(separator: "\n").last ?? "")
    let posted = try Self.python(["limits", String(server.port), token])  // writes, so the -wal exists
    #expect(posted.status == 0, "\(posted.stderr)")
    for suffix in ["", "-wal", "-shm"] {
      #expect(mode(db + suffix) == 0o600, "relay.db\(suffix)")
    }
  }

  /// The relay's log names requests and connections, never a message's content or a token,
  /// even for refused requests and bad tokens; nor does `chat-sync run`'s.
  @Test func logsHoldNoContentAndNoToken() throws {
    let folder = try Folder()
    let users = try RelayUsers(folder)
    let server = try LoggedServer(db: users.db, folder: folder)
    let secret = "SECRET-CONTENT-\(UUID().uuidString)"
    let post = """
      import http.client, json, sys
      port, token, secret = int(sys.argv[1]), sys.argv[2], sys.argv[3]
      for auth, body in [(token, {"requestId": 1, "toUserId": 2, "content": secret}),
                         (token, {"requestId": 2, "toUserId": 2, "content": secret + "x" * 70000}),
                         (token + "x", {"requestId": 3, "toUserId": 2, "content": secret}),
                         (token, {"requestId": -1, "toUserId": 2, "content": secret})]:
          c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
          c.request("POST", "/v2/messages?note=" + secret, body=json.dumps(body), headers={"Authorization": "Bearer " + auth})
          print(c.getresponse().status)
          c.close()
      """
    let sent = try runBounded("/usr/bin/python3", ["-c", post, String(server.port), users.alice, secret], seconds: 60)
    #expect(sent.stdout.split(separator: "\n") == ["201", "413", "401", "400"], "\(sent.stdout) \(sent.stderr)")

    // chat-sync: Bob receives the message, Alice sends one; its log is read too.
    let data = folder.path + "/data"
    var syncLogs = ""
    for (user, token) in [("2", users.bob), ("1", users.alice)] {
      if user == "1" {
        let queued = try runBounded(
          syncPath, ["send", "--data-dir", data, "--user", "1", "--to", "2", secret + "-sent"], seconds: 60)
        #expect(queued.status == 0, "\(queued.stderr)")
      }
      let run = try runBounded(
        "/usr/bin/env",
        [
          "CHAT_SYNC_TOKEN=\(token)", "CHAT_SYNC_SERVER=http://127.0.0.1:\(server.port)", syncPath, "run", "--data-dir",
          data,
          "--user", user, "--once", "--deadline", "20",
        ], seconds: 60)
      #expect(run.status == 0, "\(run.stderr)")
      syncLogs += run.stdout + run.stderr
    }
    let history = try runBounded(
      syncPath, ["history", "--data-dir", data, "--user", "2", "--with", "1", "--json"], seconds: 60)
    #expect(history.stdout.contains(secret), "the message reached Bob: \(history.stdout.prefix(300))")
    server.stop()
    let relayLog = try String(contentsOfFile: server.logPath, encoding: .utf8)
    #expect(relayLog.contains("POST /v2/messages"), "the relay logs requests: \(relayLog.prefix(300))")
    for (name, log) in [("chat-relay serve", relayLog), ("chat-sync run", syncLogs)] {
      #expect(!log.contains("SECRET-CONTENT"), "\(name) logged a message's content")
      for token in [users.alice, users.bob, users.carol] {
        #expect(!log.contains(token) && !log.contains(String(token.prefix(16))), "\(name) logged a token")
      }
    }
  }
}

// MARK: - Support

let relayPath = products.appendingPathComponent("chat-relay").path
let syncPath = products.appendingPathComponent("chat-sync").path

/// The permission bits of a file, or nil when it is missing.
func mode(_ path: String) -> Int? {
  var info = stat()
  return stat(path, &info) == 0 ? Int(info.st_mode & 0o777) : nil
}

/// relay.db with Alice (1), Bob (2) and Carol (3), and their tokens.
struct RelayUsers {
  let db: String
  var alice = "", bob = "", carol = ""
  init(_ folder: Folder) throws {
    db = folder.path + "/relay.db"
    var tokens: [String] = []
    for (id, name) in [(1, "Alice"), (2, "Bob"), (3, "Carol")] {
      let add = try relay(["user", "add", "--db", db, "--id", String(id), "--name", name])
      #expect(add.status == 0, "\(add.stderr)")
      tokens.append(String(add.stdout.split(separator: "\n").last ?? ""))
    }
    (alice, bob, carol) = (tokens[0], tokens[1], tokens[2])
  }
}

/// `chat-relay serve --port 0` with its whole log kept in a file (optionally under umask 000).
final class LoggedServer {
  let process = Process()
  let logPath: String
  let port: Int
  private var stopped = false

  init(db: String, folder: Folder, umaskZero: Bool = false) throws {
    logPath = folder.path + "/serve-\(UUID().uuidString).log"
    _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = [
      "-c", (umaskZero ? "umask 000; " : "") + "exec \"$0\" \"$@\"", relayPath, "serve", "--db", db, "--port", "0",
    ]
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    var found: Int?
    for _ in 0..<400 where found == nil {
      let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
      if let range = text.range(of: "127.0.0.1:") { found = Int(text[range.upperBound...].prefix { $0.isNumber }) }
      if found == nil { usleep(50_000) }
    }
    guard let found else {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw ServerError(message: "chat-relay did not start within 20 s")
    }
    port = found
  }

  func stop() {
    guard !stopped else { return }
    stopped = true
    terminate(process)
  }

  deinit { stop() }
}
