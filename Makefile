# The common developer tasks in one place; each target runs a script under tools/, which
# says in its header what it does, what it installs and how long it takes.
# `make` (or `make help`) lists them. Extra arguments: `make test ARGS='--filter CLITests'`.

.PHONY: help setup demo test test-deep test-portable asan tsan fuzz bench bench-quick package install ci

help:
	@echo 'make setup          install the Debian packages the build needs, then build (tools/setup.sh)'
	@echo 'make demo           build the bundled sample and look numbers up (tools/demo.sh)'
	@echo 'make test           set up and run every test (tools/test.sh)'
	@echo 'make test-deep      the same with the full sweeps, CALLERID_DEEP_TESTS=1 (docs/TESTING.md)'
	@echo 'make test-portable  every test with the package'"'"'s own XXH3 (tools/test-portable.sh)'
	@echo 'make asan           every test under AddressSanitizer (tools/sanitize.sh address)'
	@echo 'make tsan           every test under ThreadSanitizer (tools/sanitize.sh thread)'
	@echo 'make fuzz TARGET=reader SECONDS=60   TARGET: reader, parser or codec-xxh3 (tools/fuzz.sh)'
	@echo 'make bench          the side-by-side comparison of BENCHMARKS.md (tools/bench.sh)'
	@echo 'make bench-quick    the same, small and fast (tools/bench.sh --quick)'
	@echo 'make package OUT=DIR MAINTAINER="Name <email>"   a Debian package (tools/package-deb.sh)'
	@echo 'make install PREFIX=DIR   lookup, libcallerid.so, callerid.h, man page (tools/install.sh)'
	@echo 'make ci             what CI runs (.ci/run)'

setup:
	bash tools/setup.sh $(ARGS)

demo:
	bash tools/demo.sh

test:
	bash tools/test.sh $(ARGS)

test-deep:
	CALLERID_DEEP_TESTS=1 bash tools/test.sh $(ARGS)

test-portable:
	bash tools/test-portable.sh $(ARGS)

asan:
	bash tools/sanitize.sh address $(ARGS)

tsan:
	bash tools/sanitize.sh thread $(ARGS)

fuzz:
	bash tools/fuzz.sh $(TARGET) $(SECONDS)

bench:
	bash tools/bench.sh $(ARGS)

bench-quick:
	bash tools/bench.sh --quick

package:
	bash tools/package-deb.sh --out $(OUT) --maintainer "$(MAINTAINER)"

install:
	bash tools/install.sh --prefix $(PREFIX)

ci:
	bash .ci/run
