#!/usr/bin/env bash
# Builds the MinIO the S3 tests start (the pinned version of ../shared/tools/build-s3-peers.sh)
# into Go's bin directory, unless it is there already. Needs Go >= 1.25; ~4 min cold on 2 cores.
set -euo pipefail
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "go not found (Go >= 1.25 is needed to build MinIO)" >&2; exit 1; }
MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
bin="$(go env GOPATH)/bin/minio"
if [ -x "$bin" ]; then echo "minio: present at $bin"; exit 0; fi
t0=$SECONDS
go install "github.com/minio/minio@$MINIO_VERSION"
echo "minio: built in $((SECONDS - t0)) s at $bin"
