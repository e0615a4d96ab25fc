#!/bin/bash
# Start a one-container LAVA lab without systemd: PostgreSQL, the server (gunicorn on :80, no
# Apache), the scheduler, the publisher and a local worker with one aarch64 `qemu` device; an
# admin whose API token is $LAVA_TOKEN. Then stay in the foreground.
set -euo pipefail
: "${LAVA_TOKEN:?the admin token}"
DEVICE=${LAVA_DEVICE:-qemu-01}
WORKER=${LAVA_WORKER:-worker-01}
LOGS=/var/log/lava-server

pg_ctlcluster 15 main start
cat >/etc/lava-server/settings.d/50-rtgate.yaml <<YAML
ALLOWED_HOSTS: ["*"]
DEBUG: false
YAML
manage() { lava-server manage "$@"; }
manage users list | grep -qw admin \
  || manage users add --superuser --staff --passwd admin admin
manage tokens add --user admin --secret "$LAVA_TOKEN" >/dev/null 2>&1 || true
manage workers list | grep -qw "$WORKER" || manage workers add "$WORKER"
manage device-types list | grep -qw qemu || manage device-types add qemu
cat >/etc/lava-server/dispatcher-config/devices/$DEVICE.jinja2 <<JINJA
{% extends 'qemu.jinja2' %}
{% set mac_addr = '52:54:00:12:34:59' %}
{% set memory = 1024 %}
JINJA
manage devices list | grep -qw "$DEVICE" \
  || manage devices add --device-type qemu --worker "$WORKER" "$DEVICE"
manage devices update --health GOOD "$DEVICE"

cd /
runuser -u lavaserver -- gunicorn3 lava_server.wsgi --bind 0.0.0.0:80 --workers 2 \
  --log-file $LOGS/gunicorn.log &
lava-server manage lava-scheduler --level DEBUG --log-file $LOGS/lava-scheduler.log &
lava-server manage lava-publisher --level DEBUG --log-file $LOGS/lava-publisher.log &
for _ in $(seq 60); do curl -fs -o /dev/null http://127.0.0.1/api/v0.2/ && break; sleep 1; done
lava-worker --level DEBUG --log-file /var/log/lava-dispatcher/lava-worker.log \
  --url http://127.0.0.1/ --worker-name "$WORKER" &
echo "LAVA-UP"
wait -n
