# Sourced by the scripts that run stormark beside fio: fio installed if missing, stormark built
# unless STORMARK names a binary, and OUT a fresh directory inside BENCH_DIR (made if missing),
# removed on exit with BENCH_DIR itself when this made it. Usage: fio_side NAME.
fio_side() {
  BENCH_DIR=${BENCH_DIR:-$PWD/bench-data}
  FIO=${FIO:-fio}
  command -v "$FIO" >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >/dev/null; }
  if [ -z "${STORMARK:-}" ]; then
    cargo build --release --locked -q
    STORMARK=$PWD/target/release/stormark
  fi
  made_dir=no
  [ -d "$BENCH_DIR" ] || { mkdir -p "$BENCH_DIR"; made_dir=yes; }
  OUT=$(mktemp -d -p "$BENCH_DIR" "$1.XXXX")
  trap 'rm -rf "$OUT"; [ $made_dir = yes ] && rmdir "$BENCH_DIR" 2>/dev/null; true' EXIT
  echo "fio: $("$FIO" --version)  stormark: $("$STORMARK" --version)  cores: $(nproc)  fs: $(df -T "$BENCH_DIR" | tail -1 | awk '{print $2}')"
}
