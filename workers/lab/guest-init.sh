#!/bin/busybox sh
# lorelab's guest init (workers/lab/guest-init.sh): PID 1 of every qemu lab boot.
#
# Mounts the 9p share `job` at /job (job.sh, and the results it writes), the host's root
# read-only at /host (the benchmark binaries run there with `chroot /host`), the scratch disk
# /dev/vda at /host/tmp and swap on /dev/vdb (when there is one), runs /job/job.sh and resets the guest, which ends
# qemu (-no-reboot). Lines starting with "lorelab:" on the console are read by
# workers/lab/qemu.py: `init` (init reached), `job-begin`, `job-end`, each with the guest's uptime,
# and `error` when the job cannot be run.
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
# The host's files do not change during a boot: cache them (binaries load faster).
mount -t 9p -o "$NINEP,ro,cache=loose" hostroot /host ||
  fail "cannot mount the host root (9p share 'hostroot')"
for fs in proc sys dev; do
  mount -o rbind "/$fs" "/host/$fs" || fail "cannot bind /$fs into /host/$fs"
done

# Block devices appear when virtio_blk has probed them: wait up to 5 s.
n=0
while [ ! -b /dev/vda ] && [ $n -lt 50 ]; do usleep 100000; n=$((n + 1)); done
# The scratch disk over the host's /tmp: every host root has /tmp, and programs expect it to
# be writable, which nothing else in the read-only host root is.
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
