# Shared by scripts/test, scripts/demo and scripts/bench. Source it; do not run it.

# Puts the Swift toolchain on PATH where it is installed but not yet found.
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
  export PATH="/opt/swift/usr/bin:$PATH"
fi

# ensure_packages PKG...: installs the Debian packages that are missing (apt only).
ensure_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "Installing missing packages: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

# The Debian packages the build needs (the .systemLibrary targets' providers).
BUILD_PACKAGES=(libsqlite3-dev libzstd-dev libssl-dev libwebsockets-dev pkg-config)

# The Debian packages only the tests need: python3-websockets is the WebSocket peer
# of the relay's tests (it installs for /usr/bin/python3, not a pyenv python3).
TEST_PACKAGES=(python3-websockets)
