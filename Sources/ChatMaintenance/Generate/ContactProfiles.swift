import ChatStore

/// The contacts of a synthetic history: ids, how quickly each one receives and reads
/// the owner's messages, and how many of its messages the owner left unread.
///
/// Every contact draws the same number of values from the contacts stream whether it
/// uses them or not, so one contact's choices never shift another's.
struct ContactProfiles {
  let ids: [Int64]
  /// The owner's messages at or before this time are READ (the contact's read lag).
  let readThrough: [Int64]
  /// The owner's messages at or before this time are at least DELIVERED; also the
  /// contact's last connection.
  let deliveredThrough: [Int64]
  let lastIncomingID: [Int64]
  /// The index (among the conversation's incoming messages) of the first unread one.
  let firstUnread: [Int]
  private let hidesLastSeen: [Bool]
  private let hasAvatar: [Bool]
  private let names: [String]
  private let ownerName: String
  private let ownerHasAvatar: Bool

  /// The longest a contact takes to read the owner's messages.
  static let maximumReadLag: Int64 = HistoryTimeline.day
  /// The most incoming messages a conversation leaves unread.
  static let maximumUnread = 8

  init(_ generator: HistoryGenerator, tally: ConversationTally) {
    var random = HistoryRandom(seed: generator.options.seed, stream: .contacts)
    ownerName = ContactNames.name(&random)
    ownerHasAvatar = random.below(10) < 8
    let count = generator.contactCount
    var ids: [Int64] = []
    var read: [Int64] = []
    var delivered: [Int64] = []
    var firstUnread: [Int] = []
    var hides: [Bool] = []
    var avatars: [Bool] = []
    var names: [String] = []
    ids.reserveCapacity(count)
    let end = generator.end
    for i in 0..<count {
      ids.append(generator.contactID(at: i))
      names.append(ContactNames.name(&random))
      avatars.append(random.below(10) < 8)
      hides.append(random.below(7) == 0)
      // How long before `end` the contact last connected (everything before was
      // delivered to it) and how far back it has read: both within a day.
      let lagKind = random.below(100)
      let deliverLag =
        lagKind < 50
        ? random.within(0...1_800_000)
        : lagKind < 85 ? random.within(1_800_000...28_800_000) : random.within(28_800_000...86_400_000)
      let readLag = deliverLag + Int64(Double(Self.maximumReadLag - deliverLag) * random.unit())
      let unreadBudget = random.below(3) == 0 ? 1 + random.below(Self.maximumUnread) : 0
      read.append(end - readLag)
      delivered.append(max(end - deliverLag, tally.lastIncomingTime[i]))
      firstUnread.append(tally.incoming[i] - min(tally.trailingIncoming[i], unreadBudget))
    }
    self.ids = ids
    readThrough = read
    deliveredThrough = delivered
    lastIncomingID = tally.lastIncomingID
    self.firstUnread = firstUnread
    hidesLastSeen = hides
    hasAvatar = avatars
    self.names = names
  }

  /// The status of the owner's message `id`, sent at `milliseconds` to the contact at `contact`.
  @inline(__always)
  func statusOfSent(id: Int64, at milliseconds: Int64, contact: Int) -> MessageStatus {
    if id < lastIncomingID[contact] || milliseconds <= readThrough[contact] { return .read }
    return milliseconds <= deliveredThrough[contact] ? .delivered : .synced
  }

  /// The owner (last connected with the newest message) and the contacts.
  func users(_ generator: HistoryGenerator, tally: ConversationTally) -> [User] {
    let owner = generator.options.owner
    var users = [
      User(
        id: owner, name: ownerName, avatarURL: ownerHasAvatar ? Self.avatarURL(owner) : nil,
        lastConnectedAt: tally.lastMilliseconds.map { Timestamp.string(milliseconds: $0) })
    ]
    for i in ids.indices {
      users.append(
        User(
          id: ids[i], name: names[i], avatarURL: hasAvatar[i] ? Self.avatarURL(ids[i]) : nil,
          lastConnectedAt: hidesLastSeen[i] ? nil : Timestamp.string(milliseconds: deliveredThrough[i])))
    }
    return users
  }

  static func avatarURL(_ id: Int64) -> String { "https://avatars.example.invalid/" + String(id) + ".png" }
}

/// People's names from many scripts.
enum ContactNames {
  static let latinFirst = [
    "José", "Zoë", "Małgorzata", "Søren", "Ángel", "Chloé", "François", "Jürgen", "İlkay", "Åsa", "Björn", "Noémie",
    "Łukasz", "Renée", "Siobhán", "Ana", "Liam", "Olivia", "Mateo", "Amara", "Kofi", "Priya", "Arjun", "Ngozi",
    "Yusuf", "Fatma", "Hana", "Emma", "Noah", "Zoltán", "Inés", "Thérèse", "Dagný", "Oğuz", "Mírian",
  ]
  static let latinLast = [
    "García", "Müller", "Nowak", "Øberg", "Dubois", "Kovač", "Nguyễn", "Silva", "O'Brien", "Smith", "Jensen", "Rossi",
    "Kowalski", "Yılmaz", "Ferreira", "Schröder", "Lefèvre", "Đorđević", "Ólafsdóttir", "Brontë", "Peña", "Åberg",
    "Okafor", "Haddad", "Mensah",
  ]
  static let cjk = [
    "王伟", "李娜", "张敏", "刘洋", "陈静", "杨帆", "佐藤 健", "鈴木 美咲", "高橋 翔", "田中 陽菜", "山本 蓮", "김민준", "이서연",
    "박지훈", "최수아", "정하늘",
  ]
  static let other = [
    "Алексей Иванов", "Мария Петрова", "Νίκος Παπαδόπουλος", "Ελένη Γεωργίου", "محمد علي", "فاطمة الزهراء", "יעל כהן",
    "Nguyễn Thị Mai", "Trần Văn Đức", "Mom ❤️", "Team 🚀", "\"Doc\" O'Neil",
  ]

  static func name(_ random: inout HistoryRandom) -> String {
    let kind = random.below(100)
    let a = random.below(1 << 16)
    let b = random.below(1 << 16)
    if kind < 60 { return latinFirst[a % latinFirst.count] + " " + latinLast[b % latinLast.count] }
    if kind < 85 { return cjk[a % cjk.count] }
    return other[a % other.count]
  }
}
