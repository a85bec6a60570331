import ChatStore
import Testing

@testable import ChatMaintenance

/// A generated history split by kind, for assertions.
struct GeneratedHistory: Sendable {
  var options: HistoryGenerator.Options
  var records: [Record] = []
  var users: [User] = []
  var messages: [Message] = []
  var requests: [MessageRequest] = []

  init(_ options: HistoryGenerator.Options) {
    self.options = options
    var records: [Record] = []
    HistoryGenerator(options).generate { records.append($0) }
    self.records = records
    for record in records {
      switch record {
      case .user(let user): users.append(user)
      case .message(let message): messages.append(message)
      case .request(let request): requests.append(request)
      case .edit: break  // the generator writes an edit as its message again, never as history
      }
    }
  }

  init(owner: Int64 = 1, contacts: Int, messages: Int, seed: UInt64 = 7, pending: Int = 20, failed: Int = 5) {
    var options = HistoryGenerator.Options(owner: owner, contacts: contacts, messages: messages, seed: seed)
    options.pending = pending
    options.failed = failed
    self.init(options)
  }

  /// The owner's messages and the incoming ones, by conversation, in id order.
  func conversations() -> [Int64: [Message]] {
    var result: [Int64: [Message]] = [:]
    for message in messages { result[message.conversationID(owner: options.owner), default: []].append(message) }
    return result
  }

  // Shared histories: generated once per test process.
  static let small = GeneratedHistory(contacts: 30, messages: 20_000, seed: 11)
  static let medium = GeneratedHistory(contacts: 100, messages: 50_000, seed: 12)
  static let large = GeneratedHistory(contacts: 200, messages: 200_000, seed: 13)
}

extension GeneratedHistory: CustomTestStringConvertible {
  var testDescription: String { "\(options.contacts) contacts, \(options.messages) messages, seed \(options.seed)" }
}
