import ChatCLI
import ChatStore
import ChatSync
import Foundation

/// `chat-sync run`: the sync client in the foreground.
enum RunCommand: ParsableCommand {
  static let name = "run"
  static let abstract = "Sync with the relay: receive in real time, send the outbox, until Ctrl-C."
  static let discussion: String? = """
    Connects the socket, fetches what arrived while away (from the cursor stored in the \
    file), then sends queued messages and stays connected, reconnecting with backoff. \
    One log line per connection change, send and receipt goes to stderr; the measures \
    every minute and on exit. Standard output stays empty but for --json. 'chat-sync \
    send' from another shell is sent at once. The file's storage policy ('chatdb \
    policy') is enforced when the run starts, hourly, and when the disk falls below the \
    warning level. With --once: sync, send what is due \
    (retrying until --deadline), print the outcome and the measures, and exit: 0 when \
    the outbox is empty, 7 when messages are left in it, 69 when the relay is unreachable.
    """

  static let examples = [
    "chat-sync run --user 42 --server http://127.0.0.1:8080",
    "chat-sync run --user 42 --server http://relay.example:8080 --once --deadline 30",
    "chat-sync run --db ./chats-42.db --server http://127.0.0.1:8080 --token-file ./token --once --json",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var relay: RelayAccess
    var once: Bool
    var deadline: Int
    var maxAttempts: Int
    var maxAgeHours: Int
    var autoDownloadMax: Int64
    var autoDownloadKinds: Set<MediaKind>
    var mediaChunkSize: Int
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      relay = RelayAccess(&o)
      once = o.flag("--once", help: "Sync and send once, then exit with the outcome.")
      deadline =
        o.option(
          "--deadline", valueName: "seconds", help: "With --once: how long to keep retrying sends (default 30).",
          parse: Parse.count(from: 1, to: 3_600)) ?? 30
      let defaults = SyncEngine.Options()
      maxAttempts =
        o.option(
          "--max-attempts", valueName: "n",
          help:
            "Failed sends that reached the relay (5xx, 429, no answer) before a message fails for good (default \(defaults.maxAttempts)).",
          parse: Parse.count(from: 1, to: 1_000_000)) ?? defaults.maxAttempts
      maxAgeHours =
        o.option(
          "--max-age", valueName: "hours",
          help: "A message older than this whose send fails fails for good (default \(Int(defaults.maxAge / 3_600))).",
          parse: Parse.count(from: 1, to: 87_600)) ?? Int(defaults.maxAge / 3_600)
      autoDownloadMax =
        o.option(
          "--auto-download-max", valueName: "size",
          help:
            "Download received media up to this size at once, like 5MiB (default \(ByteCount.format(defaults.autoDownloadMax)); 0: none). Others wait for 'chat-sync fetch'.",
          parse: ByteCount.parse) ?? defaults.autoDownloadMax
      autoDownloadKinds =
        o.option(
          "--auto-download-kinds", valueName: "list",
          help: "Which kinds are downloaded at once: image, video, audio, file, comma-separated (default image).",
          parse: { text in
            let kinds = text.split(separator: ",").map { MediaKind(rawValue: String($0)) }
            return kinds.contains(nil) || kinds.isEmpty ? nil : Set(kinds.compactMap { $0 })
          }) ?? defaults.autoDownloadKinds
      mediaChunkSize =
        o.option(
          "--media-chunk-size", valueName: "size",
          help:
            "Bytes an upload or download request carries (default \(ByteCount.format(Int64(defaults.mediaChunkSize)))); smaller loses less on a link that drops.",
          parse: { text in ByteCount.parse(text).flatMap { (16 << 10)...(64 << 20) ~= $0 ? Int($0) : nil } })
        ?? defaults.mediaChunkSize
    }
    func validate() throws {
      try file.validate()
      _ = try relay.baseURL()
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    // Ctrl-C / SIGTERM: in-flight sends end, the socket closes, the file is left whole.
    // Caught before anything else (a signal while the file opens must not kill the run):
    // one that comes before the engine exists stops it as soon as it does.
    let stop = Locked<(signal: Int32?, engine: SyncEngine?)>((nil, nil))
    let signals = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler {
        logLine("stopping (signal \(number))")
        let engine = stop.withLock { state -> SyncEngine? in
          state.signal = number
          return state.engine
        }
        if let engine { Task { await engine.stop() } }
      }
      source.resume()
      return source
    }
    defer { signals.forEach { $0.cancel() } }
    let (http, socket) = try options.relay.transports()
    let path = options.file.target.path
    let repository = try options.file.open(create: true)
    let listener = try? NudgeListenerBox(database: path)
    if listener == nil && NudgeListener.isRunning(on: path) {
      throw StoreError(.busy, "\(path): another 'chat-sync run' is syncing this file", path: path)
    }
    var engineOptions = SyncEngine.Options()
    engineOptions.log = logLine
    engineOptions.maxAttempts = options.maxAttempts
    engineOptions.maxAge = Double(options.maxAgeHours) * 3_600
    engineOptions.autoDownloadMax = options.autoDownloadMax
    engineOptions.autoDownloadKinds = options.autoDownloadKinds
    engineOptions.mediaChunkSize = options.mediaChunkSize
    let engine = SyncEngine(repository: repository, http: http, socket: socket, options: engineOptions)
    listener?.engine = engine
    defer { listener?.close() }
    let signalled = stop.withLock { state -> Bool in
      state.engine = engine
      return state.signal != nil
    }
    if signalled { blocking { await engine.stop() } }

    // The file's storage policy (`chatdb policy`), beside the sync.
    let keeper = PolicyKeeper(path: path, log: logLine)
    if options.once {
      let outcome = blocking { await engine.runOnce(deadline: Double(options.deadline)) }
      _ = keeper.enforceOnce(reason: "run --once")
      let metrics = blocking { await engine.metrics }
      let (status, text): (ExitCode, String) =
        switch outcome {
        case .done: (.success, "Synced; the outbox is empty.")
        case .unsent(let waiting, let permanent):
          (.unsent, "Synced; \(waiting) message(s) wait for a retry, \(permanent) failed for good (chat-sync status).")
        case .unreachable(let reason): (.unavailable, "The relay could not be reached: \(reason)")
        case .unauthorized(let reason): (.permission, reason)
        }
      if status == .unavailable || status == .permission { throw OnceFailure(status: status, message: text) }
      try options.file.report(
        context, Result(outcome: status == .success ? "done" : "unsent", metrics: metrics),
        text: text + "\n" + metrics.summary, status: status)
      return
    }

    let reporter = Task {
      while !Task.isCancelled {
        try? await Task.sleep(for: .seconds(60))
        if Task.isCancelled { break }
        logLine("metrics: \(await engine.metrics.summary)")
      }
    }
    logLine(
      "chat-sync run: \(path) as user \(repository.ownerID)\(listener?.isListening == true ? "" : " (no nudge socket: sends from other processes wait for the next event)")"
    )
    keeper.start()
    blocking { await engine.run() }
    keeper.stop()
    reporter.cancel()
    let metrics = blocking { await engine.metrics }
    if let reason = blocking({ await engine.haltReason }) {
      throw OnceFailure(status: .permission, message: reason)
    }
    // The last line of the log, like the others on stderr: standard output carries only
    // the --json envelope (a run in the background writes nothing on the terminal's
    // standard output).
    logLine("stopped; metrics: \(metrics.summary)")
    try options.file.report(context, Result(outcome: "stopped", metrics: metrics), text: "")
  }

  /// `result`: how the run ended (`done`, `unsent` with `--once`; `stopped`) and its
  /// counters (`SyncMetrics`).
  struct Result: CommandResult {
    var outcome: String
    var metrics: SyncMetrics

    static var example: Result {
      var metrics = SyncMetrics()
      metrics.sent = 12
      metrics.received = 30
      metrics.connections = 1
      for latency in [38.5, 41.0, 52.25] { metrics.recordLatency(latency) }
      return Result(outcome: "done", metrics: metrics)
    }
  }
}

/// `run --once` could not sync: the envelope's error with its own row of the table.
struct OnceFailure: Error, ExitCodeProviding, CustomStringConvertible {
  var status: ExitCode
  var message: String
  var exitCode: Int32 { status.rawValue }
  var description: String { message }
}

/// The nudge socket, forwarding each datagram to the engine once it exists.
final class NudgeListenerBox: @unchecked Sendable {
  // @unchecked: `engine` is set once, before `run` starts, and only read afterwards.
  var engine: SyncEngine?
  private var listener: NudgeListener?

  init(database: String) throws {
    listener = nil
    listener = try NudgeListener(database: database) { [weak self] text in
      guard let engine = self?.engine else { return }
      let words = text.split(separator: " ")
      Task {
        switch words.first {
        case "typing" where words.count == 3:
          if let user = Int64(words[1]) { await engine.typing(to: user, words[2] == "1") }
        case "read": await engine.scheduleReceipts()
        default: await engine.nudge()
        }
      }
    }
  }

  var isListening: Bool { listener?.isListening ?? false }
  func close() { listener?.close() }

}
