# Shell helpers shared by the project's scripts; source it, don't run it.

# apt_install installs Debian packages with apt-get, through sudo unless
# running as root. Callers check first, so that it runs only when needed.
apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing $* with apt-get" >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
