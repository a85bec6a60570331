import ChatCLI
import ChatStore
import ChatSync
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `chat-sync-bench send`: queues messages the way `chat-sync send` does
/// (`ChatRepository.send`, then the `outbox` nudge to the file's running `chat-sync run`),
/// from one process instead of one process per message, at a fixed rate in bursts.
/// Each request's `created_at` is the moment it was queued; the relay keeps it, so the
/// recipient's `Messages` row carries it too (the start of the send-to-receive latency).
enum SendBench: ParsableCommand {
  /// Prints its own JSON line for scripts/bench, not the envelope.
  typealias Result = EmptyResult
  static let name = "send"
  static let abstract = "Queue messages into a file's outbox at a fixed rate, nudging its 'chat-sync run'."

  struct Options: ParsableOptions {
    var path: String
    var owner: Int64
    var to: Int64
    var count: Int
    var rate: Int
    var burst: Int
    var tag: String
    var out: String?
    init(_ o: inout OptionReader) {
      path =
        o.option(
          "--db", valueName: "path", help: "The sender's chats-<id>.db (its 'chat-sync run' is running).",
          required: true) ?? ""
      owner = o.option("--user", valueName: "id", help: "The file's owner.", required: true, parse: Parse.userID) ?? 0
      to = o.option("--to", valueName: "id", help: "The recipient.", required: true, parse: Parse.userID) ?? 0
      count =
        o.option(
          "--count", valueName: "n", help: "Messages to queue (default 100).",
          parse: Parse.count(from: 1, to: 10_000_000)) ?? 100
      rate =
        o.option(
          "--rate", valueName: "per-second",
          help: "Messages per second; 0 queues them as fast as the file takes them (default 0).",
          parse: Parse.count) ?? 0
      burst =
        o.option(
          "--burst", valueName: "n", help: "Messages queued together before each nudge (default 1).",
          parse: Parse.count(from: 1, to: 1_000_000)) ?? 1
      tag = o.option("--tag", valueName: "word", help: "The first word of every message (default bench).") ?? "bench"
      out = o.option("--out", valueName: "path", help: "Where to write the JSON (default: stdout).", parse: Parse.path)
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    _ = try Migrator().migrate(fileAt: options.path, owner: options.owner, backup: false)
    let chats = try ChatRepository(database: Database(path: options.path), ownerID: options.owner)
    if try chats.user(options.to) == nil { try chats.addPlaceholder(User(id: options.to, name: "user \(options.to)")) }
    // About 80 characters, like the generator's messages.
    let padding = String(repeating: "lorem ipsum dolor sit amet ", count: 3)
    let interval = options.rate > 0 ? Double(options.burst) / Double(options.rate) : 0
    let started = wallClock()
    var first: String?
    var last: String?
    var queued = 0
    var bursts = 0
    var nudged = 0
    var late = 0.0
    while queued < options.count {
      if interval > 0 {
        // Bursts on a fixed schedule from the start, so a slow one does not shift the rest.
        let wait = started + Double(bursts) * interval - wallClock()
        if wait > 0 { usleep(UInt32(wait * 1_000_000)) } else { late = max(late, -wait) }
      }
      for _ in 0..<min(options.burst, options.count - queued) {
        let text = "\(options.tag) \(queued) " + padding.prefix(60)
        let request = try chats.send(to: options.to, content: text)
        if first == nil { first = request.createdAt }
        last = request.createdAt
        queued += 1
      }
      if Nudge.send("outbox", to: options.path) { nudged += 1 }
      bursts += 1
    }
    let result = JSONValue.object([
      "tag": .string(options.tag), "count": .int(Int64(queued)), "rate": .int(Int64(options.rate)),
      "burst": .int(Int64(options.burst)), "bursts": .int(Int64(bursts)), "nudged": .int(Int64(nudged)),
      "firstCreatedAt": first.map { .string($0) } ?? .null, "lastCreatedAt": last.map { .string($0) } ?? .null,
      "startedAt": .double(started), "seconds": .double(wallClock() - started), "maxLateSeconds": .double(late),
    ])
    if let out = options.out {
      try writeJSON(result, to: out)
    } else {
      context.stdout.writeLine(result.render(pretty: false))
    }
  }
}
