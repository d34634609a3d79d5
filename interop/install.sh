#!/usr/bin/env bash
# Installs every peer any interop row needs, by name, at the pinned versions, into
# $INTEROP_HOME (default $HOME/.cache/mcp-interop). Idempotent: a peer already installed at its
# pinned version is left as it is. Fails loudly (non-zero, with the failing step named) when an
# install fails: a row must never be skipped for a missing peer.
set -euo pipefail

INTEROP_HOME="${INTEROP_HOME:-$HOME/.cache/mcp-interop}"
mkdir -p "$INTEROP_HOME"

# Several checkouts on one machine share $INTEROP_HOME: one install at a time (a second one
# waits here, then finds the peers installed).
exec 9>"$INTEROP_HOME/.install.lock"
flock 9

MCP_VERSION=2.3.0
FASTMCP_VERSION=4.2.3
# fastmcp-tasks pins its own FastMCP (fastmcp-slim 4.1.4): a venv of its own.
FASTMCP_TASKS_VERSION=4.1.4
NPM_PEERS=(
  @modelcontextprotocol/sdk@1.32.2
  @modelcontextprotocol/server-everything@2026.8.31
  @modelcontextprotocol/server-filesystem@2026.8.31
  mcp-remote@0.15.1
)

die() { echo "install.sh: $*" >&2; exit 1; }
say() { echo "install.sh: $*" >&2; }

# A venv with one package at one version; remade when the version differs.
venv_with() { # <dir> <package> <version>
  local dir=$1 pkg=$2 version=$3 have
  have=$("$dir/bin/python" -c "import importlib.metadata as m; print(m.version('$pkg'))" 2>/dev/null || true)
  [ "$have" = "$version" ] && return 0
  say "installing $pkg==$version into $dir"
  rm -rf "$dir"
  python3 -m venv "$dir" || die "python3 -m venv $dir failed"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "$pkg==$version" ||
    die "pip install $pkg==$version failed"
  have=$("$dir/bin/python" -c "import importlib.metadata as m; print(m.version('$pkg'))") ||
    die "$pkg is not importable in $dir after install"
  [ "$have" = "$version" ] || die "$dir has $pkg $have, not $version"
}

venv_with "$INTEROP_HOME/venv-mcp" mcp "$MCP_VERSION"
venv_with "$INTEROP_HOME/venv-fastmcp" fastmcp "$FASTMCP_VERSION"
venv_with "$INTEROP_HOME/venv-fastmcp-tasks" fastmcp-tasks "$FASTMCP_TASKS_VERSION"

# npm packages under one prefix; reinstalled when any pinned version differs.
npm_prefix="$INTEROP_HOME/npm"
npm_ok=1
for spec in "${NPM_PEERS[@]}"; do
  name=${spec%@*} version=${spec##*@}
  have=$(node -p "require('$npm_prefix/node_modules/$name/package.json').version" 2>/dev/null || true)
  [ "$have" = "$version" ] || npm_ok=0
done
if [ "$npm_ok" = 0 ]; then
  command -v npm >/dev/null || die "npm is not installed"
  say "installing ${NPM_PEERS[*]} into $npm_prefix"
  mkdir -p "$npm_prefix"
  npm install --prefix "$npm_prefix" --no-audit --no-fund --loglevel=error --save-exact "${NPM_PEERS[@]}" >&2 ||
    die "npm install ${NPM_PEERS[*]} failed"
  for spec in "${NPM_PEERS[@]}"; do
    name=${spec%@*} version=${spec##*@}
    have=$(node -p "require('$npm_prefix/node_modules/$name/package.json').version" 2>/dev/null || true)
    [ "$have" = "$version" ] || die "$name is $have after install, not $version"
  done
fi

# squid (the proxy rows): Debian's package.
if ! command -v squid >/dev/null && [ ! -x /usr/sbin/squid ]; then
  say "installing squid (apt-get)"
  if ! apt-get install -y squid >&2; then
    apt-get update >&2 || die "apt-get update failed"
    apt-get install -y squid >&2 || die "apt-get install -y squid failed"
  fi
  { command -v squid >/dev/null || [ -x /usr/sbin/squid ]; } || die "squid is missing after apt-get install"
fi

say "peers ready in $INTEROP_HOME"
