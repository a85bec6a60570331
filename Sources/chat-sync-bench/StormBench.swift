import ChatCLI
import ChatStore
import ChatSync
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `chat-sync-bench storm`: many `SyncEngine`s in one process (one `ChatRepository`
/// file each, the shared libwebsockets client for HTTP and the socket), for the
/// reconnect storm after a relay restart.
///
/// It starts the engines, waits until every one is connected and synced, writes
/// `--ready-file`, and from then on records every connection change the engines log
/// (`socket: connected`, `socket: cannot connect: …`, `socket: closed`, the sync after a
/// connect) with the wall-clock time of the log call. The script kills and restarts the
/// relay meanwhile. The driver ends once every engine has lost its socket and got it back
/// (and synced), or after `--timeout`; it then watches the idle engines for `--settle`
/// seconds (its own CPU time, to catch a spinning client), writes `--out` and stops the
/// engines.
enum StormBench: ParsableCommand {
  /// Prints its own JSON line for scripts/bench, not the envelope.
  typealias Result = EmptyResult
  static let name = "storm"
  static let abstract = "Run many sync engines in one process and record their reconnects around a relay restart."

  struct Options: ParsableOptions {
    var server: URL?
    var tokens: String
    var clients: Int
    var folder: String
    var noJitter: Bool
    var readyFile: String
    var out: String
    var timeout: Int
    var settle: Int
    init(_ o: inout OptionReader) {
      server = o.option(
        "--server", valueName: "url", help: "The relay, e.g. http://127.0.0.1:8080.", required: true,
        parse: { URL(string: $0) })
      tokens =
        o.option("--tokens", valueName: "path", help: "Lines 'USER_ID TOKEN', one per client.", required: true) ?? ""
      clients =
        o.option(
          "--clients", valueName: "n", help: "Engines to run (default 500).", parse: Parse.count(from: 1, to: 100_000))
        ?? 500
      folder =
        o.option("--dir", valueName: "path", help: "A folder for the engines' files (chats-<id>.db).", required: true)
        ?? ""
      noJitter = o.flag(
        "--no-jitter", help: "Reconnect after exactly 1 s doubling to 30 s (default: the product's ±50%).")
      readyFile =
        o.option(
          "--ready-file", valueName: "path", help: "Written once every engine is connected and synced.", required: true)
        ?? ""
      out = o.option("--out", valueName: "path", help: "Where to write the JSON.", required: true) ?? ""
      timeout =
        o.option(
          "--timeout", valueName: "seconds", help: "How long to wait for the storm to end after ready (default 120).",
          parse: Parse.count(from: 1, to: 3_600)) ?? 120
      settle =
        o.option(
          "--settle", valueName: "seconds", help: "Idle seconds watched after the storm (default 2).",
          parse: Parse.count(from: 0, to: 600)) ?? 2
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let stopped = try blocking { try await storm(options) }
    if stopped < options.clients {
      context.stderr.writeLine("warning: \(options.clients - stopped) engine(s) had not stopped 15 s after stop()")
    }
  }

  static func storm(_ options: Options) async throws -> Int {
    guard let base = options.server, var socketURL = URLComponents(url: base, resolvingAgainstBaseURL: false) else {
      throw StoreError(.badInput, "--server: not a URL")
    }
    socketURL.scheme = "ws"
    socketURL.path = "/v2/socket/updates"
    let accounts = try readTokens(options.tokens)
    guard accounts.count >= options.clients else {
      throw StoreError(
        .badInput, "\(options.tokens): \(accounts.count) tokens for \(options.clients) clients", path: options.tokens)
    }
    if !FileSystem.exists(options.folder) { try FileSystem.createPrivateDirectory(atPath: options.folder) }

    let recorder = Recorder(clients: options.clients)
    let backoff = options.noJitter ? Backoff(base: 1, cap: 30, jitter: .none) : Backoff.reconnect
    var engines: [SyncEngine] = []
    let created = wallClock()
    // The files first, 16 at a time: creating one is mostly waiting for its syncs.
    let ids = accounts.prefix(options.clients).map(\.id)
    let folder = options.folder
    let failure = Locked<String?>(nil)
    let group = DispatchGroup()
    for worker in 0..<16 {
      group.enter()
      Thread.detachNewThread {
        for id in ids.enumerated().filter({ $0.offset % 16 == worker }).map(\.element) {
          do {
            _ = try Migrator().migrate(fileAt: StoreLocation.path(forUser: id, in: folder), owner: id, backup: false)
          } catch {
            failure.withLock { $0 = $0 ?? "\(error)" }
          }
        }
        group.leave()
      }
    }
    group.wait()
    if let failure = failure.withLock({ $0 }) { throw StoreError(.io, failure) }
    for (index, account) in accounts.prefix(options.clients).enumerated() {
      let repository = try ChatRepository.open(user: account.id, in: options.folder)
      var engineOptions = SyncEngine.Options()
      engineOptions.reconnectBackoff = backoff
      engineOptions.log = { lines in
        for line in lines.split(separator: "\n") { recorder.record(client: index, line: String(line)) }
      }
      engines.append(
        SyncEngine(
          repository: repository, http: .libwebsockets(base: base, token: account.token),
          socket: .libwebsockets(url: socketURL.url!, token: account.token), options: engineOptions))
    }
    let started = wallClock()
    let finished = Counter()
    let tasks = engines.map { engine in
      Task {
        await engine.run()
        finished.add()
      }
    }
    _ = tasks

    // 1. Everyone connected and synced.
    let readyDeadline = wallClock() + 90
    while !recorder.allUp() {
      guard wallClock() < readyDeadline else {
        throw StoreError(
          .io, "only \(recorder.upCount()) of \(options.clients) engines connected and synced within 90 s")
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    let readyAt = wallClock()
    recorder.mark(readyAt)
    let cpuAtReady = cpuSeconds()
    guard FileManager.default.createFile(atPath: options.readyFile, contents: Data("\(readyAt)\n".utf8)) else {
      throw StoreError(.io, "\(options.readyFile): cannot write", path: options.readyFile)
    }

    // 2. Every engine lost its socket and got it back (the script restarts the relay).
    let stormDeadline = readyAt + Double(options.timeout)
    while !recorder.allBack() && wallClock() < stormDeadline { try await Task.sleep(for: .milliseconds(20)) }
    let endedAt = wallClock()
    let cpuAtEnd = cpuSeconds()

    // 3. Idle: nothing should burn CPU now.
    try await Task.sleep(for: .seconds(options.settle))
    let idleCPU = cpuSeconds() - cpuAtEnd
    let idleSeconds = wallClock() - endedAt
    var result = recorder.json()
    result["clients"] = .int(Int64(options.clients))
    result["jitter"] = .string(options.noJitter ? "none" : "proportional 0.5")
    result["createSeconds"] = .double(started - created)
    result["startSeconds"] = .double(readyAt - started)
    result["readyAt"] = .double(readyAt)
    result["endedAt"] = .double(endedAt)
    result["timedOut"] = .bool(!recorder.allBack())
    result["cpuStormSeconds"] = .double(cpuAtEnd - cpuAtReady)
    result["cpuIdleSeconds"] = .double(idleCPU)
    result["idleSeconds"] = .double(idleSeconds)
    try writeJSON(.object(result), to: options.out)

    // 4. Stop the engines (bounded: the JSON is what matters).
    for engine in engines { await engine.stop() }
    let stopDeadline = wallClock() + 15
    while finished.value < engines.count && wallClock() < stopDeadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    return finished.value
  }

  static func readTokens(_ path: String) throws -> [(id: Int64, token: String)] {
    guard let data = FileManager.default.contents(atPath: path) else {
      throw StoreError(.notFound, "\(path): cannot read the tokens", path: path)
    }
    return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
      let words = line.split(separator: " ")
      guard words.count == 2, let id = Int64(words[0]) else { return nil }
      return (id, String(words[1]))
    }
  }
}

/// What the engines logged, with times; and each engine's state, for the driver's waits.
final class Recorder: Sendable {
  enum Kind: String {
    /// An attempt that connected (`socket: connected`).
    case connected
    /// An attempt that failed (`socket: cannot connect: …`).
    case failed
    /// A socket that closed (`socket: closed`).
    case closed
    /// The cursor sync after a connect finished (`sync: N page(s)…`).
    case synced
    /// The sync after a connect failed (`sync: <error>`).
    case syncFailed
  }

  private struct State: ~Copyable {
    var mark: Double? = nil
    /// [client, time, kind] after the mark.
    var events: [(Int, Double, Kind)] = []
    var connected: [Bool]
    var synced: [Bool]
    /// Since the mark: lost its socket, and got it back and synced after that.
    var lost: [Bool]
    var back: [Bool]
    var backCount = 0
    var failures: [String: Int] = [:]
    /// The first 20 times of each reason (a rare one can then be placed in the storm).
    var failureTimes: [String: [Double]] = [:]
    var syncFailures: [String: Int] = [:]
    var otherLines: [String: Int] = [:]
    var delays: [Double] = []
  }

  private let state: Locked<State>
  let clients: Int

  init(clients: Int) {
    self.clients = clients
    state = Locked(
      State(
        connected: Array(repeating: false, count: clients), synced: Array(repeating: false, count: clients),
        lost: Array(repeating: false, count: clients), back: Array(repeating: false, count: clients)))
  }

  func record(client: Int, line: String) {
    let now = wallClock()
    state.withLock { s in
      var kind: Kind?
      if line.hasPrefix("socket: connected") {
        kind = .connected
        s.connected[client] = true
        s.synced[client] = false
      } else if line.hasPrefix("socket: cannot connect") {
        kind = .failed
        if s.mark != nil {
          let reason = Self.reason(line)
          s.failures[reason, default: 0] += 1
          if s.failureTimes[reason, default: []].count < 20 { s.failureTimes[reason, default: []].append(now) }
        }
      } else if line.hasPrefix("socket: closed") {
        kind = .closed
        s.connected[client] = false
        s.synced[client] = false
        if s.mark != nil { s.lost[client] = true }
      } else if line.hasPrefix("sync: ") {
        if line.contains(" page(s); cursor ") {
          kind = .synced
          s.synced[client] = true
          if s.mark != nil && s.lost[client] && s.connected[client] && !s.back[client] {
            s.back[client] = true
            s.backCount += 1
          }
        } else {
          kind = .syncFailed
          if s.mark != nil { s.syncFailures[Self.reason(line), default: 0] += 1 }
        }
      } else if line.hasPrefix("socket: reconnecting in ") {
        if s.mark != nil, let seconds = Double(line.dropFirst(24).prefix { $0 != " " }) { s.delays.append(seconds) }
      } else if !line.hasPrefix("metrics: ") {
        s.otherLines[Self.reason(line), default: 0] += 1
      }
      if let kind, s.mark != nil { s.events.append((client, now, kind)) }
    }
  }

  /// A log line with digits folded, so that lines differing only in numbers count together.
  private static func reason(_ line: String) -> String {
    var out = ""
    var lastWasDigit = false
    for ch in line.prefix(160) {
      if ch.isNumber {
        if !lastWasDigit { out.append("N") }
        lastWasDigit = true
      } else {
        out.append(ch)
        lastWasDigit = false
      }
    }
    return out
  }

  func mark(_ time: Double) { state.withLock { $0.mark = time } }
  func upCount() -> Int { state.withLock { s in zip(s.connected, s.synced).filter { $0 && $1 }.count } }
  func allUp() -> Bool { upCount() == clients }
  func allBack() -> Bool { state.withLock { $0.backCount == clients } }

  func json() -> [String: JSONValue] {
    state.withLock { s in
      let counts = { (map: [String: Int]) in JSONValue.object(map.mapValues { .int(Int64($0)) }) }
      return [
        "events": .array(s.events.map { .array([.int(Int64($0.0)), .double($0.1), .string($0.2.rawValue)]) }),
        "back": .int(Int64(s.backCount)),
        "lost": .int(Int64(s.lost.filter { $0 }.count)),
        "failures": counts(s.failures),
        "failureTimes": .object(s.failureTimes.mapValues { .array($0.map { .double($0) }) }),
        "syncFailures": counts(s.syncFailures), "otherLines": counts(s.otherLines),
        "delays": .array(s.delays.map { .double($0) }),
      ]
    }
  }
}

/// A count shared between tasks.
final class Counter: Sendable {
  private let count = Locked(0)
  func add() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}
