/// Renders rows of string cells as aligned text columns with a header row and a separator.
public struct Table: Sendable {
  /// How a column's cells are aligned.
  public enum Alignment: Sendable {
    /// Pad on the right (text).
    case left
    /// Pad on the left (numbers).
    case right
  }

  /// A column: its header title and alignment (use `.right` for numbers).
  public struct Column: Sendable {
    /// The header text.
    public var title: String
    /// The alignment of the header and cells.
    public var alignment: Alignment
    /// Creates a column.
    public init(_ title: String, alignment: Alignment = .left) {
      self.title = title
      self.alignment = alignment
    }
  }

  /// The columns, in order.
  public var columns: [Column]
  /// The rows; missing cells render empty, extra cells are ignored.
  public var rows: [[String]]
  /// The text between columns.
  public var gap = "  "

  /// Creates a table.
  public init(columns: [Column], rows: [[String]]) {
    self.columns = columns
    self.rows = rows
  }

  /// The table as text: header, a line of dashes per column, then the rows; each line ends with
  /// a newline and has no trailing spaces. Widths count East Asian wide characters as two columns.
  public func render() -> String {
    let cells = rows.map { row in columns.indices.map { $0 < row.count ? row[$0] : "" } }
    var widths = columns.map { displayWidth($0.title) }
    for row in cells {
      for (index, cell) in row.enumerated() { widths[index] = max(widths[index], displayWidth(cell)) }
    }
    func line(_ row: [String]) -> String {
      var parts: [String] = []
      for (index, cell) in row.enumerated() {
        let padding = String(repeating: " ", count: widths[index] - displayWidth(cell))
        parts.append(columns[index].alignment == .right ? padding + cell : cell + padding)
      }
      var text = parts.joined(separator: gap)
      while text.last == " " { text.removeLast() }
      return text + "\n"
    }
    let separator = widths.map { String(repeating: "-", count: $0) }
    return line(columns.map(\.title)) + line(separator) + cells.map(line).joined()
  }
}

/// Terminal columns taken by `text`: two for East Asian wide characters and most emoji, else one
/// per grapheme cluster (an approximation of `wcwidth` that needs no locale).
func displayWidth(_ text: String) -> Int {
  var width = 0
  for character in text {
    let scalar = character.unicodeScalars.first!.value
    let wide = (0x1100...0x115F).contains(scalar) || (0x2E80...0xA4CF).contains(scalar)
      || (0xAC00...0xD7A3).contains(scalar) || (0xF900...0xFAFF).contains(scalar)
      || (0xFE30...0xFE4F).contains(scalar) || (0xFF00...0xFF60).contains(scalar)
      || (0xFFE0...0xFFE6).contains(scalar) || (0x1F300...0x1FAFF).contains(scalar)
      || (0x20000...0x3FFFD).contains(scalar)
    width += wide ? 2 : 1
  }
  return width
}
