/// The release the three programs belong to: `chatdb`, `chat-sync` and `chat-relay` are
/// built and installed together and report this one version (`--version`).
public enum Release {
  public static let version = "0.3.0"
}
