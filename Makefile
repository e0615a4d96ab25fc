# rtgate: `make demo`, `make check`, `make test`, `make bench`. Each installs what it needs first.
SHELL := /bin/bash
# The project's virtual environment, made by scripts/deps.sh (Debian's python3 refuses pip).
PYTHON ?= $(CURDIR)/.venv/bin/python
export PYTHON
OUT ?= out/demo
# The demo publishes each run into a history kept across demos, and renders its site.
HISTORY ?= out/history
SITE ?= out/site
DEPS := scripts/deps.sh

.PHONY: deps demo demo-local demo-regression check test test-lab test-integration test-e2e bench bench-ab-modes bench-stall-test bench-nsecs bench-plan-bounds bench-pwcet bench-pwcet-cuts \
  bench-kernel bench-bisect bench-calibration calibration-local calibration-qemu-arm64 calibration-qemu-arm64-replay bisect-fixture lint schema clean \
  kernel-builder

deps:
	@$(DEPS) core

# The demo is the whole gate on the virtual Pi: build stock and PREEMPT_RT kernels (a cache hit
# after the first time), boot each in QEMU, measure under load with the host as the iperf3 peer,
# gate, compare, publish. Scenario `net`, not the paper's `all-in`: under TCG emulation all-in
# starves even cyclictest's FIFO-99 threads (measured here: ~3000 samples in 35 s, a partial
# result, exit 3), while `net` separates RT from stock. DEMO_SCENARIOS=all-in tries it anyway.
DEMO_SCENARIOS ?= net
DEMO_DURATION ?= 20s
demo: deps
	@$(DEPS) kernel qemu report
	@rm -rf $(OUT)
	$(PYTHON) -m rtgate pipeline --board qemu-arm64 --flavors stock,rt \
	  --scenarios $(DEMO_SCENARIOS) --duration $(DEMO_DURATION) --out $(OUT); rc=$$?; \
	  [ -f $(OUT)/junit.xml ] || exit $$rc; \
	  site=$$($(PYTHON) -m rtgate report $(OUT) --history $(HISTORY) \
	    --thresholds thresholds.yml --out $(SITE)); src=$$?; [ -n "$$site" ] || exit $$src; \
	  $(PYTHON) -m rtgate kcidb $(OUT) --board qemu-arm64 --scenarios $(DEMO_SCENARIOS) \
	    --origin rtgate_demo --thresholds thresholds.yml --out $(OUT)/kcidb.json >/dev/null \
	    || exit $$?; \
	  echo "results: $(OUT)/{stock,rt}/*/result.json (raw/ and console.log beside them;"; \
	  echo "         infra.json instead where the lab failed)"; \
	  echo "junit:   $(OUT)/junit.xml"; echo "summary: $(OUT)/summary.md"; \
	  echo "compare: $(OUT)/comparison.md"; echo "site:    $$site"; \
	  echo "kcidb:   $(OUT)/kcidb.json (a KCIDB v5.3 report, validated with kcidb-io)"; \
	  if [ $$rc -ne 0 ]; then exit $$rc; fi; exit $$src

# The quick look at this machine: bench the `cpu` scenario on the local board, gate it.
demo-local: deps
	@rm -f $(OUT)-local/result.json
	$(PYTHON) -m rtgate bench --board local --scenario cpu --duration 10s --out $(OUT)-local; \
	  rc=$$?; [ -f $(OUT)-local/result.json ] || exit $$rc
	$(PYTHON) -m rtgate check $(OUT)-local/result.json --thresholds thresholds.yml \
	  --junit $(OUT)-local/junit.xml --markdown $(OUT)-local/summary.md; rc=$$?; \
	  echo "result: $(OUT)-local/result.json"; echo "junit:  $(OUT)-local/junit.xml"; exit $$rc

# The gate refusing a regression: main's kernel for the virtual Pi against the same plus the
# planted latency (1 s with interrupts off every ~3 s), interleaved A/B rounds on qemu-arm64 under
# the gate's budgets and plan until it decides; prints the verdict, the effect and the stall
# counts. The planted kernel's first build takes minutes (ccache), later runs take it from the
# cache; the rounds take 5-15 minutes. DEMO_REGRESSION_ARGS=--plan-only plans without a board.
DEMO_REGRESSION_ARGS ?=
demo-regression: deps
	@$(DEPS) kernel qemu
	$(PYTHON) scripts/demo_regression.py --out $(OUT)-regression $(DEMO_REGRESSION_ARGS)

# The suite in tiers (tests/README.md): tests/unit runs no external program (its conftest fails a
# test that starts one), tests/integration runs real tools for seconds, tests/e2e builds kernels
# and boots guests, containers and a LAVA lab. pytest exits 5 when it collected nothing: that
# must fail, never pass silently.
define pytest
	$(PYTHON) -m pytest $(1); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "make $@: no tests were collected" >&2; exit 1; fi; exit $$rc
endef

# The fast loop: the unit tier, with nothing installed beyond `deps`.
check: deps
	$(call pytest,tests/unit)

# Everything, as CI runs it, on two workers: the suite's latency measurements (guests, LAVA,
# cyclictest here) in one lane, its containers and kernel trees in another beside it, the rest
# wherever a worker has room (tests/conftest.py, LANES).
LANES := -n 2 --dist loadgroup
test: deps
	@$(DEPS) ci report kernel qemu docker lab
	$(call pytest,$(LANES) tests --ignore=$(LAB_E2E))

# docs/lab.md's setup guide run as written on three booted Debian containers, the calibration's
# short rounds included (about 20 minutes warm on a quiet VM, 30 under load; docs/journal.md): its
# own target, so `make test` stays within 25 minutes on 2 cores; .ci/run runs both.
LAB_E2E := tests/e2e/test_lab_ansible.py
test-lab: deps
	@$(DEPS) ci lab
	$(call pytest,$(LAB_E2E))

# rtla is built from the kernel source (kernel, qemu); the fake Pi is a real sshd (qemu).
test-integration: deps
	@$(DEPS) ci report kernel qemu lab
	$(call pytest,tests/integration)

test-e2e: deps
	@$(DEPS) ci report kernel qemu docker lab
	$(call pytest,$(LANES) tests/e2e)

# Benchmarks (docs/journal.md quotes what they printed). `make bench` prints the headline figures
# in about 30 minutes on 2 cores: the site's speed and size, `rtgate check`'s start-up, parsing
# speed, the harness's overhead, the suite's Monte Carlo checks at full size, the A/B rule replayed
# on the recorded A/A banks, a bisect step's chance of "same" within its cap, and whether a short
# run's pWCET predicts a long run's maximum. Hour-long calibrations and demonstrations are targets
# of their own below.
BENCH := site_history check_startup parse_vs_pandas harness_overhead monte_carlo \
  ab_calibration_replay bisect_same_within_cap tail_coverage ab_modes
bench: deps
	@$(DEPS) report
	@for b in $(BENCH); do echo "== benchmarks/$$b.py"; $(PYTHON) benchmarks/$$b.py || exit $$?; done

# The A/B rule against boot-to-boot modes (simulation, 10 000 A/A trials a cell): about 30 s.
bench-ab-modes: deps
	nice -n 10 $(PYTHON) benchmarks/ab_modes.py

# The stall test's choice (level of four tests at 3-8 rounds a side) and power: about 3 min.
bench-stall-test: deps
	nice -n 10 $(PYTHON) benchmarks/stall_test.py

# A calibration record's plan and claims judged against the truth on simulated boards (200 banks
# of 24 rounds a cell, planned from the bank's log-sd bound and from its point estimate): ~20 min.
bench-plan-bounds: deps
	nice -n 10 $(PYTHON) benchmarks/plan_bounds.py

# µs against ns data (issue 40): simulated single-digit-µs tails, this host's -N rounds and the
# cost of -N against bare cyclictest (needs root and cyclictest for the last two): about 6 min.
bench-nsecs: deps
	nice -n 10 $(PYTHON) benchmarks/nsecs_resolution.py

# pWCET interval coverage on synthetic GEV maxima, 400 trials in each of 15 cells, and on
# two-regime maxima (6 cells, where refusal is the goal): over an hour. Then the fit checks alone
# (what they refuse of true GEV maxima and of two-regime ones, 600 series in each of 32 cells,
# against the committed cuts): about 16 minutes on two loaded cores.
bench-pwcet: deps
	nice -n 10 $(PYTHON) benchmarks/pwcet_coverage.py
	nice -n 10 $(PYTHON) benchmarks/pwcet_fit_check.py --series 600

# Re-makes the pWCET fit checks' cuts per number of blocks (rtgate/stats/pwcet-fit-cuts.json)
# from null simulation, 1000 series in each of 30 cells: about 20 minutes on two loaded cores.
# Review the diff, then measure it on other seeds with the fit-check half of bench-pwcet.
bench-pwcet-cuts: deps
	nice -n 10 $(PYTHON) benchmarks/pwcet_fit_cuts.py --series 1000

# A cold kernel build against a ccache rebuild after a one-line change: tens of minutes.
bench-kernel: deps
	@$(DEPS) kernel
	$(PYTHON) benchmarks/kernel_rebuild.py

# The 8-patch bisect on the virtual board with the planted latency: 15-25 minutes.
bench-bisect: deps
	@$(DEPS) kernel qemu
	$(PYTHON) benchmarks/bisect_planted.py

# Re-record the bisect the replay tests re-decide (tests/data/bisect/replay/README.md): the
# series-4 bisect on the virtual board with tests/e2e/test_bisect_qemu.py's settings, kept only
# when it confirms a culprit (exit 1), packed without the kernels, .hist files and console logs.
# 15-60 minutes of QEMU under TCG, depending on the host's load; it replaces the fixture, so the
# tests and README that quote it must follow what it recorded (the README says which).
BISECT_FIXTURE_OUT ?= out/bisect-fixture
BISECT_FIXTURE := tests/data/bisect/replay/series-4-bisect.tar.xz
bisect-fixture: deps
	@$(DEPS) kernel qemu
	@rm -rf $(BISECT_FIXTURE_OUT)
	nice -n 5 $(PYTHON) -m rtgate bisect --board qemu-arm64 --flavor stock \
	  --series tests/data/bisect/series-4 --scenarios idle --round-duration 10s \
	  --step-time 11m --planned-rounds 12 --min-effect-pct 900 \
	  --thresholds tests/data/bisect/thresholds.yml --out $(BISECT_FIXTURE_OUT); rc=$$?; \
	  if [ $$rc -ne 1 ]; then echo "make $@: the bisect exited $$rc, not 1 (a culprit confirmed):" \
	    "$(BISECT_FIXTURE) kept as it was" >&2; exit 1; fi
	tar -C $(BISECT_FIXTURE_OUT) --sort=name --owner=0 --group=0 --exclude=variants \
	  --exclude=cyclictest.hist --exclude=console.log -cJf $(BISECT_FIXTURE) \
	  state.json bisect.json steps
	@echo "$(BISECT_FIXTURE): $$(du -h $(BISECT_FIXTURE) | cut -f1)"

# The A/B gate's real trials (docs/statistics.md): on `local` about 70 minutes; on the virtual
# board A/A and A/B with the planted-latency kernel as B, then the A/B test alone (budgets no
# planted stall can fail), then a moderate effect (20 ms stalls, which the budgets let through):
# about two hours.
QEMU_CALIBRATION_SETTINGS = benchmarks/ab_calibration.py --board qemu-arm64 --flavors stock \
  --scenario idle --round-duration 5s --max-time 120s --planned-rounds 6 --min-effect-pct 10
QEMU_CALIBRATION = $(QEMU_CALIBRATION_SETTINGS) --build-kernels out/bench/qemu-kernels
bench-calibration: deps
	@$(DEPS) kernel qemu
	$(PYTHON) benchmarks/ab_calibration.py
	$(PYTHON) $(QEMU_CALIBRATION)
	$(PYTHON) $(QEMU_CALIBRATION) --aa 0 --thresholds benchmarks/ab-test-alone.thresholds.yml
	$(PYTHON) $(QEMU_CALIBRATION_SETTINGS) --build-kernels out/bench/qemu-kernels-20ms \
	  --planted-length-us 20000 --aa 0

# bench/calibration/local.json from a fresh bank in ns (cyclictest -N, the scenarios' default):
# 23 pairs of 15 s `cpu` rounds of the running kernel, 46 rounds as in the 2026-11-25 bank, about
# 15 minutes, then about 20 minutes of replay. A record banked in whole µs does not calibrate ns
# rounds (docs/statistics.md, "A record's resolution"). LOCAL_BANK_PAIRS=0 replays the archived
# 2026-11-25 bank instead (benchmarks/records/banks/local.tar.xz: µs rounds, so a µs record),
# keeping its date and round times (`rtgate calibrate --rounds 0`).
LOCAL_BANK := out/bench/banks
LOCAL_BANK_PAIRS ?= 23
calibration-local: deps
	rm -rf $(LOCAL_BANK)/local && mkdir -p $(LOCAL_BANK)
	if [ "$(LOCAL_BANK_PAIRS)" = 0 ]; then \
	  tar -C $(LOCAL_BANK) -xJf benchmarks/records/banks/local.tar.xz; fi
	$(PYTHON) -m rtgate calibrate --board local --scenarios cpu --rounds $(LOCAL_BANK_PAIRS) \
	  --round-duration 15s --replays 2000 --min-effect-pct 10 --out $(LOCAL_BANK)/local

# bench/calibration/qemu-arm64.json from a bank big enough for three independent trials at its
# 20-round plan (40 rounds a trial; the 2026-11-25 bank's 27-28 rounds are less than one): 64
# pairs of 20 s `net` rounds of main's stock and rt kernels (kernel-cache hits), 128 rounds a key
# with a few to spare for rounds the emulator cuts short. About 3.3 hours under TCG on the shared
# 2-core VM (3.1 min a pair for both flavors at load 12-20). Not resumable: after a stop,
# QEMU_BANK_PAIRS=0 replays what was banked. Commit the record in a reviewed pull request.
QEMU_BANK ?= out/bench/banks/qemu-arm64
QEMU_BANK_PAIRS ?= 64
QEMU_BANK_REPLAYS ?= 2000
QEMU_BANK_RECORD ?= bench/calibration/qemu-arm64.json
# A replay (QEMU_BANK_PAIRS=0) boots nothing: no kernels built or given.
calibration-qemu-arm64: deps
	@$(DEPS) kernel qemu
	if [ "$(QEMU_BANK_PAIRS)" != 0 ]; then rm -rf $(QEMU_BANK); for f in stock rt; do \
	  $(PYTHON) -m rtgate kernel build --board qemu-arm64 --flavor $$f --quiet \
	    --out $(QEMU_BANK)-kernels/$$f || exit $$?; done; fi
	nice -n 5 $(PYTHON) -m rtgate calibrate --board qemu-arm64 \
	  $(if $(filter-out 0,$(QEMU_BANK_PAIRS)),--kernels $(QEMU_BANK)-kernels) \
	  --flavors stock,rt --scenarios net --round-duration 20s --rounds $(QEMU_BANK_PAIRS) \
	  --replays $(QEMU_BANK_REPLAYS) --record $(QEMU_BANK_RECORD) --out $(QEMU_BANK)

# bench/calibration/qemu-arm64.json re-replayed under the current rule from the bank it was
# made from (benchmarks/records/banks/qemu-arm64.tar.xz: 28 stock and 27 rt rounds of 20 s `net`,
# 2026-11-25), keeping the bank's date and round times: no round measured, no kernel built;
# about 40 minutes of replay at 1000 resamples on the shared VM. Fewer rounds than one independent trial: the record says what
# the bank cannot show. The three-trial bank is calibration-qemu-arm64 above.
calibration-qemu-arm64-replay: deps
	rm -rf $(QEMU_BANK) && mkdir -p $(dir $(QEMU_BANK))
	tar -C $(dir $(QEMU_BANK)) -xJf benchmarks/records/banks/qemu-arm64.tar.xz
	$(MAKE) calibration-qemu-arm64 QEMU_BANK_PAIRS=0 QEMU_BANK_REPLAYS=1000

lint: deps
	$(PYTHON) -m ruff check rtgate tests benchmarks scripts docs/hooks

# The kernel builder image on the local dockerd (started if none answers), no Docker Hub needed.
kernel-builder: deps
	@$(DEPS) kernel docker
	docker/kernel-builder.sh

schema:
	$(PYTHON) -m rtgate.documents

clean:
	rm -rf out .pytest_cache
