import ChatCLI
import ChatStore
import ChatSync
import Foundation

/// `--data-dir`/`--user`/`--db`: the one file a `chat-sync` command works on.
struct ClientFile: Sendable {
  var selection: StoreSelection
  init(_ o: inout OptionReader) { selection = StoreSelection(&o, all: false) }

  func validate() throws { try selection.validate() }

  var target: FileTarget { selection.single ?? FileTarget(path: "", userID: nil) }

  /// The owner: `--user`, or the id in the file's name.
  func owner() throws -> Int64 {
    guard let id = target.userID else {
      throw StoreError(
        .badInput, "\(target.path): cannot tell whose file this is; name it chats-<id>.db or use --user",
        path: target.path)
    }
    return id
  }

  /// The repository, creating the file (and its folder) when `create`, migrating it when older.
  func open(create: Bool) throws -> ChatRepository {
    let path = target.path
    let owner = try owner()
    try target.requireInsideDataFolder()
    if !FileSystem.exists(path) {
      guard create else {
        throw StoreError(.notFound, "\(path): no such chat database ('chat-sync send' or 'run' creates it)", path: path)
      }
      let folder = FileSystem.parentFolder(of: path)
      if !FileSystem.exists(folder) { try FileSystem.createPrivateDirectory(atPath: folder) }
    }
    _ = try Migrator().migrate(fileAt: path, owner: owner)
    return try ChatRepository(database: Database(path: path), ownerID: owner)
  }

  /// The one-file report every `chat-sync` command gives.
  func report(_ context: CommandContext, _ result: some CommandResult, text: String, status: ExitCode = .success) throws
  {
    context.report([FileReport(target: target, outcome: .success(try FileResult(result, text: text, status: status)))])
  }
}

/// `<request-id>` and the file: the options of `retry` and `delete`.
struct RequestOptions: ParsableOptions {
  var file: ClientFile
  var requestText: String
  init(_ o: inout OptionReader) {
    file = ClientFile(&o)
    requestText = o.argument("request-id", help: "The request id (chat-sync status, history).") ?? ""
  }
  var request: Int64 { Int64(requestText) ?? 0 }
  func validate() throws {
    try file.validate()
    guard request > 0 else {
      throw ValidationError("<request-id>: '\(requestText)' is not a request id (a positive integer)")
    }
  }
}

/// `--server` and the token: how to reach the relay.
struct RelayAccess: Sendable {
  static let serverVariable = "CHAT_SYNC_SERVER"
  static let tokenVariable = "CHAT_SYNC_TOKEN"
  var server: URL?
  var tokenFile: String?
  var caFile: String?

  init(_ o: inout OptionReader) {
    server =
      o.option(
        "--server", valueName: "url",
        help: "The relay, e.g. https://relay.example or http://127.0.0.1:8080 (default: $\(Self.serverVariable)).",
        parse: Self.parseServer)
      ?? ProcessInfo.processInfo.environment[Self.serverVariable].flatMap { try? Self.parseServer($0) }
    tokenFile = o.option(
      "--token-file", valueName: "path",
      help: "A file (mode 0600) holding the token (default: $\(Self.tokenVariable)).",
      parse: Parse.path)
    caFile = o.option(
      "--ca-file", valueName: "path",
      help: "Trust only the CA certificates (PEM) in this file for an https:// relay (default: the system's).",
      parse: Parse.path)
  }

  @Sendable static func parseServer(_ text: String) throws -> URL? {
    guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", let host = url.host,
      !host.isEmpty
    else {
      throw InvalidValue("expected an http:// or https:// URL such as https://relay.example")
    }
    return url
  }

  func baseURL() throws -> URL {
    guard let server else { throw ValidationError("No relay: pass '--server <url>' or set \(Self.serverVariable)") }
    return server
  }

  /// TLS for an `https://` relay, set up before the first connection: its certificate
  /// checked against `--ca-file` or the system's CAs.
  func setUpTLS(for base: URL) throws {
    guard base.scheme == "https" else {
      if caFile != nil { throw ValidationError("'--ca-file <path>' is for an https:// relay") }
      return
    }
    if let caFile {
      guard FileManager.default.isReadableFile(atPath: caFile) else {
        throw StoreError(.notFound, "\(caFile): no such CA file, or it cannot be read", path: caFile)
      }
    }
    ClientTLS.enable(caFile: caFile)
  }

  /// The token: `--token-file` (refused unless only its owner can read it), else
  /// `$CHAT_SYNC_TOKEN`. Never an argument: arguments show in `ps`.
  func token() throws -> String {
    if let tokenFile {
      try FileSystem.requireOwnerOnly(tokenFile, what: "the token")
      guard let data = FileManager.default.contents(atPath: tokenFile) else {
        throw StoreError(.permission, "\(tokenFile): cannot read the token file", path: tokenFile)
      }
      let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
      guard !token.isEmpty else {
        throw StoreError(.badInput, "\(tokenFile): the token file is empty", path: tokenFile)
      }
      return token
    }
    if let token = ProcessInfo.processInfo.environment[Self.tokenVariable], !token.isEmpty { return token }
    throw ValidationError("No token: set \(Self.tokenVariable) or pass '--token-file <path>'")
  }

  /// HTTP and socket transports to the relay.
  func transports() throws -> (HTTPTransport, SocketConnector) {
    let base = try baseURL()
    let token = try token()
    try setUpTLS(for: base)
    var socket = URLComponents(url: base, resolvingAgainstBaseURL: false)!
    socket.scheme = base.scheme == "https" ? "wss" : "ws"
    socket.path = "/v2/socket/updates"
    return (.libwebsockets(base: base, token: token), .libwebsockets(url: socket.url!, token: token))
  }
}

extension RelayAccess {
  /// Checks with the relay (`GET /v2/me`) that the token is `owner`'s before a command
  /// sends anything: another user's token, or a refused one, ends the command with 77.
  /// Returns false when the relay cannot be reached, or refuses the token while
  /// `refusedIsFatal` is false (`send` then queues offline; `run` reports the token).
  func requireIdentity(_ owner: Int64, http: HTTPTransport, timeout: Double, refusedIsFatal: Bool = true) throws -> Bool
  {
    let requests = RelayRequests(http: http)
    let failure: (any Error)? = blocking {
      do {
        try await requests.requireIdentity(owner, timeout: timeout)
        return nil
      } catch {
        return error
      }
    }
    switch failure {
    case nil: return true
    case let wrong as WrongUserToken: throw OnceFailure(status: .permission, message: wrong.description)
    case let refused as TransportError where refused.certificate:
      throw OnceFailure(status: .permission, message: refused.message)
    case SyncFailure.unauthorized(let reason)? where refusedIsFatal:
      throw OnceFailure(status: .permission, message: "The relay refused the token: \(reason)")
    default: return false
    }
  }
}

/// Runs async work from a synchronous command and waits for it.
func blocking<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
  let box = Box<T>()
  let done = DispatchSemaphore(value: 0)
  Task {
    box.value = await work()
    done.signal()
  }
  done.wait()
  return box.value!
}

private final class Box<T>: @unchecked Sendable {
  // @unchecked: written once before the semaphore is signalled, read after it.
  var value: T?
}

/// Log lines on stderr, each with the time; the lines of one call (separated by
/// newlines) with one write.
@Sendable func logLine(_ lines: String) {
  let now = Timestamp.now()
  var text = ""
  for line in lines.split(separator: "\n", omittingEmptySubsequences: false) {
    text += "\(now) \(line)\n"
  }
  TextOutput.writeAll(text, to: STDERR_FILENO)
}
