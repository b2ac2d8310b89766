#!/bin/sh
# Installs hr-relay as a systemd service from a checkout that has been built
# (`npm ci && npm run build`, see docs/operator.md "Running on a Raspberry Pi (systemd)"):
#   - /etc/systemd/system/hr-relay.service (deploy/hr-relay.service, with PREFIX and NODE filled in)
#   - /etc/hr-relay.json with data_dir /var/lib/hr-relay, unless it exists (never overwritten)
#   - /usr/local/bin/hr-relay, so that `sudo -u hr-relay hr-relay admin ...` finds the command and the data
#   - as root without DESTDIR: the hr-relay system user (groups bluetooth, dialout, audio) and daemon-reload
# Settings (environment): PREFIX (the checkout, default: the one this script is in), NODE (default: `command -v node`),
# DATA_DIR (/var/lib/hr-relay), BINDIR (/usr/local/bin), DESTDIR (a staging root: files go under it, no user, no systemctl).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-$here}
NODE=${NODE:-$(command -v node || true)}
DATA_DIR=${DATA_DIR:-/var/lib/hr-relay}
BINDIR=${BINDIR:-/usr/local/bin}
DESTDIR=${DESTDIR:-}
CONFIG=/etc/hr-relay.json
UNIT=/etc/systemd/system/hr-relay.service

if [ -z "$NODE" ]; then echo "install.sh: no node on the PATH; install Node 24 LTS (or 22) first (or set NODE=/path/to/node)" >&2; exit 1; fi
case "$PREFIX$NODE$DATA_DIR$BINDIR" in *'|'*|*"'"*|*'"'*|*' '*) echo "install.sh: PREFIX, NODE, DATA_DIR and BINDIR must not contain spaces, quotes or |" >&2; exit 1 ;; esac
node_version=$("$NODE" -p 'process.versions.node' 2>/dev/null || echo unknown)
case "$node_version" in
  [0-9]*) if [ "${node_version%%.*}" -lt 22 ]; then echo "install.sh: warning: $NODE is Node $node_version; hr-relay needs Node 22 or newer (24 LTS recommended) and will refuse to start on it" >&2; fi ;;
  *) echo "install.sh: warning: could not run $NODE to read its version" >&2 ;;
esac
if [ ! -f "$PREFIX/bin/hr-relay.cjs" ]; then echo "install.sh: $PREFIX/bin/hr-relay.cjs not found (PREFIX must be the hr-relay checkout)" >&2; exit 1; fi
if [ ! -f "$PREFIX/dist/.build-stamp" ]; then echo "install.sh: warning: $PREFIX has no build (dist/); run npm ci && npm run build there, or the service starts from the TypeScript sources (slower)" >&2; fi

mkdir -p "$DESTDIR$(dirname "$UNIT")" "$DESTDIR$BINDIR" "$DESTDIR$(dirname "$CONFIG")"

# The unit: the shipped file with this box's paths.
sed -e "s|/usr/bin/node |$NODE |" -e "s|/opt/hr-relay|$PREFIX|g" -e "s|/var/lib/hr-relay|$DATA_DIR|g" \
  "$here/deploy/hr-relay.service" > "$DESTDIR$UNIT.tmp"
if [ "$DATA_DIR" != /var/lib/hr-relay ]; then
  # StateDirectory= only manages folders under /var/lib; another data directory is the operator's to create.
  sed -i -e '/^StateDirectory/d' "$DESTDIR$UNIT.tmp"
fi
chmod 0644 "$DESTDIR$UNIT.tmp"
mv "$DESTDIR$UNIT.tmp" "$DESTDIR$UNIT"
echo "install.sh: wrote $DESTDIR$UNIT"

# The configuration: data_dir must be writable under ProtectSystem=strict (the default ./data is not).
if [ -e "$DESTDIR$CONFIG" ]; then
  echo "install.sh: kept the existing $DESTDIR$CONFIG (check that its data_dir is $DATA_DIR)"
else
  printf '{\n  "data_dir": "%s",\n  "demo": false\n}\n' "$DATA_DIR" > "$DESTDIR$CONFIG"
  chmod 0644 "$DESTDIR$CONFIG"
  echo "install.sh: wrote $DESTDIR$CONFIG"
fi

# The command on the PATH, with the service's data directory as the admin commands' default.
cat > "$DESTDIR$BINDIR/hr-relay.tmp" <<WRAPPER
#!/bin/sh
# hr-relay, installed by $PREFIX/deploy/install.sh: admin commands find the service's data directory by default.
HR_RELAY_DATA_DIR=\${HR_RELAY_DATA_DIR:-$DATA_DIR}
export HR_RELAY_DATA_DIR
exec $NODE $PREFIX/bin/hr-relay.cjs "\$@"
WRAPPER
chmod 0755 "$DESTDIR$BINDIR/hr-relay.tmp"
mv "$DESTDIR$BINDIR/hr-relay.tmp" "$DESTDIR$BINDIR/hr-relay"
echo "install.sh: wrote $DESTDIR$BINDIR/hr-relay"

if [ -n "$DESTDIR" ]; then
  echo "install.sh: DESTDIR set: no user created, systemd not reloaded"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: not root: create the hr-relay user and run systemctl daemon-reload yourself" >&2
  exit 0
fi
if ! id hr-relay >/dev/null 2>&1; then
  useradd --system --home-dir "$DATA_DIR" --no-create-home --shell /usr/sbin/nologin hr-relay
  echo "install.sh: created the system user hr-relay"
fi
for g in bluetooth dialout audio; do
  if getent group "$g" >/dev/null; then usermod -a -G "$g" hr-relay; fi
done
systemctl daemon-reload
echo "install.sh: done; now: systemctl enable --now hr-relay && journalctl -u hr-relay -f"
