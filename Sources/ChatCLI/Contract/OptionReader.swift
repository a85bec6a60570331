/// A command's options as one typed value, declared and read by the same code.
///
/// The initializer runs twice: once against a describing reader, which records every
/// option and argument for help and for the parser (every read returns "absent"), then
/// against the parsed command line. Because a read *is* the declaration, a command cannot
/// read an option it did not declare: there is no string lookup left to misspell.
///
/// ```swift
/// struct Options: ParsableOptions {
///   var dryRun: Bool
///   var olderThan: Int64?
///   init(_ o: inout OptionReader) {
///     olderThan = o.option("--older-than", valueName: "age", help: "…", parse: EvictionPolicy.age)
///     dryRun = o.flag("--dry-run", help: "…")
///   }
///   func validate() throws { if olderThan == nil && !dryRun { throw ValidationError("…") } }
/// }
/// ```
/// Declarations must not depend on other options' values (a test runs every command's
/// initializer in both modes and checks they declare the same names).
public protocol ParsableOptions: Sendable {
  /// Declares and reads every option; conversion errors are collected by the reader.
  init(_ options: inout OptionReader)
  /// Checks combinations once all values are read; throw `ValidationError`.
  func validate() throws
}

extension ParsableOptions {
  public func validate() throws {}
}

/// A command line that reads well but asks for something impossible; shown as a usage error.
public struct ValidationError: Error, CustomStringConvertible, Sendable {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// The reason a value was refused, appended to "The value 'x' is invalid for '--y <v>'".
public struct InvalidValue: Error, CustomStringConvertible, Sendable {
  public var description: String
  public init(_ description: String) { self.description = description }
}

/// Declares options (describing mode) or hands out their parsed values (reading mode).
public struct OptionReader {
  enum Mode {
    case describing
    case reading(ParsedArguments)
  }

  let mode: Mode
  /// Options and arguments in declaration order.
  private(set) var options: [Option] = []
  private(set) var arguments: [Argument] = []
  /// The first conversion or missing-value error; later ones are dropped.
  private(set) var firstError: String?

  init(mode: Mode) { self.mode = mode }

  var isDescribing: Bool { if case .describing = mode { true } else { false } }

  private var parsed: ParsedArguments? { if case .reading(let parsed) = mode { parsed } else { nil } }

  private mutating func declare(_ option: Option) {
    if isDescribing {
      precondition(
        !options.contains { !Set($0.names).isDisjoint(with: option.names) }, "option \(option.names) declared twice")
    } else {
      // Reading mode sees exactly the declarations of describing mode (see `ParsableOptions`).
      precondition(
        parsed!.command.option(named: option.primaryName) != nil, "option \(option.primaryName) read but not declared")
    }
    options.append(option)
  }

  private mutating func fail(_ message: String) {
    if firstError == nil { firstError = message }
  }

  // MARK: - Flags and options

  /// A flag such as `--dry-run`: true when given.
  public mutating func flag(_ names: String..., help: String) -> Bool {
    let option = Option(names: names, help: help)
    declare(option)
    return parsed?.flag(option.primaryName) ?? false
  }

  /// An option's raw text (the last one when repeated), or nil when absent.
  /// `required` makes a missing value a usage error ("Missing '--output <file>'").
  public mutating func option(
    _ names: String..., valueName: String, help: String, required: Bool = false
  ) -> String? {
    let option = Option(names: names, valueName: valueName, help: help, isRequired: required)
    declare(option)
    guard let parsed else { return nil }
    let value = parsed.value(option.primaryName)
    if value == nil && required { fail("Missing '\(option.synopsis)'") }
    return value
  }

  /// An option converted by `parse`; nil when absent. A nil or thrown result is the usage
  /// error "The value 'x' is invalid for '--user <id>': <reason>".
  public mutating func option<T>(
    _ names: String..., valueName: String, help: String, required: Bool = false,
    parse: (String) throws -> T?
  ) -> T? {
    let option = Option(names: names, valueName: valueName, help: help, isRequired: required)
    declare(option)
    guard let parsed else { return nil }
    guard let raw = parsed.value(option.primaryName) else {
      if required { fail("Missing '\(option.synopsis)'") }
      return nil
    }
    return convert(raw, for: option, parse)
  }

  /// Every value of a repeatable option, converted, in command-line order.
  public mutating func repeated<T>(
    _ names: String..., valueName: String, help: String, parse: (String) throws -> T?
  ) -> [T] {
    let option = Option(names: names, valueName: valueName, help: help, isRepeatable: true)
    declare(option)
    guard let parsed else { return [] }
    return parsed.values(option.primaryName).compactMap { convert($0, for: option, parse) }
  }

  private mutating func convert<T>(_ raw: String, for option: Option, _ parse: (String) throws -> T?) -> T? {
    var message = "The value '\(raw)' is invalid for '\(option.synopsis)'"
    do {
      if let value = try parse(raw) { return value }
    } catch {
      if let reason = errorMessage(error) { message += ": \(reason)" }
    }
    fail(message)
    return nil
  }

  // MARK: - Positional arguments

  /// A positional argument; nil in describing mode and when an optional one is absent
  /// (the parser refuses a missing required one).
  public mutating func argument(_ name: String, help: String, optional: Bool = false) -> String? {
    arguments.append(Argument(name: name, help: help, isOptional: optional))
    return parsed?.positional(name)
  }

  /// A variadic positional argument that collects the remaining words.
  @discardableResult
  public mutating func variadic(_ name: String, help: String, optional: Bool = false) -> [String] {
    arguments.append(Argument(name: name, help: help, isOptional: optional, isVariadic: true))
    return parsed?.positionals(name) ?? []
  }
}
