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

# What the programs load only when they need it: libvips makes thumbnails (dlopen'ed on
# first use, decision 0019: linked, its 103 libraries cost every start 32 ms).
RUNTIME_PACKAGES=(libvips42)

# The Debian packages only the tests need: python3-websockets is the WebSocket peer
# of the relay's tests (it installs for /usr/bin/python3, not a pyenv python3); openssl
# makes the TLS tests' throwaway CA and certificates, and curl is one of their clients;
# zstd reads an export back in EditedHistoryTests (the outside tool, not our reader).
TEST_PACKAGES=(python3-websockets openssl curl zstd "${RUNTIME_PACKAGES[@]}")

# Installs a PyPI package for the `python3` on PATH when its module is missing: $1 the
# module, $2 the package (tuspy, the outside tus client of the upload tests). pip comes
# from Debian when that python3 has none; Debian's own python3 is "externally managed"
# (PEP 668), so pip is asked again with --break-system-packages there.
ensure_python_module() {
  python3 -c "import $1" 2>/dev/null && return 0
  echo "Installing the Python package $2 (pip)" >&2
  python3 -m pip --version >/dev/null 2>&1 || ensure_packages python3-pip
  python3 -m pip install --quiet "$2" >&2 2>/dev/null || python3 -m pip install --quiet --break-system-packages "$2" >&2
  python3 -c "import $1" || { echo "Error: python3 cannot import $1 after installing $2" >&2; exit 1; }
}

# Raises the open-file limit to $1 descriptors for this shell and its children (root can go
# past the hard limit; elsewhere, or in a container without CAP_SYS_RESOURCE, up to it), or
# exits 1 saying why ($2 names what needs them, e.g. "10000 sockets (use --connections)").
raise_open_files() {
  local want=$1 hard
  hard=$(ulimit -Hn)
  if [ "$hard" != unlimited ] && [ "$hard" -lt "$want" ]; then ulimit -Hn "$want" 2>/dev/null || true; fi
  ulimit -n "$want" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
  if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want" ]; then
    echo "Error: open files limited to $(ulimit -n), $want needed for $2" >&2
    exit 1
  fi
}
