import CWebSockets

/// The C callback for every libwebsockets event: finds the ``ServiceCore`` through
/// the context's user pointer and hands the event to it.
func relayServiceCallback(
  _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
  _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
  guard let wsi, let context = lws_get_context(wsi), let core = lws_context_user(context) else {
    return lws_callback_http_dummy(wsi, reason, user, input, length)
  }
  return Unmanaged<ServiceCore>.fromOpaque(core).takeUnretainedValue()
    .handle(wsi, reason, user: user, input: input, length: length)
}
