#!/usr/bin/env bash
# Builds stormark's Debian package with Debian's own dpkg-deb: the binary in /usr/bin, the
# agent's systemd unit, its settings in /etc/default/stormark-agent (a conffile: an upgrade
# keeps the host's edits), /etc/stormark for the token (mode 700) and /srv/stormark, the
# directory those settings allow coordinators to benchmark. No maintainer scripts:
# installing starts nothing and makes no secret; the host's administrator does both.
#
#   deploy/deb/build.sh [BINARY] [OUT_DIR]
#       BINARY   default $CARGO_TARGET_DIR/release/stormark where CARGO_TARGET_DIR is set
#                (cargo builds there then), else target/release/stormark (cargo build
#                --release --locked first)
#       OUT_DIR  default deb/ beside that build (target/deb); prints the package's path
#   DEB_COMPRESSION=none|gzip|xz (default xz: the smallest package to copy to many hosts)
#
# On each host:
#   dpkg -i stormark_VERSION_ARCH.deb
#   install -m 600 token /etc/stormark/token          (the cluster's one token)
#   edit --allow-path in /etc/default/stormark-agent  (what coordinators may benchmark)
#   systemctl enable --now stormark-agent
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# Where `cargo build --release` put it: CARGO_TARGET_DIR moves cargo's output (issue 56: the
# documented command failed for a build made with it set).
bin=${1:-${CARGO_TARGET_DIR:-$repo/target}/release/stormark}
out=${2:-${CARGO_TARGET_DIR:-$repo/target}/deb}
[ -x "$bin" ] || { echo "$bin: no such binary (cargo build --release --locked first, or give it: deploy/deb/build.sh BINARY [OUT_DIR])" >&2; exit 2; }
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml" | head -1)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# The package's `./` entry: mktemp's 0700 would make the directory it is unpacked into (`/`
# itself with dpkg -i) unreadable to every other user.
chmod 755 "$stage"
install -D -m 755 "$bin" "$stage/usr/bin/stormark"
install -D -m 644 "$here/stormark-agent.service" "$stage/lib/systemd/system/stormark-agent.service"
install -D -m 644 "$here/stormark-agent.default" "$stage/etc/default/stormark-agent"
install -d -m 700 "$stage/etc/stormark"
# The directory the agent's settings allow by default: without it the agent refuses to start
# (exit 2) and systemd restarts it for ever.
install -d -m 755 "$stage/srv/stormark"
install -D -m 644 "$repo/README.md" "$stage/usr/share/doc/stormark/README.md"
install -D -m 644 "$repo/docs/distributed.md" "$stage/usr/share/doc/stormark/distributed.md"
install -d "$stage/DEBIAN"
echo /etc/default/stormark-agent > "$stage/DEBIAN/conffiles"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: stormark
Version: $version
Architecture: $arch
Maintainer: stormark developers <stormark@example.invalid>
Depends: libc6
Section: admin
Priority: optional
Installed-Size: $(du -sk "$stage" | cut -f1)
Description: storage benchmark: file, block, S3 and network load, one host or many
 stormark measures what storage and the network under it sustain, at what latency, and
 what holds it back, with fio's option names and exact HDR histograms merged across hosts.
 This package holds the binary and the agent's systemd unit (stormark-agent.service).
CONTROL
mkdir -p "$out"
deb="$out/stormark_${version}_${arch}.deb"
dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" --build "$stage" "$deb" >/dev/null
echo "$deb"
