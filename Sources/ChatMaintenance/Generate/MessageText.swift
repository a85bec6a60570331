/// Message texts for synthetic histories: chat-like words glued into one reusable
/// byte buffer, one `String` per message.
///
/// A text mixes ASCII words with accented Latin (precomposed and with combining marks
/// such as `"e\u{301}"`), CJK, emoji (also multi-scalar ones: 👍🏽, 👨‍👩‍👧, 🇯🇵) and,
/// now and then, quotes, backslashes, tabs and newlines, so every escaping path of an
/// export is exercised. Lengths follow `MessageText.lengthBuckets`: mean about 86
/// characters, median about 40, 0.1 % between 2,001 and 4,000, never empty, never more
/// than `maximumCharacters`.
///
/// Characters are counted with a fixed rule (`MessageText.characterCount(of:)`) rather
/// than with the running Swift's grapheme breaking, so a seed makes the same texts
/// whatever Unicode version the toolchain carries; for every fragment used the two
/// counts agree.
struct MessageText: Sendable {
  /// The longest text made, in characters (`String.count`).
  static let maximumCharacters = 4_000

  /// One piece of text a message is built from, packed for the hot loop: bits 0–31
  /// where its bytes start in `pool` (after a leading space kept for when it needs
  /// one), 32–39 its UTF-8 length, 40–47 its characters, then the flags below.
  typealias Fragment = UInt64
  /// Glued to what comes before (punctuation).
  static let joinsPrevious: Fragment = 1 << 48
  /// What comes after is glued to it (newline, tab, opening quote).
  static let joinsNext: Fragment = 1 << 49
  /// May not open a message.
  static let cannotStart: Fragment = 1 << 50

  /// How a message is written: which fragments it draws from, and whether words are
  /// separated by spaces.
  struct Style: Sendable {
    /// 1,024 fragments; a draw picks one uniformly, so the weights are the counts.
    var table: [Fragment]
    var spaced: Bool
    var capitalizes: Bool
  }

  /// All fragments' UTF-8, each after a space, back to back, then 16 bytes of padding
  /// (fragments are copied 16 bytes at a time).
  let pool: [UInt8]
  /// Every fragment, for tests.
  let fragments: [(text: String, fragment: Fragment)]
  let styles: [Style]
  /// Cumulative per-million weights of `styles`.
  let styleWeights: [Int]
  /// The most bytes a text can take: its characters times the most bytes a fragment
  /// spends on one character, plus one fragment and the padding.
  let maximumBytes: Int

  static let shared = MessageText()

  // MARK: - Lengths

  /// The target length of a text: a bucket by per-million weight, then uniform in it.
  /// Mean ≈ 86, median ≈ 40, P(> 2,000) = 0.1 %.
  static let lengthBuckets: [(perMillion: Int, range: ClosedRange<Int>)] = [
    (220_000, 1...10),
    (250_000, 11...30),
    (200_000, 31...60),
    (170_000, 61...120),
    (100_000, 121...250),
    (45_000, 251...600),
    (11_000, 601...1_200),
    (3_000, 1_201...2_000),
    (1_000, 2_001...4_000),
  ]
  private static let lengthCumulative: [Int] = {
    var sum = 0
    return lengthBuckets.map {
      sum += $0.perMillion
      return sum
    }
  }()

  @inline(__always)
  func targetLength(_ random: inout HistoryRandom) -> Int {
    let draw = random.below(1_000_000)
    var bucket = 0
    while draw >= Self.lengthCumulative[bucket] { bucket += 1 }
    let range = Self.lengthBuckets[bucket].range
    return range.lowerBound + random.below(range.count)
  }

  // MARK: - Composing

  /// A new message text, written in `scratch` first (`maximumBytes` long).
  @inline(__always)
  func compose(_ random: inout HistoryRandom, scratch: UnsafeMutablePointer<UInt8>) -> String {
    let target = targetLength(&random)
    let styleDraw = random.below(1_000_000)
    var styleIndex = 0
    while styleDraw >= styleWeights[styleIndex] { styleIndex += 1 }
    return compose(target: target, style: styles[styleIndex], random: &random, scratch: scratch)
  }

  @inline(__always)
  func compose(target: Int, style: Style, random: inout HistoryRandom, scratch: UnsafeMutablePointer<UInt8>) -> String {
    var bytes = 0
    var characters = 0
    pool.withUnsafeBufferPointer { pool in
      style.table.withUnsafeBufferPointer { table in
        let base = pool.baseAddress!
        let spaced: UInt64 = style.spaced ? 1 : 0
        var glued: UInt64 = 1
        while characters < target {
          let fragment = table[Int(truncatingIfNeeded: random.next() >> 54)]
          if characters == 0 && fragment & Self.cannotStart != 0 { continue }
          let space = spaced & ~glued & ~(fragment >> 48) & 1
          let added = Int(truncatingIfNeeded: ((fragment >> 40) & 0xFF) &+ space)
          if characters &+ added > Self.maximumCharacters { break }
          let length = Int(truncatingIfNeeded: ((fragment >> 32) & 0xFF) &+ space)
          let offset = Int(truncatingIfNeeded: fragment & 0xFFFF_FFFF) &+ 1 &- Int(truncatingIfNeeded: space)
          let source = UnsafeRawPointer(base + offset)
          let target = UnsafeMutableRawPointer(scratch + bytes)
          var i = 0
          repeat {
            let chunk = source.loadUnaligned(fromByteOffset: i, as: SIMD16<UInt8>.self)
            target.storeBytes(of: chunk, toByteOffset: i, as: SIMD16<UInt8>.self)
            i &+= 16
          } while i < length
          bytes &+= length
          characters &+= added
          glued = (fragment >> 49) & 1
        }
      }
    }
    if style.capitalizes, scratch[0] >= 0x61, scratch[0] <= 0x7A, random.next() & 3 != 0 { scratch[0] -= 0x20 }
    return String(decoding: UnsafeBufferPointer(start: scratch, count: bytes), as: UTF8.self)
  }

  // MARK: - Counting

  /// The number of characters (`String.count`) of a fragment, by a fixed rule that
  /// holds for the fragments used here: every scalar starts a character except
  /// combining marks, variation selectors, skin tones, a zero-width joiner and the
  /// scalar after it, and the second regional indicator of a flag.
  static func characterCount(of text: String) -> Int {
    var count = 0
    var afterJoiner = false
    var regionalIndicators = 0
    for scalar in text.unicodeScalars {
      let v = scalar.value
      defer { afterJoiner = v == 0x200D }
      if (0x1F1E6...0x1F1FF).contains(v) {
        regionalIndicators += 1
        if regionalIndicators % 2 == 0 { continue }
      } else {
        regionalIndicators = 0
      }
      if afterJoiner || v == 0x200D || (0x300...0x36F).contains(v) || v == 0xFE0E || v == 0xFE0F
        || (0x1F3FB...0x1F3FF).contains(v)
      {
        continue
      }
      count += 1
    }
    return count
  }

  // MARK: - Building the tables

  private enum Kind: CaseIterable {
    case word, accented, combining, cjk, cjkPunctuation, emoji, punctuation, hostile, opener
  }

  private init() {
    var pool: [UInt8] = []
    var fragments: [(text: String, fragment: Fragment)] = []
    var byKind: [[Fragment]] = Array(repeating: [], count: Kind.allCases.count)
    var bytesPerCharacter = 1
    func add(
      _ kind: Kind, _ texts: [String], joinsPrevious: Bool = false, joinsNext: Bool = false, canStart: Bool = true
    ) {
      for text in texts {
        let bytes = Array(text.utf8)
        let characters = Self.characterCount(of: text)
        precondition(bytes.count < 256 && characters > 0, "fragments are 1 to 255 bytes")
        bytesPerCharacter = max(bytesPerCharacter, (bytes.count + characters - 1) / characters)
        var fragment = Fragment(pool.count) | Fragment(bytes.count) << 32 | Fragment(characters) << 40
        if joinsPrevious { fragment |= Self.joinsPrevious }
        if joinsNext { fragment |= Self.joinsNext }
        if !canStart { fragment |= Self.cannotStart }
        byKind[Self.index(of: kind)].append(fragment)
        fragments.append((text, fragment))
        pool.append(0x20)
        pool += bytes
      }
    }
    add(.word, Self.words)
    add(.accented, Self.accentedWords)
    add(.combining, Self.combiningWords)
    add(.cjk, Self.cjkPhrases)
    add(.cjkPunctuation, ["，", "。", "！", "？", "…", "～"], joinsPrevious: true, canStart: false)
    add(.emoji, Self.emoji)
    add(
      .punctuation, [",", ",", ",", ".", ".", "!", "?", "...", "?!", "!!", ":", ";"], joinsPrevious: true,
      canStart: false)
    add(.punctuation, [":)", ";)", ":D", "xD", "-", "&", "+1", "@"])
    add(.hostile, ["\n"], joinsPrevious: true, joinsNext: true, canStart: false)
    add(.hostile, ["\n\n", "\t", "\n- "], joinsPrevious: true, joinsNext: true, canStart: false)
    add(.hostile, Self.hostileWords)
    add(.opener, ["\"", "'", "(", "`", "> "], joinsNext: true)
    pool += [UInt8](repeating: 0, count: 16)
    self.pool = pool
    self.fragments = fragments
    maximumBytes = Self.maximumCharacters * bytesPerCharacter + 512

    func style(_ weights: [(Kind, Int)], spaced: Bool = true, capitalizes: Bool = true) -> Style {
      var table: [Fragment] = []
      for (kind, weight) in weights {
        let members = byKind[Self.index(of: kind)]
        for i in 0..<weight { table.append(members[i % members.count]) }
      }
      precondition(table.count == 1_024, "a style's weights must add up to 1,024")
      return Style(table: table, spaced: spaced, capitalizes: capitalizes)
    }
    let plain = style([(.word, 934), (.punctuation, 70), (.hostile, 14), (.opener, 6)])
    let latin = style([
      (.word, 886), (.accented, 24), (.combining, 14), (.cjk, 8), (.emoji, 34), (.punctuation, 40), (.hostile, 12),
      (.opener, 6),
    ])
    let cjk = style(
      [(.cjk, 780), (.cjkPunctuation, 110), (.emoji, 70), (.word, 50), (.hostile, 10), (.punctuation, 4)],
      spaced: false,
      capitalizes: false)
    let emoji = style([(.emoji, 640), (.word, 300), (.punctuation, 60), (.cjk, 24)], capitalizes: false)
    let code = style([(.word, 560), (.hostile, 330), (.opener, 60), (.punctuation, 74)], capitalizes: false)
    // Half the messages are plain ASCII, as in a real chat history (and those are the
    // cheap ones to turn into Strings).
    self.styles = [plain, latin, cjk, emoji, code]
    self.styleWeights = [500_000, 780_000, 900_000, 960_000, 1_000_000]
  }

  private static func index(of kind: Kind) -> Int { Kind.allCases.firstIndex(of: kind)! }

  // MARK: - Vocabulary

  private static let words: [String] = """
    i you we they he she it the a an and but or so if then because when what where who why how \
    is are was were be been am do does did have has had will would can could should might must \
    not no yes yeah yep nope ok okay sure maybe just really very too also still already soon later \
    now today tonight tomorrow yesterday morning evening night week weekend monday friday \
    time day year minute hour moment while again never always sometimes \
    hi hey hello thanks thank please sorry lol haha omg btw fyi idk brb np ty \
    good great nice cool awesome fine bad sad happy tired busy free late early ready done \
    go going went come coming came get got see saw look looking call called text send sent \
    think know knew want need like love miss meet meeting talk said say tell told make made \
    take took give gave find found feel try trying work working home office school store \
    lunch dinner coffee beer pizza train bus car flight airport hotel party movie game match \
    photo pic picture video link file doc message phone number address ticket bill money \
    mom dad sis bro kids dog cat baby family friends team boss client project deadline \
    this that these those here there my your our their me him her us them some any all \
    one two three four five ten first last next new old big small long short more less \
    about after before with without from into over under on in at to for of by up down out \
    let's let me send it call me see you on my way be there in 5 mins running late \
    sounds good works for me no worries got it see you soon talk later \
    2 3 10 15 20 30 45 100 7pm 8:30 9am 12:15 2nd 3rd
    """.split(separator: " ").map(String.init)

  private static let accentedWords = [
    "café", "naïve", "jalapeño", "Zoë", "São", "Paulo", "crème", "brûlée", "über", "façade", "smörgåsbord", "Ærø",
    "déjà", "vu", "piñata", "résumé", "Straße", "Ålesund", "Kraków", "Łódź", "İstanbul", "Reykjavík", "Tromsø",
    "coöperate", "señor", "niño", "élan", "fiancée", "Dvořák", "Nguyễn", "Hà", "Nội", "Ελλάδα", "Москва", "привет",
    "спасибо", "γειά", "שלום", "مرحبا",
  ]

  private static let combiningWords = [
    "cafe\u{301}", "nai\u{308}ve", "Jose\u{301}", "Ame\u{301}lie", "pin\u{303}a", "Zoe\u{308}", "a\u{30A}r",
    "Bjo\u{308}rn", "resume\u{301}", "u\u{308}ber", "fiance\u{301}e", "Tie\u{302}\u{301}ng", "Vie\u{323}\u{302}t",
    "ha\u{336}ha\u{336}", "o\u{31B}\u{300}i",
  ]

  private static let cjkPhrases = [
    "你好", "谢谢", "明天见", "没问题", "好的", "哈哈哈", "我在路上", "一起吃饭吧", "等一下", "真的吗", "太好了", "晚安",
    "我到了", "会议推迟了", "周末有空吗", "发给你了", "辛苦了", "加油", "ありがとう", "おはよう", "今日は", "おやすみ",
    "了解です", "すごい", "また明日", "大丈夫", "お疲れ様です", "ちょっと待って", "안녕하세요", "감사합니다", "괜찮아요",
    "잘자요", "내일 봐요", "진짜", "ㅋㅋㅋ", "알겠어", "東京", "北京", "서울",
  ]

  private static let emoji = [
    "😀", "😂", "🤣", "😊", "😍", "😘", "😅", "😭", "🥲", "🤔", "🙄", "😴", "😎", "🙏", "👍", "👎", "👌", "👏", "🎉",
    "🔥", "✨", "💯", "❤️", "💔", "☕", "🍕", "🍺", "🚀", "🐶", "🌧️", "👍🏽", "👋🏻", "🙏🏿", "💪🏼", "🤷‍♀️", "🤦🏾‍♂️",
    "👨‍👩‍👧", "👩‍💻", "🏳️‍🌈", "❤️‍🔥", "🇯🇵", "🇧🇷", "🇺🇦", "🇫🇷", "🫶", "🫠",
  ]

  private static let hostileWords = [
    "\"ok\"", "\"really\"", "'quoted'", "\\", "C:\\Users\\me\\Desktop", "\\n", "a\\b", "{\"key\": \"value\"}",
    "</script>", "<b>bold</b>", "50%", "$5", "#general", "path/to/file.txt", "https://example.com/?q=a&b=c",
    "`code`", "'", "\"",
  ]
}
