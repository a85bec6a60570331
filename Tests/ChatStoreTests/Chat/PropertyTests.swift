import Foundation
import TestSupport
import Testing

@testable import ChatStore

/// A seeded generator, so a failing order can be replayed.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

@Suite(.ownThreads) struct HistoryPropertyTests {
  /// What the network can do, in any order, any number of times.
  enum Event {
    case acknowledge(request: Int, message: Int64)
    case sync(Message)
    case receipt(MessageStatus, Int64)
    case receiptUpTo(MessageStatus, Int64, conversation: Int64)
  }

  /// Builds a random history: sends, then acks, sync echoes (some with the request id),
  /// incoming messages, and receipts, each possibly repeated.
  func history(seed: UInt64) -> (sends: [(Int64, String)], events: [Event], acknowledged: Set<Int>) {
    var rng = SplitMix64(state: seed)
    let f = try! ChatFixture(contacts: [])  // only for id and message helpers
    var sends: [(Int64, String)] = []
    var events: [Event] = []
    var acknowledged = Set<Int>()
    for i in 0..<8 {
      let contact: Int64 = Bool.random(using: &rng) ? 2 : 3
      sends.append((contact, "out \(i) ✓"))
      let id = f.relayID(Int64(i) * 100 + 50)
      let copies = Int.random(in: 0...2, using: &rng)  // 0: the reply never came
      if copies > 0 { acknowledged.insert(i) }
      for _ in 0..<copies { events.append(.acknowledge(request: i, message: id)) }
      for _ in 0..<Int.random(in: 0...2, using: &rng) {
        var echo = f.outgoing(id, to: contact, "out \(i) ✓")
        echo.requestID = Bool.random(using: &rng) ? nil : Int64(i + 1)
        if echo.requestID != nil { acknowledged.insert(i) }
        events.append(.sync(echo))
      }
      if Bool.random(using: &rng) { events.append(.receipt(.allCases.randomElement(using: &rng)!, id)) }
      if Int.random(in: 0..<4, using: &rng) == 0 {
        events.append(.receiptUpTo([.delivered, .read].randomElement(using: &rng)!, id, conversation: contact))
      }
    }
    for j in 0..<10 {
      let message = f.incoming(f.relayID(Int64(j) * 100 + 10), from: Bool.random(using: &rng) ? 2 : 3, "in \(j) 字")
      for _ in 0..<Int.random(in: 1...3, using: &rng) { events.append(.sync(message)) }
    }
    return (sends, events, acknowledged)
  }

  /// Applies the history; events name requests by their place in `sends` (a `sync` echo
  /// by place + 1 in `requestID`), mapped here to the ids `send` gave.
  func apply(_ sends: [(Int64, String)], _ events: [Event]) throws -> ChatFixture {
    let f = try ChatFixture()
    var ids: [Int64] = []
    for (contact, content) in sends {
      ids.append(try f.chats.send(to: contact, content: content).requestID)
      f.tick()
    }
    f.requestIDs = ids
    for event in events {
      switch event {
      case .acknowledge(let request, let id):
        let sent = sends[request]
        try f.chats.acknowledge(f.outgoing(id, to: sent.0, sent.1), requestID: ids[request])
      case .sync(var message):
        if let place = message.requestID { message.requestID = ids[Int(place) - 1] }
        try f.chats.receive(message)
      case .receipt(let status, let id): try f.chats.apply(status, toMessage: id)
      case .receiptUpTo(let status, let id, let conversation):
        try f.chats.apply(status, upTo: id, inConversation: conversation)
      }
    }
    return f
  }

  @Test(arguments: 1...12 as ClosedRange<UInt64>)
  func anyOrderEndsInTheSameContent(seed: UInt64) throws {
    let (sends, events, acknowledged) = history(seed: seed)
    let applied = try apply(sends, events)
    let reference = try applied.contents()
    var rng = SplitMix64(state: seed &* 7919)
    for _ in 0..<4 {
      let shuffled = try apply(sends, events.shuffled(using: &rng)).contents()
      #expect(shuffled == reference)
    }
    // No lost message, no duplicate, no request left for an acknowledged message.
    let messageRows = reference.filter { $0.hasPrefix("M ") }
    let requestRows = reference.filter { $0.hasPrefix("R ") }
    #expect(Set(messageRows.map { $0.split(separator: "|")[0] }).count == messageRows.count)
    #expect(requestRows.count == sends.count - acknowledged.count)
    for i in acknowledged { #expect(!requestRows.contains { $0.hasPrefix("R \(applied.requestIDs[i])|") }) }
  }
}

@Suite(.ownThreads) struct HotQueryPlanTests {
  @Test func everyHotQueryUsesAnIndex() throws {
    let f = try ChatFixture()
    // Enough rows for ANALYZE to matter.
    var messages: [Message] = []
    for i in 0..<2_000 {
      let id = f.relayID(Int64(i))
      messages.append(i % 2 == 0 ? f.incoming(id, from: Int64(2 + i % 3)) : f.outgoing(id, to: Int64(2 + i % 3)))
    }
    try f.chats.receive(messages)
    for _ in 0..<20 { try f.chats.send(to: 2, content: "x") }
    for analyzed in [false, true] {
      if analyzed { try f.chats.database.execute("ANALYZE") }
      for query in HotQuery.all {
        let plan = try query.plan(in: f.chats.database)
        #expect(try query.findings(in: f.chats.database).isEmpty, "\(query.name) (analyzed: \(analyzed)): \(plan)")
      }
    }
  }

  @Test func catalogNamesAreUnique() {
    #expect(Set(HotQuery.all.map(\.name)).count == HotQuery.all.count)
  }

  @Test func aDroppedIndexIsCaught() throws {
    let f = try ChatFixture()
    try f.chats.database.execute("DROP INDEX Messages_by_conversation")
    #expect(try HotQuery.messagesBefore.fullScans(in: f.chats.database) == ["Messages"])
  }

  /// A dropped index and the queries whose plans must then be flagged: the `SEARCH
  /// Messages` of `max(id)` with no index and the `rowid>? AND rowid<?` fallback
  /// walk the whole table just like a `SCAN`.
  @Test(arguments: [
    ("ConversationSummaries_by_activity", HotQuery.conversationList),
    ("Messages_by_conversation", HotQuery.conversationListFromTables),
    ("Messages_by_conversation", HotQuery.recomputeConversationSummary),
    ("Messages_by_conversation", HotQuery.newestMessageOfConversation),
    ("Messages_by_conversation", HotQuery.conversationRange),
    ("Messages_by_conversation", HotQuery.conversationRangeBytes),
    ("Messages_by_conversation", HotQuery.nthNewestMessage),
    ("Messages_by_conversation", HotQuery.deleteConversationChunk),
    ("Messages_by_conversation", HotQuery.conversationIDs),
    ("Messages_by_created_at", HotQuery.firstMessageAtOrAfter),
    ("Messages_by_request", HotQuery.messageByRequest),
    ("MessageRequests_by_conversation", HotQuery.requestsBefore),
  ])
  func droppedIndexFlagsQuery(index: String, query: HotQuery) throws {
    let f = try ChatFixture()
    #expect(try query.findings(in: f.chats.database).isEmpty)
    try f.chats.database.execute("DROP INDEX \(index)")
    let findings = try query.findings(in: f.chats.database)
    let plan = try query.plan(in: f.chats.database)
    #expect(!findings.isEmpty, "\(query.name): \(plan)")
    #expect(findings.allSatisfy { ["Messages", "MessageRequests", "ConversationSummaries"].contains($0.table) })
  }

  /// How plan lines are read: only what the entry declares passes.
  @Test(arguments: [
    ("SCAN Messages", PlanAccess.scan("Messages")),
    ("SCAN Messages USING COVERING INDEX Messages_by_created_at", PlanAccess.indexOrder("Messages_by_created_at")),
    (
      "SCAN s USING INDEX ConversationSummaries_by_activity", PlanAccess.indexOrder("ConversationSummaries_by_activity")
    ),
    ("SEARCH Messages", PlanAccess.rowidRange),
    ("SEARCH Messages USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)", PlanAccess.rowidRange),
    ("SEARCH Messages USING INTEGER PRIMARY KEY (rowid<?)", PlanAccess.rowidRange),
    ("SEARCH Messages USING INTEGER PRIMARY KEY (rowid=?)", PlanAccess.primaryKey),
    ("SEARCH StoreInfo USING PRIMARY KEY (key=?)", PlanAccess.primaryKey),
    (
      "SEARCH Messages USING COVERING INDEX Messages_by_conversation (conversation_id=? AND rowid<?)",
      PlanAccess.index("Messages_by_conversation")
    ),
    ("SEARCH Messages USING INDEX Messages_unread (conversation_id=?)", PlanAccess.index("Messages_unread")),
  ])
  func planLinesAreClassified(line: String, access: PlanAccess) {
    let words = line.split(separator: " ").map(String.init)
    #expect(HotQuery.access(of: words, table: words[1]) == access)
  }

  /// A walk of an index in its order passes where that index's walk is declared, or
  /// where a scan of its table is; a plain scan passes only where a scan is declared.
  @Test func indexOrderIsAllowedByItsIndexOrATableScan() {
    let list = HotQuery.conversationList
    #expect(list.permits(.indexOrder("ConversationSummaries_by_activity"), on: "ConversationSummaries"))
    #expect(!list.permits(.indexOrder("sqlite_autoindex_x"), on: "ConversationSummaries"))
    #expect(!list.permits(.scan("ConversationSummaries"), on: "ConversationSummaries"))
    #expect(HotQuery.conversationListFromTables.permits(.indexOrder("any_index_of_users"), on: "Users"))
  }

  @Test func automaticIndexIsNeverExpected() {
    let words = "SEARCH t USING AUTOMATIC COVERING INDEX (a=?)".split(separator: " ").map(String.init)
    #expect(HotQuery.access(of: words, table: "t") == nil)
  }

  @Test func aliasesAreResolved() {
    #expect(HotQuery.conversationList.tableAliases["m"] == "Messages")
    #expect(HotQuery.conversationList.tableAliases["s"] == "ConversationSummaries")
    #expect(HotQuery.conversationListFromTables.tableAliases["r"] == "MessageRequests")
    #expect(HotQuery.deleteBoundedRange.tableAliases["b"] == "chatdb_evict_bounds")
  }
}
