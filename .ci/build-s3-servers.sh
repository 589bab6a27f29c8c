#!/usr/bin/env bash
# Builds, with Go, the S3 servers the tests start and the reference S3 benchmark of bench/,
# at pinned versions, into Go's bin directory, unless there already:
#   minio      the S3 server the tests start (~4 min cold on 2 cores)
#   versitygw  a second S3 server, so that nothing is MinIO-specific (~2.5 min cold)
#   warp       MinIO's S3 benchmark v1.5.0, the reference of bench/vs-warp.sh (~5 min cold)
# Usage: .ci/build-s3-servers.sh [minio] [versitygw] [warp]   (default: minio versitygw, what
# the tests need). MINIO, VERSITYGW or WARP naming a binary skips its build. Needs Go >= 1.25.
#
# warp: v1.5.0 as released needs madmin-go/v4 v4.6.7, which the module proxy reachable here
# refuses; v1.5.0's module source with madmin-go/v4 pinned to v4.6.0 builds (served, but absent
# from the checksum database, hence GONOSUMDB for that one module). warp uses madmin-go only
# for --serverprof, not for the requests it times.
set -euo pipefail
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "go not found (Go >= 1.25 is needed to build MinIO)" >&2; exit 1; }
MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
VERSITYGW_VERSION="${VERSITYGW_VERSION:-v1.8.0}"
WARP_VERSION="${WARP_VERSION:-v1.5.0}"
bin="$(go env GOPATH)/bin"
mkdir -p "$bin"
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
build() { # name, env override, how
  local name=$1 override=$2
  if [ -n "${!override:-}" ]; then echo "$name: $override=${!override}"; return; fi
  if [ -x "$bin/$name" ]; then echo "$name: present at $bin/$name"; return; fi
  local t0=$SECONDS
  case $name in
    minio) go install "github.com/minio/minio@$MINIO_VERSION" ;;
    versitygw) go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" ;;
    warp)
      local dir
      dir=$(go mod download -json "github.com/minio/warp@$WARP_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
      cp -r "$dir" "$scratch/warp" && chmod -R u+w "$scratch/warp"
      (cd "$scratch/warp" && export GOFLAGS=-mod=mod GONOSUMDB=github.com/minio/madmin-go &&
        go mod edit -require=github.com/minio/madmin-go/v4@v4.6.0 && go build -trimpath -o "$bin/warp" .) ;;
  esac
  echo "$name: built in $((SECONDS - t0)) s at $bin/$name"
}
what=("$@"); ((${#what[@]})) || what=(minio versitygw)
for name in "${what[@]}"; do
  case $name in
    minio) build minio MINIO ;;
    versitygw) build versitygw VERSITYGW ;;
    warp) build warp WARP ;;
    *) echo "unknown: $name (minio, versitygw or warp)" >&2; exit 2 ;;
  esac
done
