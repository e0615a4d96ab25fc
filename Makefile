# rtgate: `make demo`, `make test`, `make bench`. Each installs what it needs first.
SHELL := /bin/bash
PYTHON ?= python3
OUT ?= out/demo
# The demo publishes each run into a history kept across demos, and renders its site.
HISTORY ?= out/history
SITE ?= out/site
DEPS := scripts/deps.sh

.PHONY: deps demo test bench lint schema clean kernel-builder

deps:
	@$(DEPS) core

# A partial/degraded bench (exit 3) still writes result.json: gate it anyway, so the demo shows
# the verdict (check exits 3 too); a stale result.json from an earlier run never stands in.
demo: deps
	@rm -f $(OUT)/result.json
	$(PYTHON) -m rtgate bench --board local --scenario cpu --duration 10s --out $(OUT); \
	  rc=$$?; [ -f $(OUT)/result.json ] || exit $$rc
	$(PYTHON) -m rtgate check $(OUT)/result.json --thresholds thresholds.yml \
	  --junit $(OUT)/junit.xml --markdown $(OUT)/summary.md; rc=$$?; \
	  echo "result: $(OUT)/result.json"; echo "junit:  $(OUT)/junit.xml"; \
	  echo "summary: $(OUT)/summary.md"; \
	  site=$$($(PYTHON) -m rtgate report $(OUT)/result.json --history $(HISTORY) \
	    --thresholds thresholds.yml --out $(SITE)) || exit $$?; \
	  echo "site:   $$site"; exit $$rc

# pytest exits 5 when it collected nothing: that must fail, never pass silently.
test: deps
	@$(DEPS) ci report kernel qemu docker
	$(PYTHON) -m pytest tests; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "make test: no tests were collected" >&2; exit 1; fi; exit $$rc

bench: deps
	@$(DEPS) kernel
	@for b in bench/perf/*.py; do echo "== $$b"; $(PYTHON) $$b || exit $$?; done

lint: deps
	$(PYTHON) -m ruff check rtgate tests bench

# The kernel builder image on the local dockerd (started if none answers), no Docker Hub needed.
kernel-builder: deps
	@$(DEPS) kernel docker
	docker/kernel-builder.sh

schema:
	$(PYTHON) -m rtgate.result --schema
	$(PYTHON) -m rtgate.gate.thresholds --schema

clean:
	rm -rf out .pytest_cache
