#!/usr/bin/env bash
# Builds the S3 servers the tests start, the pinned versions of ../shared/tools/build-s3-peers.sh,
# into Go's bin directory, unless there already: MinIO (~4 min cold on 2 cores) and versitygw
# (a second server, so that nothing is MinIO-specific; ~2.5 min cold). Needs Go >= 1.25.
set -euo pipefail
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "go not found (Go >= 1.25 is needed to build MinIO)" >&2; exit 1; }
MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
VERSITYGW_VERSION="${VERSITYGW_VERSION:-v1.8.0}"
bin="$(go env GOPATH)/bin"
build() { # name, package@version, env override
  local name=$1 pkg=$2 override=$3
  if [ -n "${!override:-}" ]; then echo "$name: $override=${!override}"; return; fi
  if [ -x "$bin/$name" ]; then echo "$name: present at $bin/$name"; return; fi
  local t0=$SECONDS
  go install "$pkg"
  echo "$name: built in $((SECONDS - t0)) s at $bin/$name"
}
build minio "github.com/minio/minio@$MINIO_VERSION" MINIO
build versitygw "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" VERSITYGW
