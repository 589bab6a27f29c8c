#!/usr/bin/env bash
# Makes the container image's base from Debian packages alone, for a machine that reaches
# Debian's archive but no container registry (stormark's CI): Debian 12 "minbase" (what
# debian:bookworm-slim holds) with the libraries the runtime loads, made by mmdebstrap and
# imported into podman. Prints the image's name, to be given to the Containerfile:
#
#   podman build --build-arg BASE="$(deploy/container/base.sh)" -t stormark:0.1.0 .
#
# Made once per machine: the name carries a digest of this script (the recipe), so an image
# made by the same recipe is used again (printed at once) and a changed recipe makes a new one
# (about 2 minutes, 180 MB; the older one is removed). Needs mmdebstrap and podman, as root.
set -euo pipefail
suite=bookworm
packages=libiscsi7,libnfs13,ca-certificates
key=$(sha256sum "$0" | cut -c1-12)
name=localhost/stormark-base:$suite-$key
for tool in mmdebstrap podman; do
  command -v "$tool" >/dev/null || { echo "$tool not found (apt-get install mmdebstrap podman)" >&2; exit 2; }
done
# Two builds at once (tests running side by side) make it once.
exec 9>"${TMPDIR:-/tmp}/stormark-base.lock"
flock 9
if podman image exists "$name"; then
  echo "$name"
  exit 0
fi
t0=$SECONDS
# Without documentation and manual pages, as the slim images are.
mmdebstrap --quiet --variant=minbase --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  "$suite" - |
  podman import --quiet \
    --change 'ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD=["/bin/bash"]' - "$name" >/dev/null
# Older recipes' bases, no longer named by this one.
podman images --noheading --format '{{.Repository}}:{{.Tag}}' localhost/stormark-base |
  grep -vx "$name" | xargs -r podman rmi --force >/dev/null 2>&1 || true
echo "base $name made in $((SECONDS - t0)) s" >&2
echo "$name"
