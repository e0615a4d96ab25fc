#!/bin/busybox sh
# rtgate guest init: bring up a minimal userland, announce the running kernel on the serial
# console, then run each script the host sends over the same console, until powered off.
# The console is the only channel: the guest kernel carries no 9p or block drivers.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /usr/sbin /sbin /usr/bin /bin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
# The kernel found no /dev/console in the archive (it is not built as root): attach now.
exec </dev/console >/dev/console 2>&1
# Kernel messages would interleave with the base64 results on the same console.
echo 1 >/proc/sys/kernel/printk
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ip link set lo up
# QEMU user-mode networking: fixed guest address behind the emulator's NAT.
if ip link set eth0 up 2>/dev/null; then
  ip addr add 10.0.2.15/24 dev eth0
  ip route add default via 10.0.2.2
fi
stty -echo 2>/dev/null
while :; do
  echo "RTGATE-READY release=$(uname -r) cpus=$(nproc)"
  rm -f /tmp/run.b64
  while IFS= read -r line; do
    case "$line" in
      RTGATE-GO*) break ;;
      RTGATE-POWEROFF*) poweroff -f ;;
      *) echo "$line" >>/tmp/run.b64 ;;
    esac
  done
  base64 -d </tmp/run.b64 >/tmp/run.sh && sh /tmp/run.sh
  echo "RTGATE-DONE rc=$?"
done
