"""The QEMU virtual board and its guest: the initramfs and its /init (init.sh), the scripts sent
to it over the serial console, and the reading of what it sends back (a LAVA device runs the same
guest)."""
