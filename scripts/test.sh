#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian machine, then run lint and the tests.
# Used by CI (.ci/run) and by developers: `bash scripts/test.sh [pytest args...]`.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v git >/dev/null || need_apt+=(git)
command -v public-inbox-init >/dev/null || need_apt+=(public-inbox)
# a reply's reproduce lines fetch raw mail with curl (tests/report/test_reproduce_fetch.py)
command -v curl >/dev/null || need_apt+=(curl)
# apply/build tests: the simulator tree is built with make and gcc in a sandbox (unshare);
# ccache makes rebuilds cheaper.
command -v make >/dev/null || need_apt+=(make)
command -v gcc >/dev/null || need_apt+=(gcc libc6-dev)
command -v unshare >/dev/null || need_apt+=(util-linux)
command -v ccache >/dev/null || need_apt+=(ccache)
# lab ssh runner tests: a real sshd on 127.0.0.1, reached with the ssh client.
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v ssh >/dev/null || need_apt+=(openssh-client)
# benchmark tests: the memcached benchmark runs memcached under memaslap (memcaslap in Debian);
# anon-swap is linked static, which needs libc6-dev's libc.a.
command -v memcached >/dev/null || need_apt+=(memcached)
command -v memcaslap >/dev/null || need_apt+=(libmemcached-tools)
[ -e "$(gcc -print-file-name=libc.a 2>/dev/null)" ] || need_apt+=(libc6-dev)
# qemu runner tests: boot Debian's kernel (fetched with apt-get download) under TCG with a
# busybox initramfs, run hackbench in the guest, format the guest's scratch disk.
command -v qemu-system-x86_64 >/dev/null || need_apt+=(qemu-system-x86)
# (the initramfs needs a static busybox: ldd fails on it)
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || need_apt+=(busybox-static)
command -v hackbench >/dev/null || need_apt+=(rt-tests)
PATH="$PATH:/usr/sbin:/sbin" command -v mkfs.ext2 >/dev/null || need_apt+=(e2fsprogs)
# status-site tests: pages in a real headless Chromium, driven through Debian's chromedriver.
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    echo "scripts/test.sh: please install: ${need_apt[*]}" >&2; exit 1
  fi
fi

# Services the tests use; on the test machine they are started before the session, but a
# stopped one is started again here (tests that need one skip, with the reason, if it is absent).
if command -v pg_ctlcluster >/dev/null && ! pg_isready -h 127.0.0.1 -q 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if command -v redis-server >/dev/null && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi

python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test]'

.venv/bin/ruff check .
# On every core (pytest-xdist), at most 8 workers: each has a Redis database of its own
# (tests/support/redis_broker.py). Then, in one process, the tests that measure this machine's
# speed (marked `alone`), with no other test beside them. Exit 5 is pytest's "no test selected":
# a selection may hold tests of only one of the two passes.
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider -n auto --maxprocesses 8 --alone skip "$@" \
  || status=$?
alone=0
.venv/bin/python -m pytest -q -p no:cacheprovider -n 0 --alone only "$@" || alone=$?
if [ "$status" -eq 5 ] && [ "$alone" -eq 5 ]; then exit 5; fi
if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then exit "$status"; fi
if [ "$alone" -ne 5 ]; then exit "$alone"; fi
