# The two commands README.md promises, plus a few helpers.
# `make bench` runs the main job; `make test` runs the tests. Both install OpenBLAS when missing.

SWIFT ?= swift

.PHONY: deps build test bench bench-quick release peers clean

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

test: deps
	$(SWIFT) test -c release

release: deps
	$(SWIFT) build -c release

bench: release
	$(SWIFT) run -c release embeddings-bench

bench-quick: release
	$(SWIFT) run -c release embeddings-bench --quick

peers:
	./Benchmarks/peers/setup.sh && ./Benchmarks/peers/.venv/bin/python Benchmarks/peers/peers.py

clean:
	rm -rf .build
