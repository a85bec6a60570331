import Foundation
import Testing

/// The folder holding the built products (the test bundle sits beside the binaries).
let products: URL = {
  var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
  while url.path != "/" {
    url.deleteLastPathComponent()
    if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("chat-sync").path) { return url }
  }
  fatalError("cannot find the built chat-sync next to \(CommandLine.arguments[0]); run `swift build` first")
}()

struct Output {
  var status: Int32
  var stdout: String
  var stderr: String
}

/// Runs one of the built programs to its end (killed after `seconds`); output through
/// files, so neither pipe can fill up.
func tool(_ name: String, _ arguments: [String], environment: [String: String] = [:], seconds: Double = 60) throws
  -> Output
{
  let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chatsync-out-\(UUID().uuidString)")
  try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: folder) }
  let out = folder.appendingPathComponent("out")
  let err = folder.appendingPathComponent("err")
  _ = FileManager.default.createFile(atPath: out.path, contents: nil)
  _ = FileManager.default.createFile(atPath: err.path, contents: nil)
  let process = Process()
  // A built program by name, or any other by its absolute path (openssl, curl, python3).
  process.executableURL = name.hasPrefix("/") ? URL(fileURLWithPath: name) : products.appendingPathComponent(name)
  process.arguments = arguments
  process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
  process.standardOutput = try FileHandle(forWritingTo: out)
  process.standardError = try FileHandle(forWritingTo: err)
  process.standardInput = FileHandle.nullDevice
  try process.run()
  let deadline = Date().addingTimeInterval(seconds)
  while process.isRunning && Date() < deadline { usleep(5_000) }
  if process.isRunning { kill(process.processIdentifier, SIGKILL) }
  process.waitUntilExit()
  return Output(
    status: process.terminationStatus, stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
    stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "")
}

/// A background program whose stderr goes to a log file.
final class Background {
  let process = Process()
  let log: String

  init(_ name: String, _ arguments: [String], log: String, environment: [String: String] = [:]) throws {
    self.log = log
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    process.executableURL = products.appendingPathComponent(name)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    handle.seekToEndOfFile()
    process.standardError = handle
    process.standardOutput = handle
    process.standardInput = FileHandle.nullDevice
    try process.run()
  }

  var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

  /// SIGTERM (or `signal`), then the exit status; SIGKILL after 60 s (a bound, not a
  /// timing: under a loaded machine a run that just shared its file with `vacuum` took
  /// over 15 s to close it).
  @discardableResult
  func stop(_ signal: Int32 = SIGTERM) -> Int32 {
    if process.isRunning { kill(process.processIdentifier, signal) }
    let deadline = Date().addingTimeInterval(60)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    return process.terminationStatus
  }

  deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}

/// `chat-relay serve` on loopback; keeps its port across `kill9AndRestart`.
final class RelayProcess {
  let db: String
  let folder: String
  let faults: [String]
  /// Served over TLS with this certificate and key (`https://localhost:port`).
  let tls: (certificate: String, key: String)?
  private(set) var port = 0
  private(set) var server: Background?
  private var starts = 0

  init(folder: String, faults: [String] = [], tls: (certificate: String, key: String)? = nil) throws {
    self.folder = folder
    self.db = folder + "/relay.db"
    self.faults = faults
    self.tls = tls
    try start(port: 0)
  }

  var url: String { tls == nil ? "http://127.0.0.1:\(port)" : "https://localhost:\(port)" }

  private func start(port: Int) throws {
    starts += 1
    let log = folder + "/relay-\(starts).log"
    let server = try Background(
      "chat-relay",
      ["serve", "--db", db, "--create", "--port", String(port), "--ping-seconds", "5"] + faults
        + (tls.map { ["--tls-cert", $0.certificate, "--tls-key", $0.key] } ?? []), log: log)
    self.server = server
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
      let text = server.logText
      if let range = text.range(of: "127.0.0.1:"), let found = Int(text[range.upperBound...].prefix { $0.isNumber }) {
        self.port = found
        return
      }
      if !server.process.isRunning { break }
      usleep(10_000)
    }
    throw TestFailure("chat-relay did not start: \(server.logText)")
  }

  /// Adds a user and returns the token.
  func addUser(_ id: Int64, _ name: String) throws -> String {
    let out = try tool("chat-relay", ["user", "add", "--db", db, "--id", String(id), "--name", name])
    guard out.status == 0, let token = out.stdout.split(separator: "\n").last else {
      throw TestFailure("user add: \(out.stderr)")
    }
    return String(token)
  }

  /// `chat-relay device add`: the new device's id and token.
  func addDevice(user: Int64, name: String) throws -> (id: Int64, token: String) {
    let out = try tool("chat-relay", ["device", "add", "--db", db, "--user", String(user), "--name", name, "--json"])
    let envelope = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
    let files = envelope?["files"] as? [[String: Any]]
    guard out.status == 0, let result = files?.first?["result"] as? [String: Any],
      let id = result["deviceId"] as? Int, let token = result["token"] as? String
    else { throw TestFailure("device add: \(out.stdout) \(out.stderr)") }
    return (Int64(id), token)
  }

  /// `kill -9`, then the same relay on the same port (retrying while the port is held).
  func kill9AndRestart() throws {
    server?.stop(SIGKILL)
    let deadline = Date().addingTimeInterval(20)
    while true {
      do {
        try start(port: port)
        return
      } catch  where Date() < deadline {
        usleep(100_000)
      }
    }
  }

  func stop() { server?.stop() }
}

struct TestFailure: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Polls `condition` every 50 ms until it holds or `seconds` pass, without holding a
/// thread of the test pool while it waits.
func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) async rethrows -> Bool {
  let deadline = Date().addingTimeInterval(seconds)
  while Date() < deadline {
    if try condition() { return true }
    try? await Task.sleep(for: .milliseconds(50))
  }
  return try condition()
}
