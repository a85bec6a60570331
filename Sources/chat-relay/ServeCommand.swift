import ChatCLI
import ChatRelay
import ChatStore
import Foundation

/// `chat-relay serve`: run the relay until SIGINT or SIGTERM.
enum ServeCommand: ParsableCommand {
  static let name = "serve"
  static let abstract = "Serve the relay's HTTP API and WebSocket until interrupted."
  static let discussion: String? = """
    Serves an existing relay database (made by 'chat-relay user add'), or with --create \
    a new empty one. Listens on 127.0.0.1 unless --host says otherwise; --port 0 picks a free port. \
    With --tls-cert and --tls-key it serves HTTPS and WSS on that port (TLS 1.2 at \
    least); without them, plain HTTP, on loopback only unless --insecure-plaintext. \
    Prints 'listening on http://HOST:PORT' (https://) on standard error once ready, then one line \
    per connection and request (never message content or tokens). SIGINT or SIGTERM \
    closes the sockets (1001) and stops; with --json the envelope (requests served) is \
    printed then. See docs/protocol.md for the API and the faults.
    """

  static let examples = [
    "chat-relay serve --db relay.db",
    "chat-relay serve --db new-relay.db --create --port 0 --max-media-size 1GiB --upload-expiry 48",
    "chat-relay serve --db relay.db --host 0.0.0.0 --port 443 --tls-cert relay.crt --tls-key relay.key",
  ]

  struct Options: ParsableOptions {
    var database: RelayDatabase
    var host: String
    var port: Int
    var faults: String?
    var faultsSeed: UInt64
    var pushWebhook: URL?
    var pushWebhookCAFile: String?
    var idempotencyDays: Int
    var retentionDays: Int
    var editWindowHours: Int
    var maxMediaSize: Int64
    var uploadExpiryHours: Int
    var pingSeconds: Int
    var tlsCertificate: String?
    var tlsKey: String?
    var insecurePlaintext: Bool
    var create: Bool
    init(_ o: inout OptionReader) {
      database = RelayDatabase(&o)
      host =
        o.option(
          "--host", valueName: "address", help: "The address to listen on (default 127.0.0.1).", parse: Parse.path)
        ?? "127.0.0.1"
      port =
        o.option(
          "--port", valueName: "n", help: "The TCP port (default 8080; 0 picks a free one).",
          parse: Parse.count(from: 0, to: 65_535)) ?? 8080
      faults = o.option(
        "--faults", valueName: "list",
        help:
          "Inject faults: name=probability,… (drop-response, error-503, throttle-429, duplicate-event, close-socket) and delay-event=<n>ms.",
        parse: { text in
          _ = try Faults.parse(text, seed: 1)
          return text
        })
      faultsSeed =
        o.option(
          "--faults-seed", valueName: "n", help: "Seed of the fault generator (default 1).", parse: { UInt64($0) }) ?? 1
      pushWebhook = o.option(
        "--push-webhook", valueName: "url", help: "Also POST each push notification (ids only) to this URL."
      ) { text -> URL? in
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
          throw InvalidValue("expected an http:// or https:// URL")
        }
        return url
      }
      pushWebhookCAFile = o.option(
        "--push-webhook-ca-file", valueName: "file",
        help: "Trust only this file's CAs (PEM) for an https:// --push-webhook (default: the system's).",
        parse: Parse.path)
      idempotencyDays =
        o.option(
          "--idempotency-days", valueName: "n",
          help:
            "How long a request id keeps naming its message after the message was made, once the message has left (default 7).",
          parse: Parse.count(from: 1, to: 3650)) ?? 7
      retentionDays =
        o.option(
          "--retention-days", valueName: "n",
          help:
            "How long messages stay in their users' logs, for devices added later (default 30; 0: until every device of both users acknowledged them, 30 days at most).",
          parse: Parse.count(from: 0, to: 3650)) ?? 30
      editWindowHours =
        o.option(
          "--edit-window", valueName: "hours",
          help: "How long after sending a message its sender can edit it or delete it for everyone (default 48).",
          parse: Parse.count(from: 0, to: 87600)) ?? 48
      maxMediaSize =
        o.option(
          "--max-media-size", valueName: "size",
          help: "The largest media a client may upload, e.g. 100MiB or 2GiB (default 100MiB).", parse: Parse.size)
        ?? (100 << 20)
      uploadExpiryHours =
        o.option(
          "--upload-expiry", valueName: "hours",
          help: "How long an upload (and media no message names) lasts on the relay (default 24).",
          parse: Parse.count(from: 1, to: 87600)) ?? 24
      pingSeconds =
        o.option(
          "--ping-seconds", valueName: "n",
          help: "Ping a socket idle this long; close one silent for twice it (its user goes offline) (default 30).",
          parse: Parse.count(from: 1, to: 3600)) ?? 30
      tlsCertificate = o.option(
        "--tls-cert", valueName: "file",
        help: "Serve HTTPS and WSS with this certificate chain (PEM; with --tls-key).", parse: Parse.path)
      tlsKey = o.option(
        "--tls-key", valueName: "file", help: "The certificate's private key (PEM, mode 0600; with --tls-cert).",
        parse: Parse.path)
      insecurePlaintext = o.flag(
        "--insecure-plaintext",
        help: "Serve plain HTTP on an address other than loopback (tokens and messages cross the network in clear).")
      create = o.flag(
        "--create", help: "Create the database when missing: a relay with no users yet (add them with 'user add').")
    }

    func validate() throws {
      if pushWebhookCAFile != nil && pushWebhook?.scheme?.lowercased() != "https" {
        throw ValidationError("'--push-webhook-ca-file <file>' goes with an https:// '--push-webhook <url>'")
      }
      guard (tlsCertificate == nil) == (tlsKey == nil) else {
        throw ValidationError("'--tls-cert <file>' and '--tls-key <file>' go together")
      }
      if tlsCertificate == nil && !insecurePlaintext && !Self.isLoopback(host) {
        throw ValidationError(
          "'--host \(host)' without TLS would send tokens and messages in clear: pass '--tls-cert <file>' and '--tls-key <file>', or '--insecure-plaintext'"
        )
      }
    }

    /// 127.0.0.0/8, ::1 and localhost: the addresses no other machine reaches.
    static func isLoopback(_ host: String) -> Bool {
      var v4 = in_addr()
      if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
      return host == "::1" || host == "[::1]" || host.lowercased() == "localhost"
    }

    /// The TLS files, checked: both readable, the key readable by its owner alone.
    func tls() throws -> RelayTLS? {
      guard let tlsCertificate, let tlsKey else { return nil }
      for path in [tlsCertificate, tlsKey] where access(path, R_OK) != 0 {
        throw StoreError(
          errno == ENOENT ? .notFound : .permission, "\(path): cannot read it (\(String(cString: strerror(errno))))",
          path: path)
      }
      try FileSystem.requireOwnerOnly(tlsKey, what: "the private key")
      return RelayTLS(certificatePath: tlsCertificate, keyPath: tlsKey)
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    if !options.create { try options.database.requireExisting() }
    Heap.keepFreedMemoryForReuse()
    if let ca = options.pushWebhookCAFile, access(ca, R_OK) != 0 {
      throw StoreError(
        errno == ENOENT ? .notFound : .permission, "\(ca): cannot read it (\(String(cString: strerror(errno))))",
        path: ca)
    }
    let faults = try options.faults.map { try Faults.parse($0, seed: options.faultsSeed) } ?? Faults()
    let relay = try Relay(
      databasePath: options.database.path, faults: faults, pushWebhook: options.pushWebhook,
      pushWebhookCAFile: options.pushWebhookCAFile,
      idempotencyDays: options.idempotencyDays, retention: Retention(days: options.retentionDays),
      editWindowHours: options.editWindowHours,
      media: MediaLimits(maxMediaSize: options.maxMediaSize, uploadExpiryHours: options.uploadExpiryHours))
    let log = context.stderr
    let tls = try options.tls()
    let server: RelayServer
    do {
      server = try RelayServer(
        host: options.host, port: options.port, tls: tls, pingSeconds: options.pingSeconds,
        handlers: relay.handlers(log: { log.writeLine($0) }))
    } catch let error as RelayServerError {
      throw ServeFailure(status: error.kind == .tls ? .dataError : .unavailable, message: error.message)
    }
    relay.attach(server)
    // Signals end the service loop from a dispatch queue; the loop runs on this thread.
    var sources: [DispatchSourceSignal] = []
    for number in [SIGINT, SIGTERM] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { server.stop() }
      source.resume()
      sources.append(source)
    }
    let scheme = tls == nil ? "http" : "https"
    log.writeLine("listening on \(scheme)://\(options.host):\(server.port) (\(options.database.path))")
    server.run()
    sources.forEach { $0.cancel() }
    log.writeLine("stopped")
    try options.database.report(context, Result(host: options.host, port: Int(server.port)), text: "")
  }

  /// `result`, when the relay stops: where it listened.
  struct Result: CommandResult {
    var host: String
    var port: Int

    static var example: Result { Result(host: "127.0.0.1", port: 8080) }
  }
}

/// `serve` could not start: its address (69) or its TLS files (65), in one line.
struct ServeFailure: Error, ExitCodeProviding, CustomStringConvertible {
  var status: ExitCode
  var message: String
  var exitCode: Int32 { status.rawValue }
  var description: String { message }
}
