import ChatProtocol
import Foundation
import TestSupport
import Testing

/// `docs/protocol.md` is the contract; these tests hold it to the types. Every JSON
/// example in it (the ```json blocks, the inline objects of the prose and the payloads of
/// the event tables) must decode as one of the protocol's types, and name no field the
/// type does not have; every event type the tables list must be one the types know, and
/// the other way round.
@Suite(.ownThreads) struct ProtocolDocTests {
  // MARK: - The doc's examples

  /// One JSON example of the doc, as written there, and where.
  struct Example: CustomStringConvertible {
    enum Kind {
      /// A whole object (a fenced block, or an inline object with values).
      case object
      /// `{"a", "b"}`: only the field names of an object.
      case fieldNames
      /// A row of the server → client table: `type` and its payload.
      case serverEvent(type: String)
      /// A row of the client → server table.
      case clientEvent(type: String)
    }
    var kind: Kind
    var text: String
    var line: Int
    var description: String { "docs/protocol.md:\(line): \(text)" }
  }

  static let doc: String = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("docs/protocol.md")
    return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
  }()

  /// The examples, read block by block: fenced ```json blocks, the two event tables'
  /// rows, and backquoted objects in the prose (a paragraph's lines joined first, as an
  /// example may wrap).
  static let examples: [Example] = {
    var examples: [Example] = []
    let lines = doc.components(separatedBy: "\n")
    var heading = ""
    var index = 0
    var paragraph: [String] = []
    var paragraphLine = 0
    func flushParagraph() {
      defer { paragraph = [] }
      let text = paragraph.joined(separator: " ")
      for span in backquoted(text) {
        var object = span
        // `200 {"ok": true, …}`: an answer with its status.
        if let match = object.firstMatch(of: #/^[1-5][0-9][0-9] /#) { object.removeSubrange(match.range) }
        guard object.hasPrefix("{\"") else { continue }
        let kind: Example.Kind = isFieldNameList(object) ? .fieldNames : .object
        examples.append(Example(kind: kind, text: object, line: paragraphLine))
      }
    }
    while index < lines.count {
      let line = lines[index]
      if line.hasPrefix("```") {
        flushParagraph()
        let language = line.dropFirst(3).trimmingCharacters(in: .whitespaces)
        var body: [String] = []
        let start = index + 1
        index += 1
        while index < lines.count, !lines[index].hasPrefix("```") {
          body.append(lines[index])
          index += 1
        }
        if language == "json" {
          examples.append(Example(kind: .object, text: body.joined(separator: "\n"), line: start))
        }
      } else if line.hasPrefix("#") {
        flushParagraph()
        heading = line
      } else if line.hasPrefix("|") {
        flushParagraph()
        let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
          $0.trimmingCharacters(in: .whitespaces)
        }
        let direction = heading.contains("Server → client") ? 0 : heading.contains("Client → server") ? 1 : -1
        if direction >= 0, cells.count > 3, let type = backquoted(cells[1]).first, !cells[1].contains("type") {
          let payload = cells[2] == "a message" ? "<message>" : (backquoted(cells[2]).first ?? cells[2])
          let kind: Example.Kind = direction == 0 ? .serverEvent(type: type) : .clientEvent(type: type)
          examples.append(Example(kind: kind, text: payload, line: index + 1))
        }
      } else if line.trimmingCharacters(in: .whitespaces).isEmpty || line.hasPrefix("- ") {
        flushParagraph()
        if line.hasPrefix("- ") {
          paragraph = [line]
          paragraphLine = index + 1
        }
      } else {
        if paragraph.isEmpty { paragraphLine = index + 1 }
        paragraph.append(line)
      }
      index += 1
    }
    flushParagraph()
    return examples
  }()

  static func backquoted(_ text: String) -> [String] {
    text.matches(of: /`([^`]+)`/).map { String($0.output.1) }
  }

  static func isFieldNameList(_ text: String) -> Bool {
    text.wholeMatch(of: /\{"[A-Za-z]+"(, *"[A-Za-z]+")*\}/) != nil
  }

  /// The doc's message example, which `<message>` stands for elsewhere.
  static var messageExample: String {
    examples.first { $0.text.contains("\"messageId\"") && $0.text.contains("\"content\"") }?.text ?? "{}"
  }

  /// The example as JSON: the doc's placeholders filled in (`<message>` is the message
  /// example; `[<message>, …]` and `[id, …]` one element; `…` elsewhere null; `[...]`
  /// empty; the names `id` and `seq` standing for numbers, 1).
  static func fillIn(_ text: String) -> String {
    var json = text.replacing(", …]", with: "]").replacing("[...]", with: "[]").replacing("…", with: "null")
    json = json.replacing("<message>", with: messageExample)
    json = json.replacing(/([:\[,] *)(id|seq)\b/) { $0.output.1 + "1" }
    return json
  }

  // MARK: - The types

  /// A protocol type: its field names (from a value with every optional field set) and a
  /// decode-then-encode of JSON bytes.
  struct WireType: CustomStringConvertible, Sendable {
    var name: String
    var fields: Set<String>
    var roundTrip: @Sendable (Data) throws -> Data
    var description: String { name }

    init<T: Codable & SendableMetatype>(_ sample: T) {
      name = "\(T.self)"
      let object = try? JSONSerialization.jsonObject(with: Data(WireJSON.encode(sample)))
      fields = Set((object as? [String: Any])?.keys.map { $0 } ?? [])
      roundTrip = { Data(WireJSON.encode(try JSONDecoder().decode(T.self, from: $0))) }
    }
  }

  static let message = RelayMessage(
    messageId: 10_916_218_899_464_192, fromUserId: 1, toUserId: 2, content: "Hi", createdAt: "2026-01-31T12:00:00.000Z")
  static let user = RelayUser(id: 2, name: "Bob", avatarURL: "https://a", lastConnectedAt: "2026-01-31T11:59:00.000Z")
  static let update = StatusUpdate(
    sequence: 12, type: .messageDelivered, messageId: 9, conversationId: 2, at: "2026-01-31T12:00:01.000Z")

  static let edited = StatusUpdate(
    sequence: 57, type: .messageEdited, messageId: 9, conversationId: 2, at: "2026-01-31T12:03:00.000Z", version: 1,
    content: "Hi, all")

  /// A message with media: every field of an attachment set.
  static let carrying = RelayMessage(
    messageId: 10_916_218_899_464_193, fromUserId: 1, toUserId: 2, content: "", createdAt: "2026-01-31T12:01:00.000Z",
    attachments: [
      RelayAttachment(
        mediaId: 4, mime: "image/jpeg", size: 9, sha256: String(repeating: "0", count: 64), width: 1, height: 1,
        durationMs: 1, thumbnail: "AAAA")
    ])

  /// Every HTTP body of the protocol.
  static let bodies: [WireType] = [
    WireType(message), WireType(carrying), WireType(user),
    WireType(ErrorBody(error: .init(code: "bad_request", message: "m", field: "toUserId"))),
    WireType(MessagePost(requestId: 7, toUserId: 2, content: "Hi", createdAt: "2026-01-31T12:00:00.000Z")),
    WireType(MessagePostAnswer(message: message, fromMessageRequestId: 7)),
    WireType(
      MessageBatchPost(messages: [MessagePost(requestId: 7, toUserId: 2, content: "Hi", createdAt: nil)], after: 6)),
    WireType(
      MessageBatchAnswer(results: [
        MessageBatchResult(fromMessageRequestId: 7, message: message, replayed: false, error: nil),
        MessageBatchResult(
          fromMessageRequestId: 8, message: nil, replayed: nil, error: .init(code: "not_found", message: "m")),
      ])),
    WireType(MessagesPage(messages: [message], hasMore: false, statusUpdates: [update], cursor: 1)),
    WireType(UserList(users: [user])), WireType(TokenOwner(user: user, device: DeviceInfo(id: 3, name: "laptop"))),
    WireType(Health()),
    WireType(PushNotice(toUserId: 2, messageId: 9, fromUserId: 1, unread: 3)),
    WireType(MessageEditPost(requestId: 31, content: "Hi, all")), WireType(MessageDeletePost(requestId: 32)),
    WireType(MessageChangeAnswer(fromMessageRequestId: 31, update: edited, replayed: false)),
  ]

  /// A value of each server → client event type, by type.
  static let serverEvents: [String: ServerEvent] = Dictionary(
    uniqueKeysWithValues: [
      ServerEvent.newMessage(message), .messageDelivered(update), .messageRead(update), .conversationRead(update),
      .messageEdited(edited), .messageDeleted(update),
      .contactStatusUpdate(
        ContactStatus(userId: 2, online: true, lastSeenAt: nil, typing: true, typingExpiresInMs: 5_000)),
      .deliveryAcknowledged(MessageIDs(messageIds: [9])), .readAcknowledged(ReadMark(conversationId: 2, upTo: 9)),
      .error(EventError(code: "bad_request", message: "m")),
    ].map { ($0.type, $0) })

  /// A value of each client → server event type, by type.
  static let clientEvents: [String: ClientEvent] = Dictionary(
    uniqueKeysWithValues: [
      ClientEvent.deliveryAck(MessageIDs(messageIds: [9])), .read(ReadMark(conversationId: 2, upTo: 9)),
      .typing(TypingSignal(toUserId: 2, typing: true)), .updatesAck(UpdatesMark(upTo: 12)),
      .syncAck(SyncMark(lastSyncedMessage: 9, lastSyncedUpdate: 12)),
    ].map { ($0.type, $0) })

  // MARK: - Checks

  /// Paths of fields the example names and the encoded value lacks (`statusUpdates[].type`).
  static func unknownFields(_ example: Any, _ encoded: Any, at path: String = "") -> [String] {
    switch (example, encoded) {
    case (let example as [String: Any], let encoded as [String: Any]):
      return example.keys.sorted().flatMap { key -> [String] in
        let here = path.isEmpty ? key : "\(path).\(key)"
        guard let inner = encoded[key] else { return [here] }
        return unknownFields(example[key]!, inner, at: here)
      }
    case (let example as [Any], let encoded as [Any]):
      return zip(example, encoded).flatMap { unknownFields($0, $1, at: path + "[]") }
    default:
      return []
    }
  }

  /// Decodes `json` as one of `types`; nil when none takes it. A type takes an example
  /// whose fields it all has and that it decodes; the encoded value must then hold every
  /// field the example names, at every depth.
  static func check(_ json: String, as types: [WireType]) throws -> (type: WireType, unknown: [String])? {
    let data = Data(json.utf8)
    let object = try JSONSerialization.jsonObject(with: data)
    let fields = Set((object as? [String: Any])?.keys.map { $0 } ?? [])
    for type in types where fields.isSubset(of: type.fields) {
      guard let encoded = try? type.roundTrip(data) else { continue }
      return (type, unknownFields(object, try JSONSerialization.jsonObject(with: encoded)))
    }
    return nil
  }

  @Test func theDocHasTheExamplesThisSuiteReads() {
    #expect(!Self.doc.isEmpty, "docs/protocol.md not found next to Tests/")
    let objects = Self.examples.filter { if case .object = $0.kind { true } else { false } }
    // The message, the error, the POST body, the sync page (```json) and the POST answer,
    // the profile, the list, /v2/me, /v2/health (inline): a count that drops means the
    // extraction broke, not that the doc is fine.
    #expect(objects.count >= 9, "\(objects)")
    #expect(Self.examples.contains { if case .fieldNames = $0.kind { true } else { false } })
  }

  @Test func everyObjectExampleDecodesAsAProtocolTypeAndNamesNoUnknownField() throws {
    for example in Self.examples {
      guard case .object = example.kind else { continue }
      // The socket's envelope, `{"type": "...", "payload": {...}}`: its shape only.
      if example.text.contains("\"...\"") {
        #expect(example.text.contains("\"type\"") && example.text.contains("\"payload\""), "\(example)")
        continue
      }
      let json = Self.fillIn(example.text)
      guard let (type, unknown) = try Self.check(json, as: Self.bodies) else {
        Issue.record("\(example) is none of the protocol's types (or names a field none has)")
        continue
      }
      #expect(unknown.isEmpty, "\(example) as \(type): fields the type does not have: \(unknown)")
    }
  }

  @Test func everyFieldNameListNamesFieldsOfOneType() {
    for example in Self.examples {
      guard case .fieldNames = example.kind else { continue }
      let names = Set(example.text.matches(of: /"([A-Za-z]+)"/).map { String($0.output.1) })
      #expect(Self.bodies.contains { names.isSubset(of: $0.fields) }, "\(example): no type has all these fields")
    }
  }

  @Test func everyEventOfTheTablesDecodesAndNamesOnlyFieldsItsPayloadHas() throws {
    var server: Set<String> = []
    var client: Set<String> = []
    for example in Self.examples {
      let type: String
      let sample: Data
      switch example.kind {
      case .serverEvent(let name):
        server.insert(name)
        type = name
        guard let event = Self.serverEvents[name] else {
          Issue.record("\(example): the types know no server event '\(name)'")
          continue
        }
        sample = Data(WireJSON.encode(event))
      case .clientEvent(let name):
        client.insert(name)
        type = name
        guard let event = Self.clientEvents[name] else {
          Issue.record("\(example): the types know no client event '\(name)'")
          continue
        }
        sample = Data(WireJSON.encode(event))
      default:
        continue
      }
      let payloadFields = Set(
        ((try JSONSerialization.jsonObject(with: sample) as? [String: Any])?["payload"] as? [String: Any])?.keys.map {
          $0
        } ?? [])
      if Self.isFieldNameList(example.text) {
        let names = Set(example.text.matches(of: /"([A-Za-z]+)"/).map { String($0.output.1) })
        #expect(
          names.isSubset(of: payloadFields), "\(example): \(names.subtracting(payloadFields)) unknown to '\(type)'")
        continue
      }
      let json = "{\"type\": \"\(type)\", \"payload\": \(Self.fillIn(example.text))}"
      let data = Data(json.utf8)
      let encoded: Data
      if case .serverEvent = example.kind {
        let event = try #require(try? JSONDecoder().decode(ServerEvent.self, from: data), "\(example) does not decode")
        #expect(event.type == type)
        encoded = Data(WireJSON.encode(event))
      } else {
        let event = try #require(try? JSONDecoder().decode(ClientEvent.self, from: data), "\(example) does not decode")
        #expect(event.type == type)
        encoded = Data(WireJSON.encode(event))
      }
      let unknown = Self.unknownFields(
        try JSONSerialization.jsonObject(with: data), try JSONSerialization.jsonObject(with: encoded))
      #expect(unknown.isEmpty, "\(example): fields '\(type)' does not have: \(unknown)")
    }
    #expect(server == Set(Self.serverEvents.keys), "server → client events in the doc and in ServerEvent differ")
    #expect(client == Set(Self.clientEvents.keys), "client → server events in the doc and in ClientEvent differ")
  }
}
