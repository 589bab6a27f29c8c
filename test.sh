#!/usr/bin/env bash
# stormark's whole test suite on a fresh Debian 12 machine with Rust (and Go, for the S3
# servers): installs what the tests need, then runs fmt, clippy and every test, and ends with
# one line: `tests: N passed, N failed, N skipped`. `.ci/run` calls exactly this.
#
#   ./test.sh                      everything
#   ./test.sh --test integration net::   arguments after the script go to `cargo test`
#
# As root it runs every test (loop devices, mounts, network namespaces need root); as another
# user those tests are skipped, each named with its reason above the closing line. With
# CI=true a test that cannot run fails instead.
set -euo pipefail
cd "$(dirname "$0")"

cat >&2 <<'EOF'
stormark tests: what this installs, if missing, and how long it takes
  Debian packages: mount e2fsprogs xfsprogs iproute2 openssl curl strace zstd lz4 faketime
    chromium fio tgt libiscsi-bin nfs-ganesha nfs-ganesha-vfs rpcbind dbus libnfs-utils
    prometheus podman runc mmdebstrap munge slurmctld slurmd slurm-client openmpi-bin (loop
    devices, XFS for atomic writes, namespaces, TLS certificates, syscall counts, compressors,
    a clock moved an hour, a real browser for the HTML report, fio's fio-genzipf for skewed
    offsets, a user-space iSCSI target and libiscsi for iscsi:// targets, a user-space NFS
    server and libnfs for nfs:// targets, promtool to check the metrics endpoint, a container
    runtime and a Debian base image for the Containerfile, a single-node Slurm and Open MPI
    for --launch)
  the container image's base, made from Debian packages by deploy/container/base.sh into
    podman's store (about 2-3 minutes the first time, then kept while its recipe is unchanged)
  MinIO and versitygw, pinned versions built with Go into Go's bin directory, outside the
    repository (about 6 minutes the first time on 2 cores, then kept)
  then: cargo fmt --check, cargo clippy -D warnings, cargo test (build about 8 minutes cold,
    into a cache kept for the next run; tests about 8 minutes on 2 cores)
EOF

# Builds go to a cache outside the repository, as the S3 servers' do, so that a fresh clone
# on the same machine (CI's) starts from the last build instead of from nothing. CARGO_TARGET_DIR
# set by the caller wins.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/stormark/target}"
echo "builds in $CARGO_TARGET_DIR" >&2

# Each needed command and the Debian package that has it.
missing=()
need() { command -v "$1" >/dev/null || missing+=("$2"); }
need losetup mount
need mkfs.ext4 e2fsprogs
need mkfs.xfs xfsprogs
need ip iproute2
need openssl openssl
need curl curl
need strace strace
need zstd zstd
need lz4 lz4
need faketime faketime
need chromium chromium
need fio-genzipf fio
# A user-space iSCSI target and libiscsi (libiscsi-bin brings libiscsi7, which stormark loads).
need tgtd tgt
need iscsi-inq libiscsi-bin
# A user-space NFS server with its local-file backend, rpcbind and a D-Bus for its statistics,
# and libnfs (libnfs-utils brings libnfs13, which stormark loads).
need ganesha.nfsd nfs-ganesha
ls /usr/lib/*/ganesha/libfsalvfs.so >/dev/null 2>&1 || missing+=(nfs-ganesha-vfs)
need rpcbind rpcbind
need dbus-daemon dbus
need nfs-ls libnfs-utils
# Prometheus' own checker of what --metrics-listen serves.
need promtool prometheus
# A container runtime for the image of the repository's Containerfile (tests/container.rs):
# podman, runc (crun refuses a host with cgroups v1 and v2 mounted side by side), and
# mmdebstrap to make its base from Debian packages where no container registry is reached.
need podman podman
need runc runc
need mmdebstrap mmdebstrap
# A real single-node Slurm (munge for its authentication) and Open MPI, the launchers of
# `run --launch` (tests/launch.rs starts the daemons itself, in a directory of their own).
need munged munge
need slurmctld slurmctld
need slurmd slurmd
need srun slurm-client
need mpirun openmpi-bin
root=$([ "$(id -u)" = 0 ] && echo yes || echo no)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$root" = yes ]; then
    echo "installing: ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  else
    echo "not root: cannot install ${missing[*]}; the tests that need them are skipped" >&2
  fi
fi
if [ "$root" = no ]; then
  echo "not root: loop-device, mount and network-namespace tests are skipped (named at the end)" >&2
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"
bash .ci/build-s3-servers.sh
# The container image's base, made once per machine (tests/container.rs uses it).
if [ "$root" = yes ] && command -v podman >/dev/null && command -v mmdebstrap >/dev/null; then
  bash deploy/container/base.sh >/dev/null ||
    echo "the container base was not made; tests/container.rs tries again and says why" >&2
fi

# STORMARK_TEST_LOAD=N runs N busy loops beside the tests, for as long as they run: the suite
# must hold on a machine doing other work (every timed ground truth measures long enough or
# retries with its reason printed). N is 1 to 64.
hogs=()
if [ -n "${STORMARK_TEST_LOAD:-}" ]; then
  if ! [[ "$STORMARK_TEST_LOAD" =~ ^[0-9]+$ ]] || [ "$STORMARK_TEST_LOAD" -lt 1 ] || [ "$STORMARK_TEST_LOAD" -gt 64 ]; then
    echo "STORMARK_TEST_LOAD=$STORMARK_TEST_LOAD: give a number of busy loops, 1 to 64" >&2
    exit 2
  fi
  for _ in $(seq "$STORMARK_TEST_LOAD"); do
    bash -c 'while :; do :; done' &
    hogs+=($!)
  done
  echo "STORMARK_TEST_LOAD=$STORMARK_TEST_LOAD: $STORMARK_TEST_LOAD busy loops beside the tests (pids ${hogs[*]})" >&2
fi

# Every test runs (--no-fail-fast: one failing module does not hide the rest); each skip is
# written to $STORMARK_TEST_SKIPS by the test kit, to be counted here.
log=$(mktemp)
skips=$(mktemp)
trap 'rm -f "$log" "$skips"; [ ${#hogs[@]} -eq 0 ] || kill "${hogs[@]}" 2>/dev/null' EXIT
export STORMARK_TEST_SKIPS="$skips"
# The cache is shared by every checkout on the machine. Cargo takes a checkout's own crates as
# built when their files are older than the cache's last build of them, even when that build
# came from another checkout: the test binaries then read their fixtures and snapshots through
# that other checkout's path (CARGO_MANIFEST_DIR, compiled in), which may no longer exist. So
# when the last build came from elsewhere, this checkout's crates are built again (a fresh
# clone's newer files rebuild them anyway); dependencies stay cached.
stamp="$CARGO_TARGET_DIR/.stormark-checkout"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$PWD" ]; then
  echo "the cache was last built from $(cat "$stamp"): this checkout's crates are built again" >&2
  own=()
  for manifest in crates/*/Cargo.toml; do
    own+=(-p "$(sed -n '0,/^name = /s/^name = "\(.*\)"$/\1/p' "$manifest")")
  done
  cargo clean -q "${own[@]}"
fi
mkdir -p "$CARGO_TARGET_DIR"
printf '%s\n' "$PWD" > "$stamp"

set +e
# Clippy on the default build (what users get) and with every feature (what the tests run:
# the embedded S3 server too).
(cargo fmt --check && cargo clippy --workspace --all-targets --locked -- -D warnings &&
  cargo clippy --workspace --all-targets --all-features --locked -- -D warnings &&
  cargo test --workspace --all-features --locked --no-fail-fast "$@") 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# The slowest tests, as the test runner names them (those still running after 60 s).
slow=$(sed -n 's/^test \(.*\) has been running for over 60 seconds$/\1/p' "$log" | sort -u)
if [ -n "$slow" ]; then
  echo
  echo "tests that ran over 60 s:"
  echo "$slow" | sed 's/^/  /'
fi
skipped=$(grep -c '^SKIP ' "$skips" || true)
if [ "$skipped" -gt 0 ]; then
  echo
  echo "skipped (counted as passed by cargo, not here):"
  sed 's/^SKIP /  /' "$skips"
fi
# cargo prints one "test result" line per test binary; a skipped test counts there as passed.
awk -v skipped="$skipped" '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;/) p += $i; if ($(i+1) ~ /^failed;/) f += $i } }
     END { printf "tests: %d passed, %d failed, %d skipped\n", p - skipped, f, skipped }' "$log"
exit "$rc"
