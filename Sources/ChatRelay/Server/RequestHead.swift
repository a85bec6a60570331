import CWebSockets

/// Reads a request's method, path, query and headers from the header tables
/// libwebsockets parsed for one connection. Service thread only.
enum RequestHead {
  /// The URI tokens lws fills, one per method it understands.
  private static let methods: [(lws_token_indexes, String)] = [
    (WSI_TOKEN_GET_URI, "GET"), (WSI_TOKEN_POST_URI, "POST"), (WSI_TOKEN_OPTIONS_URI, "OPTIONS"),
    (WSI_TOKEN_PUT_URI, "PUT"), (WSI_TOKEN_PATCH_URI, "PATCH"), (WSI_TOKEN_DELETE_URI, "DELETE"),
    (WSI_TOKEN_HEAD_URI, "HEAD"),
  ]

  /// The request with an empty body, or nil when lws holds no request line.
  static func read(_ wsi: OpaquePointer) -> HTTPRequest? {
    guard let (token, method) = methods.first(where: { lws_hdr_total_length(wsi, $0.0) > 0 }),
      let path = header(wsi, token)
    else { return nil }
    return HTTPRequest(method: method, path: path, query: query(wsi), headers: headers(wsi), body: [])
  }

  /// All fragments of one header joined as lws joins them, or nil when absent.
  static func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
    let length = Int(lws_hdr_total_length(wsi, token))
    guard length > 0 else { return nil }
    var failed = false
    // Copied straight into the string's storage (lws adds a NUL, hence the + 1);
    // invalid UTF-8 is repaired as by String(decoding:).
    let text = String(unsafeUninitializedCapacity: length + 1) { bytes in
      let copied = bytes.withMemoryRebound(to: CChar.self) { lws_hdr_copy(wsi, $0.baseAddress, Int32($0.count), token) }
      failed = copied < 0
      return max(0, Int(copied))
    }
    return failed ? nil : text
  }

  /// The declared `Content-Length`, nil when absent or not a number.
  static func contentLength(_ wsi: OpaquePointer) -> Int? {
    header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH).flatMap { Int($0.trimmingSpaces) }
  }

  /// Query parameters. lws 4.1 splits the query at `&` into fragments and has already
  /// undone `%xx` escapes and turned `+` into a space, so a fragment is split at its
  /// first `=` only (an escaped `=` inside a name therefore ends the name).
  static func query(_ wsi: OpaquePointer) -> [String: String] {
    let total = Int(lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS))
    guard total > 0 else { return [:] }
    var result: [String: String] = [:]
    var buffer = [CChar](repeating: 0, count: total + 1)
    var index: Int32 = 0
    while true {
      let copied = Int(lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index))
      guard copied >= 0 else { break }
      index += 1
      let fragment = String(decoding: buffer[0..<copied].map { UInt8(bitPattern: $0) }, as: UTF8.self)
      guard !fragment.isEmpty else { continue }
      if let equals = fragment.firstIndex(of: "=") {
        result[String(fragment[..<equals])] = String(fragment[fragment.index(after: equals)...])
      } else {
        result[fragment] = ""
      }
    }
    return result
  }

  /// The header tokens lws knows by name, with their lowercased names without the colon;
  /// read once (request-line tokens read "get ", pseudo-headers ":path": only real
  /// headers end with ':').
  private static let headerTokens: [(lws_token_indexes, String)] = (0..<WSI_TOKEN_COUNT.rawValue).compactMap { raw in
    let token = lws_token_indexes(rawValue: raw)
    guard let name = lws_token_to_string(token) else { return nil }
    let text = String(cString: name)
    guard text.hasSuffix(":"), !text.hasPrefix(":") else { return nil }
    return (token, String(text.dropLast()).lowercased())
  }

  /// Headers lws does not know by name that the relay reads (tus 1.0's, for uploads):
  /// lws keeps them as custom headers, looked up by their lowercased name.
  static let customHeaders = [
    "tus-resumable", "upload-offset", "upload-length", "upload-metadata", "upload-checksum",
    "upload-defer-length",
  ]

  /// Every header lws knows by name that this request carries, and the custom ones in
  /// ``customHeaders``.
  static func headers(_ wsi: OpaquePointer) -> [String: String] {
    var result: [String: String] = [:]
    for (token, name) in headerTokens where lws_hdr_total_length(wsi, token) > 0 {
      if let value = header(wsi, token) { result[name] = value }
    }
    for name in customHeaders {
      let key = Array((name + ":").utf8CString)
      let length = Int(key.withUnsafeBufferPointer { lws_hdr_custom_length(wsi, $0.baseAddress, Int32($0.count - 1)) })
      guard length >= 0 else { continue }
      var value = [CChar](repeating: 0, count: length + 1)
      let copied = key.withUnsafeBufferPointer { name in
        lws_hdr_custom_copy(wsi, &value, Int32(value.count), name.baseAddress, Int32(name.count - 1))
      }
      guard copied >= 0 else { continue }
      result[name] = String(decoding: value[0..<Int(copied)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    return result
  }
}

extension String {
  /// The text without leading and trailing spaces and tabs.
  var trimmingSpaces: Substring {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
      return ""
    }
    return self[first...last]
  }
}
