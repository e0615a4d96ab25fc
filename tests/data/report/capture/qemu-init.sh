#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/usr/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
cd /tmp
for sc in idle cpu; do
  if [ $sc = cpu ]; then stress-ng --cpu 2 --timeout 6s >/dev/null 2>&1 & sleep 1; fi
  cyclictest -m -p99 -i1000 -t -D3 -q -h400 --json=/tmp/$sc.json > /tmp/$sc.txt 2>&1
  wait
  echo "=====BEGIN $sc.json"; cat /tmp/$sc.json; echo "=====END"
  echo "=====BEGIN $sc.txt"; cat /tmp/$sc.txt; echo "=====END"
done
echo "=====BEGIN cmdline"; cat /proc/cmdline; echo "=====END"
echo "=====BEGIN uname"; uname -a; echo "=====END"
poweroff -f
