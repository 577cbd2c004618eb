#!/bin/sh
# memcached: a memcached server under load from memaslap (libmemcached's load generator).
#
# Usage: memcached.sh -p PORT -m MB -t SECONDS -T THREADS -c CONCURRENCY -X VALUE_BYTES -w WINDOW
#
# Starts memcached on 127.0.0.1:PORT with MB of item memory, waits until it listens, drives it
# for SECONDS (THREADS client threads, CONCURRENCY connections, values of VALUE_BYTES, WINDOW
# keys per connection: the data set is about CONCURRENCY * WINDOW * VALUE_BYTES), stops it and
# prints memaslap's report (with its latency statistics) on stdout.
# POSIX sh and busybox compatible: it also runs in a minimal guest.
set -u

die() { echo "memcached.sh: $*" >&2; exit 1; }

port=11311 mb=256 seconds=10 threads=2 concurrency=16 value=4096 window=8k
while getopts p:m:t:T:c:X:w: option; do
  case $option in
    p) port=$OPTARG ;;
    m) mb=$OPTARG ;;
    t) seconds=$OPTARG ;;
    T) threads=$OPTARG ;;
    c) concurrency=$OPTARG ;;
    X) value=$OPTARG ;;
    w) window=$OPTARG ;;
    *) die "usage: memcached.sh -p PORT -m MB -t SECONDS -T THREADS -c CONCURRENCY" \
         "-X VALUE_BYTES -w WINDOW" ;;
  esac
done

command -v memcached >/dev/null || die "memcached is not installed (Debian: memcached)"
# Debian installs libmemcached's memaslap as memcaslap.
if command -v memcaslap >/dev/null; then
  driver=memcaslap
elif command -v memaslap >/dev/null; then
  driver=memaslap
else
  die "memcaslap is not installed (Debian: libmemcached-tools)"
fi

# A fresh guest, and the sandbox's network namespace, start with the loopback interface down
# (and /sys/class/net may describe another namespace's): bring it up whatever it says.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null ||
  die "cannot bring the loopback interface up (no ip or ifconfig?)"

# A listening socket in /proc/net/tcp: local address 0100007F:PORT (hex), state 0A.
listening() {
  grep -q "^ *[0-9]*: 0100007F:$(printf %04X "$port") 00000000:0000 0A" /proc/net/tcp
}
# Another server on the port would be measured instead of ours.
listening && die "127.0.0.1:$port is already in use; choose another port"

# memaslap's default key, value and command mix: without -F it writes them to .memslap.cnf in
# the passwd home directory, which the sandbox hides (and a guest may not have).
config=$(mktemp) || die "cannot make a temporary file (is TMPDIR writable?)"
printf 'key\n64 64 1\nvalue\n1024 1024 1\ncmd\n0 0.1\n1 0.9\n' > "$config"

as_root=
[ "$(id -u)" -eq 0 ] && as_root="-u root"  # memcached refuses to run as root without -u
# shellcheck disable=SC2086
memcached -l 127.0.0.1 -p "$port" -U 0 -m "$mb" $as_root &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$config"' EXIT
trap 'exit 1' INT TERM

tries=0
until listening; do
  kill -0 $server 2>/dev/null || die "memcached exited before it listened on 127.0.0.1:$port"
  tries=$((tries + 1))
  [ $tries -le 300 ] || die "memcached did not listen on 127.0.0.1:$port within 30 s"
  sleep 0.1
done

# -S: print the latency statistics once, at the end.
$driver -s "127.0.0.1:$port" -F "$config" -t "${seconds}s" -S "${seconds}s" -T "$threads" \
  -c "$concurrency" -X "$value" -w "$window" || die "$driver failed"
