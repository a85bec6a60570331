import ChatStore
import Foundation
import Testing

@testable import ChatSync

/// A temporary data folder, removed afterwards.
func withDataFolder<T>(_ body: (String) async throws -> T) async throws -> T {
  let url = FileManager.default.temporaryDirectory.appendingPathComponent(
    "chatsync-tests-\(UUID().uuidString)", isDirectory: true)
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  // KEEP_TEST_DATA=1 keeps the folder (logs, files) for a look after a failure.
  defer {
    if ProcessInfo.processInfo.environment["KEEP_TEST_DATA"] == nil { try? FileManager.default.removeItem(at: url) }
  }
  return try await body(url.path)
}

/// User 1's file with contacts 2 and 3.
func ownerRepository(in folder: String) throws -> ChatRepository {
  let repository = try ChatRepository.open(user: 1, in: folder)
  try repository.upsert(User(id: 2, name: "Bob"))
  try repository.upsert(User(id: 3, name: "Cy"))
  return repository
}

/// A relay in memory behind an `HTTPTransport`: answers POSTs with messages (ids rising)
/// after `script` had its say, and records every call.
final class ScriptedRelay: Sendable {
  /// What to do with the n-th POST (0-based) before the normal answer; nil = answer.
  typealias Script = @Sendable (_ attempt: Int, _ call: HTTPCall) async throws -> HTTPReply?

  struct State {
    var calls: [HTTPCall] = []
    var posts = 0
    var nextID: Int64 = 1 << 20
    var accepted: [Int64: Int64] = [:]  // requestId -> messageId
    var syncPages: [String] = []
  }
  let state = Locked(State())
  let script: Script

  init(script: @escaping Script = { _, _ in nil }) { self.script = script }

  var transport: HTTPTransport {
    HTTPTransport { [self] call in
      let attempt = state.withLock { state -> Int in
        state.calls.append(call)
        if call.method == "POST" { state.posts += 1 }
        return state.posts - 1
      }
      if call.method == "POST", let reply = try await script(attempt, call) { return reply }
      return answer(call)
    }
  }

  func answer(_ call: HTTPCall) -> HTTPReply {
    if call.method == "GET", call.path.hasPrefix("/v2/messages") {
      let page = state.withLock {
        $0.syncPages.isEmpty ? #"{"messages":[],"hasMore":false,"statusUpdates":[]}"# : $0.syncPages.removeFirst()
      }
      return HTTPReply(status: 200, body: Array(page.utf8))
    }
    if call.method == "GET", call.path == "/v2/me" {
      return HTTPReply(
        status: 200, body: Array(#"{"user":{"id":1,"name":"Ann","avatarUrl":null,"lastConnectedAt":null}}"#.utf8))
    }
    if call.method == "GET", call.path.hasPrefix("/v2/users") {
      return HTTPReply(
        status: 200, body: Array(#"{"users":[{"id":9,"name":"Nine","avatarUrl":null,"lastConnectedAt":null}]}"#.utf8))
    }
    struct Post: Decodable {
      var requestId: Int64
      var toUserId: Int64
      var content: String
      var createdAt: String
    }
    struct Batch: Decodable {
      var messages: [Post]
      var after: Int64?
    }
    // One message as the relay renders it, and whether it was a replay.
    func accept(_ post: Post) -> (json: String, replayed: Bool) {
      let (id, replayed) = state.withLock { state -> (Int64, Bool) in
        if let id = state.accepted[post.requestId] { return (id, true) }
        state.nextID += 1
        state.accepted[post.requestId] = state.nextID
        return (state.nextID, false)
      }
      return (
        #"{"messageId":\#(id),"fromUserId":1,"toUserId":\#(post.toUserId),"content":\#(String(decoding: try! JSONEncoder().encode(post.content), as: UTF8.self)),"status":"SYNCED","createdAt":"\#(post.createdAt)"}"#,
        replayed
      )
    }
    if call.path == "/v2/messages/batch" {
      let batch = try! JSONDecoder().decode(Batch.self, from: Data(call.body ?? []))
      // As the relay: a batch that names a request not stored yet is not tried.
      if let after = batch.after, state.withLock({ $0.accepted[after] == nil }) {
        let body =
          #"{"error":{"code":"out_of_order","message":"request \#(after) is not on the relay yet","field":"after"}}"#
        return HTTPReply(status: 409, body: Array(body.utf8))
      }
      let results = batch.messages.map { post in
        let (json, replayed) = accept(post)
        return #"{"fromMessageRequestId":\#(post.requestId),"message":\#(json),"replayed":\#(replayed)}"#
      }
      return HTTPReply(status: 200, body: Array(#"{"results":[\#(results.joined(separator: ","))]}"#.utf8))
    }
    let post = try! JSONDecoder().decode(Post.self, from: Data(call.body ?? []))
    let (json, replayed) = accept(post)
    let body = #"{"message":\#(json),"fromMessageRequestId":\#(post.requestId)}"#
    return HTTPReply(status: 201, headers: replayed ? ["idempotent-replayed": "true"] : [:], body: Array(body.utf8))
  }

  var posts: [HTTPCall] { state.withLock { $0.calls.filter { $0.method == "POST" } } }
}

/// A socket the test drives: `deliver` plays the relay, `sent` is what the client wrote.
final class FakeSocket: RelaySocket, @unchecked Sendable {
  // @unchecked: `continuation` is thread-safe; `sentTexts` is behind a `Locked`.
  let messages: AsyncStream<String>
  private let continuation: AsyncStream<String>.Continuation
  private let sentTexts = Locked<[String]>([])

  init() { (messages, continuation) = AsyncStream.makeStream(of: String.self) }

  func deliver(_ text: String) { continuation.yield(text) }
  func send(_ text: String) { sentTexts.withLock { $0.append(text) } }
  func close() { continuation.finish() }
  var sent: [String] { sentTexts.withLock { $0 } }
}

func connector(_ socket: FakeSocket?) -> SocketConnector {
  SocketConnector {
    guard let socket else { throw TransportError("connection refused") }
    return socket
  }
}

/// Waits (polling, bounded) until `condition` holds.
func eventually(timeout: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
  let deadline = Date().addingTimeInterval(timeout)
  while Date() < deadline {
    if try await condition() { return true }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return try await condition()
}

extension SyncEngine.Options {
  /// Fast and deterministic: jitter draws 0.5, small batches.
  static var test: SyncEngine.Options {
    var options = SyncEngine.Options()
    options.random = { 0.5 }
    options.batchDelay = 0.01
    options.replyTimeout = 2
    // One message per POST, as each test scripts its answers; `SyncEngineTests` has its batch tests.
    options.batchSize = 1
    if ProcessInfo.processInfo.environment["SYNC_TEST_LOG"] != nil { options.log = { print("LOG", $0) } }
    options.outboxBackoff = Backoff(base: 0.05, cap: 0.2, jitter: .full)
    options.reconnectBackoff = Backoff(base: 0.05, cap: 0.2, jitter: .proportional(0.5))
    return options
  }
}
