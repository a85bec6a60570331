/// Other people's text (message content, contact names) as it may be shown on a terminal.
///
/// A sender controls every byte of a message: raw, an ANSI escape sequence recolours or
/// clears the reader's screen, a bidi override reorders what follows (a message that
/// spoofs the line's status), and a newline breaks one-message-per-line output. On a
/// terminal those characters are shown escaped; in `--json` and when piped, text stays
/// exact (callers pass `terminal: false`).
///
///     TerminalText.shown("hi\u{1B}[2J\u{202E}", terminal: true)  // hi\u{1B}[2J\u{202E}
public enum TerminalText {
  /// `text` with C0 and C1 controls, DEL and the bidi controls escaped (`\n`, `\t`, `\r`,
  /// else `\u{XX}`) when `terminal`, else unchanged.
  public static func shown(_ text: String, terminal: Bool) -> String {
    guard terminal, text.unicodeScalars.contains(where: needsEscape) else { return text }
    var out = ""
    out.reserveCapacity(text.utf8.count + 8)
    for scalar in text.unicodeScalars {
      guard needsEscape(scalar) else {
        out.unicodeScalars.append(scalar)
        continue
      }
      switch scalar {
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default: out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      }
    }
    return out
  }

  /// C0 controls, DEL, C1 controls; the bidi embeddings, overrides and isolates, and the
  /// marks that reorder text (LRM, RLM, ALM).
  static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F: true
    case 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
  }
}
