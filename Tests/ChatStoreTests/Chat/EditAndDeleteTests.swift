import Foundation
import Testing

@testable import ChatStore

/// Editing and deleting messages in one file (issue 29): versions in order whatever order
/// they come in, a delete that wins over every edit, delete for me that the sync does not
/// undo, and erased text that is nowhere in the file's bytes or its `-wal` afterwards.
@Suite struct EditAndDeleteTests {
  /// The bytes of the database file and its `-wal` (when there is one).
  static func fileBytes(_ chats: ChatRepository) throws -> Data {
    var bytes = try Data(contentsOf: URL(fileURLWithPath: chats.database.path))
    if let wal = FileManager.default.contents(atPath: chats.database.path + "-wal") { bytes += wal }
    return bytes
  }

  static func holds(_ chats: ChatRepository, _ word: String) throws -> Bool {
    try fileBytes(chats).range(of: Data(word.utf8)) != nil
  }

  @Test func editsApplyInVersionOrderWhateverOrderTheyArriveIn() throws {
    let f = try ChatFixture()
    let id = f.relayID(1)
    _ = try f.chats.receive([f.outgoing(id, to: 2, "first draft")], users: [], messageCursor: nil)
    let at = f.tick()
    #expect(try f.chats.applyEdit(of: id, version: 2, content: "third", editedAt: at))
    #expect(try f.chats.applyEdit(of: id, version: 1, content: "second", editedAt: at))
    #expect(try !f.chats.applyEdit(of: id, version: 1, content: "second", editedAt: at), "a replay changes nothing")
    #expect(try !f.chats.applyEdit(of: id, version: 2, content: "third", editedAt: at))
    let message = try #require(try ChatRepository.message(id, f.chats.database))
    #expect(message.content == "third" && message.version == 2 && message.editedAt == at)
    #expect(try f.chats.editHistory(of: id).map(\.content) == ["first draft", "second"])
    // Search follows the text shown.
    #expect(try f.chats.search("third").hits.count == 1)
    #expect(try f.chats.search("draft").hits.isEmpty)
  }

  @Test func aMessageFetchedAfterItsEditsKeepsTheHistoryItCameWith() throws {
    let f = try ChatFixture()
    let id = f.relayID(1)
    let gone = f.relayID(2)
    var edited = f.incoming(id, from: 2, "third")
    edited.version = 2
    edited.editedAt = f.tick()
    edited.history = [
      MessageVersion(version: 0, content: "first", editedAt: edited.createdAt),
      MessageVersion(version: 1, content: "second", editedAt: edited.editedAt!),
      MessageVersion(version: 2, content: "not below the version shown", editedAt: edited.editedAt!),
    ]
    _ = try f.chats.receive([edited], users: [], messageCursor: nil)
    #expect(try f.chats.editHistory(of: id).map(\.content) == ["first", "second"])
    // A late page with history for a message deleted here since brings none of it back.
    _ = try f.chats.receive([f.incoming(gone, from: 2, "doomed")], users: [], messageCursor: nil)
    try f.chats.applyDelete(of: gone, deletedAt: f.tick())
    var stale = f.incoming(gone, from: 2, "doomed, edited")
    stale.version = 1
    stale.history = [MessageVersion(version: 0, content: "doomed", editedAt: stale.createdAt)]
    try f.chats.receive([stale])
    #expect(try f.chats.editHistory(of: gone).isEmpty)
    #expect(try ChatRepository.message(gone, f.chats.database)?.content == "")
  }

  @Test func aDeleteWinsOverEveryEditAndErasesTheText() throws {
    let f = try ChatFixture()
    let id = f.relayID(1)
    let kept = f.relayID(2)
    _ = try f.chats.receive(
      [f.outgoing(id, to: 2, "qqxylophonequasar one"), f.incoming(kept, from: 2, "zzkeptwordvisible")], users: [],
      messageCursor: nil)
    try f.chats.applyEdit(of: id, version: 1, content: "jjmarmaladeorbit two", editedAt: f.tick())
    _ = try f.chats.queueEdit(of: id, content: "kkpendingedit three")
    #expect(try f.chats.applyDelete(of: id, deletedAt: f.tick()))
    // The residue is still in the file or the WAL before it is erased: this test can see it.
    #expect(try Self.holds(f.chats, "qqxylophonequasar"))
    #expect(try f.chats.eraseResidue())
    for word in ["qqxylophonequasar", "jjmarmaladeorbit", "kkpendingedit"] {
      #expect(try !Self.holds(f.chats, word), "\(word) is still in the file's bytes")
      #expect(try f.chats.search(word).hits.isEmpty)
    }
    #expect(try Self.holds(f.chats, "zzkeptwordvisible"), "a kept message is still there")
    try f.chats.database.execute("INSERT INTO MessageSearch (MessageSearch) VALUES ('integrity-check')")
    let tombstone = try #require(try ChatRepository.message(id, f.chats.database))
    #expect(tombstone.content.isEmpty && tombstone.deletedAt != nil && tombstone.status == .synced)
    #expect(try f.chats.editHistory(of: id).isEmpty && f.chats.messageChanges().isEmpty)
    // Edits after the delete change nothing; editing it here is refused.
    #expect(try !f.chats.applyEdit(of: id, version: 3, content: "late", editedAt: f.tick()))
    #expect(throws: StoreError.self) { try f.chats.queueEdit(of: id, content: "again") }
  }

  @Test func deleteForMeStaysDeletedThroughTheNextSync() throws {
    let f = try ChatFixture()
    let id = f.relayID(1)
    let message = f.incoming(id, from: 2, "wwsecretmorsel here")
    _ = try f.chats.receive([message], users: [], messageCursor: nil)
    try f.chats.deleteForMe(id)
    try f.chats.eraseResidue()
    #expect(try !Self.holds(f.chats, "wwsecretmorsel"))
    #expect(try f.chats.receive([message], users: [], messageCursor: nil).isEmpty, "the sync brought it back")
    #expect(try !f.chats.hasMessage(id) && f.chats.isHidden(id))
    #expect(throws: StoreError.self) { try f.chats.deleteForMe(id) }
    #expect(throws: StoreError.self) { try f.chats.queueEdit(of: f.relayID(9), content: "no such message") }
  }

  @Test func onlyTheSenderQueuesChanges() throws {
    let f = try ChatFixture()
    let incoming = f.relayID(1)
    let own = f.relayID(2)
    _ = try f.chats.receive(
      [f.incoming(incoming, from: 2), f.outgoing(own, to: 2, "mine")], users: [], messageCursor: nil)
    #expect(throws: StoreError.self) { try f.chats.queueEdit(of: incoming, content: "not mine") }
    #expect(throws: StoreError.self) { try f.chats.queueDelete(of: incoming) }
    #expect(throws: StoreError.self) { try f.chats.queueEdit(of: own, content: "") }
    let edit = try f.chats.queueEdit(of: own, content: "mine, edited")
    let delete = try f.chats.queueDelete(of: own)
    #expect(delete.requestID > edit.requestID)
    // The delete dropped the edit queued before it.
    #expect(try f.chats.messageChanges().map(\.kind) == [.delete])
    // Request ids come from the outbox's counter: a new message gets a higher one.
    #expect(try f.chats.send(to: 2, content: "next").requestID > delete.requestID)
  }
}
