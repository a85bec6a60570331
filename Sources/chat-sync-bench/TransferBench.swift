import ChatCLI
import ChatStore
import ChatSync
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `chat-sync-bench transfer`: uploads a file through the relay with ``MediaTransfer``
/// (tus, a chunk a PATCH) and downloads it back, as `chat-sync` will for attachments.
/// The upload's URL is kept in `--state` before the first byte goes, so a run killed
/// part-way resumes there (the bench kills it at random points); `--download` fetches
/// the media to a file (resuming a `.part` left by a killed run).
enum TransferBench: ParsableCommand {
  typealias Result = EmptyResult
  static let name = "transfer"
  static let abstract = "Upload a file to the relay (resumable), or download it back, timing it as JSON."

  struct Options: ParsableOptions {
    var server: String
    var tokenFile: String
    var file: String
    var state: String
    var download: String?
    var chunk: Int64
    var sha256: String?
    var out: String?
    init(_ o: inout OptionReader) {
      server = o.option("--server", valueName: "url", help: "The relay.", required: true) ?? ""
      tokenFile =
        o.option("--token-file", valueName: "path", help: "A file holding the token.", required: true) ?? ""
      file = o.option("--file", valueName: "path", help: "The file to upload.", required: true) ?? ""
      state =
        o.option(
          "--state", valueName: "path", help: "Where the upload's URL and media id are kept between runs.",
          required: true) ?? ""
      download = o.option(
        "--download", valueName: "path", help: "Download the uploaded media to this file instead of uploading.")
      chunk =
        o.option("--chunk", valueName: "size", help: "Bytes a request (default 4MiB).", parse: Parse.size) ?? (4 << 20)
      sha256 = o.option(
        "--sha256", valueName: "hex", help: "The file's SHA-256 (default: computed first, which takes a while).")
      out = o.option("--out", valueName: "path", help: "Where to write the JSON (default: stdout).", parse: Parse.path)
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    // Chunks of megabytes come and go: kept on the heap for reuse rather than mapped
    // and faulted in afresh each time (as `chat-sync run` does for its transfers).
    Heap.keepFreedMemoryForReuse(trimThreshold: 64 << 20, mmapThreshold: 32 << 20)
    let token = try String(contentsOfFile: options.tokenFile, encoding: .utf8).trimmingCharacters(
      in: .whitespacesAndNewlines)
    guard let base = URL(string: options.server) else { throw ValidationError("--server: not a URL") }
    let transfer = MediaTransfer(http: .libwebsockets(base: base, token: token), chunkSize: Int(options.chunk))
    var info = stat()
    guard stat(options.file, &info) == 0 else { throw ValidationError("\(options.file): no such file") }
    let size = Int64(info.st_size)
    // The file's SHA-256 is known before a transfer (the media store names files by it).
    guard
      let digest = options.sha256.map({ SHA256.bytes(hex: $0.lowercased()) ?? [] })
        ?? SHA256.digest(ofFile: options.file, length: size),
      digest.count == 32
    else { throw ValidationError("\(options.file): cannot read it, or --sha256 is not 64 hex digits") }
    let started = wallClock()
    let startedCPU = cpuSeconds()
    // One line "URL [MEDIA]" in the state file.
    let saved =
      (try? String(contentsOfFile: options.state, encoding: .utf8))?.split(separator: " ").map(String.init) ?? []
    var sent: Int64 = 0
    var mediaID: Int64
    if let destination = options.download {
      guard saved.count == 2, let media = Int64(saved[1].trimmingCharacters(in: .whitespacesAndNewlines)) else {
        throw ValidationError("\(options.state): no media id yet; upload first")
      }
      mediaID = media
      try blocking { try await transfer.download(media: media, size: size, sha256: digest, to: destination) }
    } else {
      let url: String
      if let first = saved.first, !first.isEmpty {
        url = first.trimmingCharacters(in: .whitespacesAndNewlines)
      } else {
        url = try blocking { try await transfer.create(length: size, sha256: digest, mime: "application/octet-stream") }
        try (url + "\n").write(toFile: options.state, atomically: true, encoding: .utf8)
      }
      let before = try blocking { try await transfer.offset(of: url) }?.offset ?? 0
      let progress = Locked<Int64>(before)
      mediaID = try blocking {
        try await transfer.send(file: options.file, to: url) { offset in progress.withLock { $0 = offset } }
      }
      sent = progress.withLock { $0 } - before
      try "\(url) \(mediaID)\n".write(toFile: options.state, atomically: true, encoding: .utf8)
    }
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let result: JSONValue = .object([
      "media": .int(mediaID), "bytes": .int(size), "sent": .int(sent), "seconds": .double(wallClock() - started),
      "cpuSeconds": .double(cpuSeconds() - startedCPU), "maxRSSKiB": .int(Int64(usage.ru_maxrss)),
    ])
    if let out = options.out { try writeJSON(result, to: out) } else { print(result.render(pretty: false)) }
  }
}
