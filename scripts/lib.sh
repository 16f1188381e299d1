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

# go_install installs the Go command pkg at version (a module version,
# v1.2.3) into .cache/bin under the current folder (the repository root),
# unless the binary there was built from that version by the go command in
# use (go version -m; a new toolchain rebuilds it, as tools that read our
# code must know its Go version). Prints a line when it installs.
go_install() {
  local pkg=$1 version=$2 bin=.cache/bin/${1##*/}
  if [ -x "$bin" ] &&
    [ "$(go version -m "$bin" 2>/dev/null | awk '$1 == "mod" { print $3 }')" = "$version" ] &&
    [ "$(go version "$bin" | awk '{ print $2 }')" = "$(go env GOVERSION)" ]; then
    return 0
  fi
  echo "installing $pkg@$version into .cache/bin" >&2
  GOBIN="$PWD/.cache/bin" go install "$pkg@$version"
}
