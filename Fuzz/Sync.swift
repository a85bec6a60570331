// Fuzz target `sync`: the sync client's decoding of what the relay sends, and what the
// engine does with it: socket events through `SyncEngine.handle` (parse, then store the
// message, apply the status update, presence, acknowledgement), answers to a POST
// through `RelayAPI.outcome`, and sync pages and profiles through `RelayAPI.decode`
// into the user's file as the engine stores them.
//
// Input: byte 0 picks the mode (0: a socket text frame; 1: a POST answer, byte 1 the
// status (a common one, or 516 to 610), then `name: value` header lines, a blank line and the body; 2: a sync page or
// a profile list as the body of a 200).
// Invariants: nothing traps; the fast readers of per-message events and batch answers accept
// only what JSONDecoder reads the same way; a POST answer is sorted as docs/protocol.md says (401 is
// unauthorized, 429/5xx/408 retryable with Retry-After within 0…3600 s, 201 accepted
// only with the message it carries); what decodes is stored or refused, never a trap.

import ChatProtocol
import ChatStore
import Foundation

@testable import ChatSync

#if canImport(Glibc)
  import Glibc
#endif

private final class NoSocket: RelaySocket {
  let messages = AsyncStream<String> { $0.finish() }
  func send(_ text: String) {}
  func close() {}
}

private let folder: String = {
  let path = (getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/chatdb-fuzz-\(getpid())-sync"
  try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  atexit {
    try? FileManager.default.removeItem(
      atPath: (getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/chatdb-fuzz-\(getpid())-sync")
  }
  return path
}()
private let repository: ChatRepository = {
  let repository = try! ChatRepository.open(user: 1, in: folder)
  try! repository.upsert(User(id: 2, name: "Bob"))
  return repository
}()
private let engine = SyncEngine(
  repository: try! ChatRepository.open(user: 1, in: folder),
  http: HTTPTransport { _ in HTTPReply(status: 200, body: Array(#"{"users":[]}"#.utf8)) },
  socket: SocketConnector { NoSocket() })

/// Runs `body` on the cooperative pool and waits for it (libFuzzer calls in synchronously).
private func wait(_ body: @escaping @Sendable () async -> Void) {
  let done = DispatchSemaphore(value: 0)
  Task {
    await body()
    done.signal()
  }
  done.wait()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSync(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = input(data, size)
  guard size >= 2 else { return 0 }
  switch data[0] % 3 {
  case 0:
    let text = String(decoding: bytes[1...], as: UTF8.self)
    _ = RelayEvent.parse(text)
    // The fast readers accept only what JSONDecoder reads the same way.
    if let plain = ServerEvent.parsePlain(text) {
      require(plain == (try? WireJSON.decode(ServerEvent.self, from: text)), "parsePlain: \(text)")
    }
    if let plain = MessageBatchAnswer.parsePlain(Array(bytes[1...])) {
      require(
        plain == (try? WireJSON.decode(MessageBatchAnswer.self, from: Array(bytes[1...]))), "batch parsePlain: \(text)")
    }
    wait { await engine.handle(text) }
  case 1:
    let statuses = [200, 201, 400, 401, 403, 404, 405, 408, 409, 413, 429, 500, 503]
    let code = Int(data[1])
    let reply = answer(status: code < 208 ? statuses[code % 13] : code * 2 + 100, Array(bytes[2...]))
    let outcome = RelayAPI.outcome(of: reply)
    switch (reply.status, outcome) {
    case (401, .unauthorized): break
    case (401, _): require(false, "401 sorted as \(outcome)")
    case (_, .retryable(_, let after)):
      require(
        [200, 201, 408, 429].contains(reply.status) || (500...599).contains(reply.status),
        "\(reply.status) sorted as retryable")
      if let after {
        require(reply.status == 429 && after >= 0 && after <= 3_600, "retry after \(after) s for \(reply.status)")
      }
    case (200, .accepted(let message, _, _)), (201, .accepted(let message, _, _)):
      let answer = try? WireJSON.decode(MessagePostAnswer.self, from: reply.body)
      require(
        answer?.message.messageId == message.id,
        "accepted \(message) from \(String(decoding: reply.body, as: UTF8.self))")
    case (_, .accepted): require(false, "\(reply.status) sorted as accepted")
    case (_, .unreachable): require(false, "an answer (\(reply.status)) sorted as unreachable")
    case (_, .outOfOrder): require(false, "a single POST's \(reply.status) sorted as out of order (only a batch is)")
    case (_, .rejected), (_, .unauthorized):
      require(
        !(500...599).contains(reply.status) && reply.status != 429 && reply.status != 408,
        "\(reply.status) sorted as \(outcome)")
    }
  default:
    let reply = HTTPReply(status: 200, body: Array(bytes[1...]))
    if let page: MessagesPage = try? RelayAPI.decode(reply, "GET /v2/messages") {
      let messages = page.messages.map(\.model)
      // As SyncEngine.store: stand-in profiles for unknown contacts, then one transaction.
      let contacts = (try? repository.unknownUsers(messages.map { $0.conversationID(owner: 1) })) ?? []
      _ = try? repository.receive(
        messages, users: contacts.map { User(id: $0, name: "user \($0)") }, messageCursor: messages.last?.id)
    }
    if let list: UserList = try? RelayAPI.decode(reply, "GET /v2/users") {
      for user in list.users { _ = try? repository.upsert(user.model) }
    }
  }
  return 0
}

/// `name: value` lines (names lowercased), a blank line, then the body.
private func answer(status: Int, _ bytes: [UInt8]) -> HTTPReply {
  let text = String(decoding: bytes, as: UTF8.self)
  guard let blank = text.range(of: "\n\n") else { return HTTPReply(status: status, body: bytes) }
  var headers: [String: String] = [:]
  for line in text[..<blank.lowerBound].split(separator: "\n") {
    guard let colon = line.firstIndex(of: ":") else { continue }
    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
  }
  return HTTPReply(status: status, headers: headers, body: Array(text[blank.upperBound...].utf8))
}
