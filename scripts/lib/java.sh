# shellcheck shell=bash
# Finds a JDK >= 25 and exports JAVA_HOME and PATH for it: JAVA_HOME if it is new enough, else
# the usual install locations. The machine's default java may be older (17 on our machines).
jrdma_find_jdk() {
  local candidates=() c v
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
  for c in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-2[5-9]* /usr/lib/jvm/java-2[5-9]* \
           /usr/lib/jvm/jdk-2[5-9]* /usr/lib/jvm/*-2[5-9]* /opt/java/openjdk /opt/jdk-2[5-9]*; do
    [ -d "$c" ] && candidates+=("$c")
  done
  for c in "${candidates[@]}"; do
    [ -x "$c/bin/java" ] || continue
    v=$("$c/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
    if [ -n "$v" ] && [ "${v%%.*}" -ge 25 ] 2>/dev/null; then
      export JAVA_HOME="$c"
      export PATH="$JAVA_HOME/bin:$PATH"
      return 0
    fi
  done
  echo "jrdma: no JDK 25 or newer found (looked at JAVA_HOME and /usr/lib/jvm)." >&2
  echo "jrdma: install one, e.g. Temurin 25 (apt-get install temurin-25-jdk from the Adoptium repository)," >&2
  echo "jrdma: or set JAVA_HOME to a JDK >= 25." >&2
  return 1
}

# Installs Debian packages that are missing, as root; otherwise prints the apt-get line and fails.
jrdma_need_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "jrdma: installing ${missing[*]}" >&2
    apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
  else
    echo "jrdma: missing Debian packages; run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    return 1
  fi
}
