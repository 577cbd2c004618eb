#!/bin/sh
# readtwice: page-cache reads of use-twice pages (vm-scalability's case-lru-file-readtwice).
#
# Usage: readtwice.sh DIR MB [FILES]
#
# Makes FILES sparse files (0 or absent: one per CPU) of MB MiB in all in DIR, reads each with
# two dd readers at once, so that every page is used twice (the second use activates it), then
# removes them. Reading a hole fills the page cache without disk I/O, so with MB above memory
# the run is bound by page-cache allocation, LRU activation and reclaim.
# Prints `name: value` lines: files, mb, read_mb (2 * MB), seconds, mb_per_s.
# POSIX sh and busybox compatible: it also runs in a minimal guest.
set -u

die() { echo "readtwice: $*" >&2; exit 1; }

[ $# -ge 2 ] || die "usage: readtwice.sh DIR MB [FILES]"
dir=$1 mb=$2 files=${3:-0}
case $mb in ''|*[!0-9]*) die "MB must be a whole number, not '$mb'" ;; esac
case $files in ''|*[!0-9]*) die "FILES must be a whole number, not '$files'" ;; esac
[ -d "$dir" ] || die "no directory $dir"
# tmpfs pages are shmem (swap-backed), not file pages: the run would measure something else.
fstype=$(stat -f -c %T "$dir" 2>/dev/null)
case $fstype in tmpfs|ramfs) die "$dir is on $fstype; give it a directory on a disk filesystem" ;; esac
if [ "$files" -eq 0 ]; then
  files=$(nproc 2>/dev/null || grep -c ^processor /proc/cpuinfo)
fi
per_file=$((mb / files))
[ "$per_file" -gt 0 ] || die "$mb MB is less than 1 MB for each of $files files"

now() {
  t=$(date +%s.%N)
  case $t in
    *N*) cut -d' ' -f1 /proc/uptime ;;  # a date without nanoseconds: 10 ms resolution
    *) echo "$t" ;;
  esac
}

work="$dir/readtwice.$$"
rm -rf "$work" && mkdir -p "$work" || die "cannot make $work"
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM

i=1
while [ $i -le "$files" ]; do
  dd if=/dev/null of="$work/file-$i" bs=1048576 count=0 seek="$per_file" 2>"$work/err" ||
    die "cannot make a sparse file in $dir: $(cat "$work/err")"
  i=$((i + 1))
done

start=$(now)
pids=
i=1
while [ $i -le "$files" ]; do
  for reader in a b; do
    dd if="$work/file-$i" of=/dev/null bs=1048576 2>"$work/dd-$i$reader.err" &
    pids="$pids $!"
  done
  i=$((i + 1))
done
failed=0
for pid in $pids; do
  wait "$pid" || failed=1
done
end=$(now)
[ $failed -eq 0 ] || die "a reader failed: $(cat "$work"/dd-*.err)"

awk -v files="$files" -v mb="$((per_file * files))" -v start="$start" -v end="$end" 'BEGIN {
  seconds = end - start
  printf "files: %d\nmb: %d\nread_mb: %d\nseconds: %.6f\nmb_per_s: %.1f\n",
    files, mb, 2 * mb, seconds, 2 * mb / seconds
}'
