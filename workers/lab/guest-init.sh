#!/bin/busybox sh
# lorelab's guest init (workers/lab/guest-init.sh): PID 1 of every qemu lab boot.
#
# Mounts the 9p share `job` at /job (job.sh, the benchmark's own files, and the results it
# writes) and makes /host, the root the benchmark runs in with `chroot /host`: the host's /usr
# read-only (9p share `hostusr`, the only host files the guest sees) with the merged-usr links
# to it, a minimal /etc of its own, the scratch disk /dev/vda as /tmp, /job, /proc, /sys, /dev.
# Turns swap on on /dev/vdb (when there is one), runs /job/job.sh and resets the guest, which
# ends qemu (-no-reboot). Lines starting with "lorelab:" on the console are read by
# workers/lab/qemu.py: `init` (init reached), `job-begin`, `job-end`, each with the guest's
# uptime, and `error` when the job cannot be run.
/bin/busybox mkdir -p /bin /sbin /usr/bin /usr/sbin /proc /sys /dev /job /host
/bin/busybox --install -s
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

uptime_s() { cut -d' ' -f1 /proc/uptime; }
say() { echo "lorelab: $*"; }
finish() { sync; reboot -f; }
fail() { say "error $*"; finish; }

say "init kernel=$(uname -r) uptime=$(uptime_s)"

# A distro kernel's modules (virtio, 9p, ext4), in dependency order; none with a kernel that
# has them built in.
if [ -f /lib/modules/load ]; then
  while read -r module; do
    insmod "/lib/modules/$module" || say "warning: cannot load $module"
  done < /lib/modules/load
fi

mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "cannot mount cgroup2 at /sys/fs/cgroup"
NINEP=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o "$NINEP" job /job || fail "cannot mount the 9p share 'job'"

# /host lives in the initramfs (writable, the guest's own): only /host/usr comes from the host.
mkdir -p /host/usr /host/etc/alternatives /host/tmp /host/proc /host/sys /host/dev /host/job
# The host's files do not change during a boot: cache them (binaries load faster).
mount -t 9p -o "$NINEP,ro,cache=loose" hostusr /host/usr ||
  fail "cannot mount the host's /usr (9p share 'hostusr')"
[ -x /host/usr/bin/env ] || fail "no bin/env in the host's /usr (9p share 'hostusr')"
for dir in bin sbin lib lib64; do ln -s "usr/$dir" "/host/$dir"; done
printf '%s\n' 'root:x:0:0:root:/:/bin/sh' \
  'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' > /host/etc/passwd
printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' > /host/etc/group
printf '%s\n' '127.0.0.1 localhost' '::1 localhost' > /host/etc/hosts
printf '%s\n' 'passwd: files' 'group: files' 'hosts: files' > /host/etc/nsswitch.conf
# Debian's links in /usr/bin (awk, nc, ...) go through /etc/alternatives: the host sends them.
if [ -f /job/alternatives.tar ]; then
  tar -xf /job/alternatives.tar -C /host/etc/alternatives ||
    fail "cannot unpack /job/alternatives.tar into /host/etc/alternatives"
fi
for fs in proc sys dev job; do
  mount -o rbind "/$fs" "/host/$fs" || fail "cannot bind /$fs into /host/$fs"
done

# Block devices appear when virtio_blk has probed them: wait up to 5 s.
n=0
while [ ! -b /dev/vda ] && [ $n -lt 50 ]; do usleep 100000; n=$((n + 1)); done
# The scratch disk as /tmp, which programs expect to be writable; a disk file system, unlike the
# initramfs, so that page-cache benchmarks there use file pages.
mount -t ext2 /dev/vda /host/tmp || fail "cannot mount the scratch disk /dev/vda on /host/tmp"
chmod 1777 /host/tmp
# The host ran mkswap on it (busybox's mkswap takes a second under TCG).
if [ -b /dev/vdb ]; then
  swapon /dev/vdb || fail "cannot swap on /dev/vdb"
fi

[ -f /job/job.sh ] || fail "no job.sh in the job share"
say "job-begin uptime=$(uptime_s)"
sh /job/job.sh
say "job-end rc=$? uptime=$(uptime_s)"
finish
