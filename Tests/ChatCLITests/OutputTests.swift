import ChatStore
import TestSupport
import Testing

@testable import ChatCLI

#if canImport(Glibc)
  import Glibc
#endif

@Suite(.ownThreads) struct ByteCountTests {
  @Test(arguments: [
    (Int64(0), "0 B"), (512, "512 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (1_048_575, "1.0 MiB"), (1_288_490_189, "1.2 GiB"), (5 << 40, "5.0 TiB"), (-2048, "-2.0 KiB"),
    (Int64.max, "8.0 EiB"),
  ])
  func format(bytes: Int64, expected: String) {
    #expect(ByteCount.format(bytes) == expected)
  }

  @Test(arguments: [
    ("1024", Int64?(1024)), ("0", 0), ("64MiB", 64 << 20), ("64M", 64 << 20), ("64mib", 64 << 20),
    ("1.5GB", 1_500_000_000), ("2 k", 2048), ("2KB", 2000), ("1KiB", 1024), (" 10 b ", 10),
    ("1T", 1 << 40), ("0.5K", 512), ("8EiB", nil), ("9223372036854775807", Int64.max),
    ("", nil), ("-5", nil), ("abc", nil), ("5X", nil), ("1.2.3M", nil), (".", nil), ("1.5", nil), ("MB", nil),
    ("99999999999999999999", nil), ("9000000PB", nil),
  ])
  func parse(text: String, expected: Int64?) {
    #expect(ByteCount.parse(text) == expected)
  }
}

@Suite(.ownThreads) struct JSONValueTests {
  @Test(arguments: [
    (JSONValue.string(#"say "hi""#), #""say \"hi\"""#),
    (.string(#"C:\path\"#), #""C:\\path\\""#),
    (.string("a\nb\tc\r\u{8}\u{C}"), #""a\nb\tc\r\b\f""#),
    (.string("\u{0}\u{1}\u{1F}\u{7F}"), #""\u0000\u0001\u001f\#u{7F}""#),
    (.string("héllo 👋🏽 日本語 한국어"), "\"héllo 👋🏽 日本語 한국어\""),
    (.string("a/b"), #""a/b""#),
    (.int(9_007_199_254_740_993), "9007199254740993"),
    (.int(Int64.max), "9223372036854775807"),
    (.int(Int64.min), "-9223372036854775808"),
    (.int(1_000_000_000_000_000_000), "1000000000000000000"),
    (.double(0.1), "0.1"), (.double(2), "2.0"), (.double(.nan), "null"), (.double(-.infinity), "null"),
    (nil, "null"), (true, "true"), (.array([]), "[]"), (.object([:]), "{}"),
  ])
  func scalars(value: JSONValue, expected: String) {
    #expect(value.render() == expected)
    #expect(value.render(pretty: false) == expected)
  }

  @Test func objectsHaveSortedKeysAndTwoSpaceIndentation() {
    let value: JSONValue = ["zeta": 1, "alpha": [true, nil, "x"], "mid": ["b": 2.5, "a": [:]]]
    #expect(
      value.render() == """
        {
          "alpha": [
            true,
            null,
            "x"
          ],
          "mid": {
            "a": {},
            "b": 2.5
          },
          "zeta": 1
        }
        """)
    #expect(value.render(pretty: false) == #"{"alpha":[true,null,"x"],"mid":{"a":{},"b":2.5},"zeta":1}"#)
  }

  @Test func keysAreEscapedToo() {
    #expect(JSONValue.object(["a\"b\n": "v"]).render(pretty: false) == #"{"a\"b\n":"v"}"#)
  }
}

@Suite(.ownThreads) struct TableTests {
  @Test func alignsColumnsAndRightAlignsNumbers() {
    let table = Table(
      columns: [.init("FILE"), .init("FROM", alignment: .right), .init("NOTE")],
      rows: [["a.db", "1", "ok"], ["longer-name.db", "12345", ""], ["日本.db", "7"]]
    )
    #expect(
      table.render() == """
        FILE             FROM  NOTE
        --------------  -----  ----
        a.db                1  ok
        longer-name.db  12345
        日本.db             7

        """)
  }

  @Test func emptyTableRendersHeaderAndSeparator() {
    #expect(Table(columns: [.init("A"), .init("BB", alignment: .right)], rows: []).render() == "A  BB\n-  --\n")
  }
}

@Suite(.ownThreads) struct ProgressTests {
  @Test func silentWhenOutputIsNotATerminal() {
    let buffer = TextBuffer()
    let progress = Progress(
      label: "Importing", total: 1000, unit: "records", output: .capturing(into: buffer, isTerminal: false))
    for row in 1...10_000 { progress.update(completed: Int64(row), bytes: Int64(row) * 100) }
    progress.finish()
    #expect(buffer.text == "")
  }

  @Test func drawsOneLineAndClearsItOnATerminal() {
    let buffer = TextBuffer()
    let progress = Progress(
      label: "Importing", total: 2000, unit: "records", output: .capturing(into: buffer, isTerminal: true))
    progress.update(completed: 1000)
    for row in 1001...1100 { progress.update(completed: Int64(row)) }  // throttled: within 100 ms
    let drawn = buffer.text
    // The first half second shows no rate and no time left (they would be absurd).
    #expect(drawn == "\r\u{1B}[KImporting 1,000/2,000 records 50%", "\(drawn)")
    #expect(drawn.components(separatedBy: "\r").count == 2, "one redraw only: \(drawn.debugDescription)")
    progress.finish()
    #expect(buffer.text == drawn + "\r\u{1B}[K")
  }

  @Test func aRateAndTheTimeLeftOnceThereIsHalfASecondToMeasure() {
    let progress = Progress(label: "Evicting", total: 3000, unit: "messages", output: .capturing(into: TextBuffer()))
    #expect(
      progress.line(completed: 1000, bytes: nil, elapsed: 2_000_000_000)
        == "Evicting 1,000/3,000 messages 33% 500 messages/s 0:04 left")
    #expect(progress.line(completed: 1000, bytes: nil, elapsed: 100_000_000) == "Evicting 1,000/3,000 messages 33%")
  }

  @Test func unknownTotalShowsCountAndRateOnly() {
    let buffer = TextBuffer()
    let progress = Progress(label: "Scanning", unit: "files", output: .capturing(into: buffer, isTerminal: true))
    progress.update(completed: 1_234_567, bytes: 2048)
    #expect(buffer.text.hasPrefix("\r\u{1B}[KScanning 1,234,567 files "))
    #expect(buffer.text.contains("2.0 KiB"))
    #expect(progress.line(completed: 1_234_567, bytes: 2048, elapsed: 1_000_000_000).contains("2.0 KiB ("))
    #expect(!buffer.text.contains("%") && !buffer.text.contains("left"))
  }
}

@Suite(.ownThreads) struct TerminalTests {
  @Test(arguments: [
    ([String: String](), true, true), (["TERM": "xterm-256color"], true, true), (["TERM": "dumb"], true, false),
    (["NO_COLOR": "1"], true, false), (["NO_COLOR": ""], true, true), (["TERM": "xterm"], false, false),
  ])
  func supportsColor(environment: [String: String], isTerminal: Bool, expected: Bool) {
    #expect(Terminal.supportsColor(environment: environment, isTerminal: isTerminal) == expected)
  }

  @Test func aPipeIsNotATerminal() {
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
    #expect(!Terminal.isTerminal(fds[1]))
    #expect(TextOutput.standardError.isTerminal == Terminal.isTerminal(2))
  }
}
