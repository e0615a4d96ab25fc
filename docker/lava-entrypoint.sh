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
manage users list | grep -w admin >/dev/null \
  || manage users add --superuser --staff --passwd admin admin
manage tokens add --user admin --secret "$LAVA_TOKEN" >/dev/null 2>&1 || true
manage workers list | grep -w "$WORKER" >/dev/null || manage workers add "$WORKER"
manage device-types list | grep -w qemu >/dev/null || manage device-types add qemu
cat >"/etc/lava-server/dispatcher-config/devices/$DEVICE.jinja2" <<JINJA
{% extends 'qemu.jinja2' %}
{% set mac_addr = '52:54:00:12:34:59' %}
{% set memory = 1024 %}
JINJA
manage devices list | grep -w "$DEVICE" >/dev/null \
  || manage devices add --device-type qemu --worker "$WORKER" "$DEVICE"
manage devices update --health GOOD "$DEVICE"

cd /
gunicorn3 lava_server.wsgi -u lavaserver -g lavaserver --bind 0.0.0.0:80 --workers 2 \
  --log-file $LOGS/gunicorn.log &
lava-server manage lava-scheduler --level DEBUG --log-file $LOGS/lava-scheduler.log &
lava-server manage lava-publisher --level DEBUG --log-file $LOGS/lava-publisher.log &
api() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' \
        "http://127.0.0.1/api/v0.2/$1"; }
for _ in $(seq 60); do api system/version/ 2>/dev/null && break; sleep 1; done
token=$(manage workers details "$WORKER" | sed -n 's/^token *: //p')
lava-worker --level DEBUG --log-file /var/log/lava-dispatcher/lava-worker.log \
  --url http://127.0.0.1/ --name "$WORKER" --token "$token" &
# Up when the worker has reported in: a job submitted now gets the device. grep reads all of
# `manage`'s output (no -q): with pipefail, grep -q leaving early broke manage's pipe, failed
# the test and never said LAVA-UP (seen under a loaded make test).
for _ in $(seq 300); do
  manage workers details "$WORKER" | grep '^state *: Online' >/dev/null && { echo "LAVA-UP"; break; }
  sleep 1
done
wait -n
