import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `chat-relay` as a user runs it: users added with the CLI, `serve` on a free port,
/// the protocol checked by outside clients (Python's urllib and websockets).
@Suite(.serialized, .ownThreads) struct RelayEndToEndTests {
  @Test func theProtocolHoldsForOutsideClients() throws {
    let folder = try Folder()
    let db = folder.path + "/relay.db"
    var tokens: [String] = []
    for (id, name) in [(1, "Alice"), (2, "Bob"), (3, "Carol")] {
      let add = try relay(["user", "add", "--db", db, "--id", String(id), "--name", name])
      #expect(add.status == 0, "\(add.stderr)")
      tokens.append(String(add.stdout.split(separator: "\n").last ?? ""))
    }
    let json = try relay(["user", "add", "--db", db, "--id", "4", "--name", "Dan", "--json"])
    let entry = try #require(
      (try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["files"] as? [[String: Any]])
    let result = try #require(entry.first?["result"] as? [String: Any])
    #expect(result["userId"] as? Int == 4 && (result["token"] as? String)?.isEmpty == false)
    #expect(
      try relay(["user", "add", "--db", db, "--id", "4", "--name", "Dan"]).status == 65, "a duplicate id is refused")

    let server = try Server(db: db)
    defer { server.stop() }
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
      "interop/relay_protocol.py"
    ).path
    let python = try run("/usr/bin/python3", [script, String(server.port)] + tokens)
    #expect(python.status == 0, "\(python.stderr)")
    let facts = try #require(try JSONSerialization.jsonObject(with: Data(python.stdout.utf8)) as? [String: Any])
    let lastID = try #require(facts["lastMessageId"] as? Int)

    // Carol was offline: a push record names the message (ids only).
    let pushes = try relay(["push", "list", "--db", db, "--json"])
    #expect(pushes.status == 0)
    #expect(pushes.stdout.contains("\"messageId\": \(facts["carolMessageId"] as? Int ?? -1)"), "\(pushes.stdout)")

    // SIGTERM stops it cleanly; after a restart ids keep rising.
    #expect(server.stop() == 0)
    let again = try Server(db: db)
    defer { again.stop() }
    let post = try run(
      "/usr/bin/python3",
      [
        "-c",
        """
        import json, sys, urllib.request
        r = urllib.request.Request("http://127.0.0.1:\(again.port)/v2/messages", data=json.dumps({"requestId": 100, "toUserId": 2, "content": "after restart"}).encode(), method="POST")
        r.add_header("Authorization", "Bearer \(tokens[0])"); r.add_header("Content-Type", "application/json")
        print(json.loads(urllib.request.urlopen(r, timeout=10).read())["message"]["messageId"])
        """,
      ])
    #expect(post.status == 0, "\(post.stderr)")
    #expect((Int(post.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > lastID)

    // The file holds no token: only hashes.
    let bytes = try Data(contentsOf: URL(fileURLWithPath: db))
    for token in tokens { #expect(bytes.range(of: Data(token.utf8)) == nil) }
  }

  @Test(arguments: [
    ["user", "list"], ["push", "list"], ["user", "remove", "--id", "1"], ["user", "token", "--id", "1"],
    ["device", "list", "--user", "1"], ["device", "add", "--user", "1", "--name", "laptop"],
    ["device", "remove", "--user", "1", "--device", "1"],
  ])
  func commandsThatOnlyReadOrChangeUsersNeverCreateTheFile(_ command: [String]) throws {
    let folder = try Folder()
    let run = try relay(command + ["--db", folder.path + "/missing.db"])
    #expect(run.status == 66, "\(command): \(run.stderr)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
  }

  @Test(arguments: [
    ["serve", "--db", "x.db", "--port", "70000"], ["serve", "--db", "x.db", "--faults", "nonsense=1"],
    ["user", "add", "--db", "x.db", "--id", "0", "--name", "A"], ["user", "add", "--db", "x.db", "--id", "1"],
    ["device", "add", "--db", "x.db", "--user", "1"], ["device", "remove", "--db", "x.db", "--user", "1"],
    ["device", "remove", "--db", "x.db", "--user", "1", "--device", "0"],
    ["user", "token", "--db", "x.db", "--id", "1", "--device", "x"],
  ])
  func badCommandLinesAreUsageErrors(_ arguments: [String]) throws {
    let run = try relay(arguments)
    #expect(run.status == 64, "\(arguments): \(run.stderr)")
    #expect(run.stderr.hasPrefix("Error: "))
  }
}

// MARK: - Support

struct Output {
  var status: Int32
  var stdout: String
  var stderr: String
}

/// The folder holding the built products (the test bundle sits beside `chat-relay`).
let products: URL = {
  var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
  while url.path != "/" {
    url.deleteLastPathComponent()
    if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("chat-relay").path) { return url }
  }
  fatalError("cannot find the built chat-relay next to \(CommandLine.arguments[0]); run `swift build` first")
}()

func relay(_ arguments: [String]) throws -> Output {
  try run(products.appendingPathComponent("chat-relay").path, arguments)
}

/// Runs a program to its end, reading both pipes before waiting; a child still running
/// after 120 s is killed (`runBounded`) so a hang fails the test instead of the suite.
func run(_ path: String, _ arguments: [String]) throws -> Output {
  try runBounded(path, arguments, seconds: 120)
}

/// Written by one reader thread and read after `group.wait()`, which orders the accesses.
final class Box: @unchecked Sendable { var data = Data() }

/// A temporary folder removed when dropped.
final class Folder {
  let path: String
  init() throws {
    path = FileManager.default.temporaryDirectory.appendingPathComponent("chat-relay-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }
  deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// `chat-relay serve --port 0` in the background; the port is read from its first line.
final class Server {
  let process = Process()
  let port: Int
  private var stopped = false

  init(db: String, extra: [String] = []) throws {
    process.executableURL = products.appendingPathComponent("chat-relay")
    process.arguments = ["serve", "--db", db, "--port", "0"] + extra
    let err = Pipe()
    process.standardError = err
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    // The first stderr line is "listening on http://127.0.0.1:PORT (db)". It is read on
    // another thread, which then keeps draining stderr so the relay never blocks on a full
    // pipe; a relay silent for 20 s is killed (its EOF ends the reader) and reported.
    let first = FirstLine()
    let handle = err.fileHandleForReading
    DispatchQueue.global().async {
      var line = Data()
      while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        line.append(chunk)
        if line.contains(UInt8(ascii: "\n")) { break }
      }
      first.text = String(decoding: line, as: UTF8.self)
      first.ready.signal()
      while !handle.availableData.isEmpty {}
    }
    if first.ready.wait(timeout: .now() + 20) == .timedOut {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw ServerError(message: "chat-relay printed no first line within 20 s")
    }
    let text = first.text
    guard let range = text.range(of: "127.0.0.1:"),
      let port = Int(text[range.upperBound...].prefix { $0.isNumber })
    else {
      process.terminate()
      throw ServerError(message: "chat-relay did not start: \(text)")
    }
    self.port = port
  }

  /// SIGTERM, then the exit status (bounded: SIGKILL after 10 s).
  @discardableResult
  func stop() -> Int32 {
    guard !stopped else { return process.terminationStatus }
    stopped = true
    return terminate(process)
  }
}

/// Stops a relay: SIGTERM, then its exit status; SIGKILL when it is still running after
/// 10 s (a bound, so a relay that ignores SIGTERM fails its test instead of hanging it).
@discardableResult
func terminate(_ process: Process) -> Int32 {
  process.terminate()
  let deadline = Date().addingTimeInterval(10)
  while process.isRunning && Date() < deadline { usleep(10_000) }
  if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  process.waitUntilExit()
  return process.terminationStatus
}

/// Written by the reader thread before `ready` is signalled, read after the wait.
final class FirstLine: @unchecked Sendable {
  let ready = DispatchSemaphore(value: 0)
  var text = ""
}

struct ServerError: Error, CustomStringConvertible {
  var message: String
  var description: String { message }
}
