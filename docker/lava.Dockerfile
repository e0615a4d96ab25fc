# A throwaway LAVA server + dispatcher (Debian 12's lava 2023.01) for rtgate's lava driver tests.
# Built by docker/lava.sh on docker/debian-base.sh's image; its packages pull in half a system
# (udev, lvm2, libguestfs), which is why it lives here and never on the host.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8

# lava-server's postinst creates its database: PostgreSQL must be installed and running first.
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql ca-certificates \
 && pg_ctlcluster 15 main start \
 && apt-get install -y lava-server lava-dispatcher lavacli qemu-system-arm \
 && pg_ctlcluster 15 main stop \
 && rm -rf /var/lib/apt/lists/*

COPY lava-entrypoint.sh /usr/local/bin/lava-entrypoint.sh
EXPOSE 80
ENTRYPOINT ["/usr/local/bin/lava-entrypoint.sh"]
