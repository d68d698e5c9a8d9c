# Shared by hw/test, hw/synth and scripts/test (sourced, not run): tool installation and the
# xlat binary.

# need_tools CMD:PACKAGE ...: installs the Debian packages of the commands that are missing,
# as root or through passwordless sudo; fails with the apt-get command to run otherwise.
need_tools() {
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo)
    else
      echo "error: missing ${missing[*]}; install them with: sudo apt-get install -y ${missing[*]}" >&2
      return 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: missing ${missing[*]} and no apt-get to install them (Debian packages ${missing[*]})" >&2
    return 1
  fi
  echo "installing ${missing[*]} (apt-get)" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine may have no package lists yet: update only when the first try fails.
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >&2 \
    || { "${sudo[@]}" apt-get update >&2 && "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >&2; } \
    || { echo "error: apt-get could not install ${missing[*]}" >&2; return 1; }
}

# xlat_bin: prints the path of the xlat binary: $XLAT if set (scripts/test passes the one its
# cargo test run built), else a debug build made here.
xlat_bin() {
  if [ -n "${XLAT:-}" ]; then
    [ -x "$XLAT" ] || { echo "error: XLAT=$XLAT is not an executable" >&2; return 1; }
    echo "$XLAT"
    return 0
  fi
  command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
  local bin
  bin=$(cargo build --locked --quiet -p xlat-cli --message-format=json-render-diagnostics | executable_of xlat)
  [ -x "$bin" ] || { echo "error: cargo build did not produce the xlat binary" >&2; return 1; }
  echo "$bin"
}

# executable_of NAME: reads cargo's JSON messages and prints the path of binary NAME.
executable_of() {
  grep -o "\"executable\":\"[^\"]*/$1\"" | head -n 1 | cut -d'"' -f4
}
