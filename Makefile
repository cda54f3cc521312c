# The two commands README.md promises, plus a few helpers.
# `make bench` runs the main job; `make test` runs the tests. Both install OpenBLAS when missing.

SWIFT ?= swift

.PHONY: deps build test bench bench-quick release peers lint format docs clean

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

# The PostgreSQL store's tests need a real server: CE_POSTGRES_URL when set (CI starts one),
# else a throwaway one from scripts/postgres.sh, stopped when the tests end.
test: deps
	@if [ -n "$$CE_POSTGRES_URL" ]; then \
		$(SWIFT) test -c release; \
	else \
		url="$$(./scripts/postgres.sh start)" || exit 1; \
		CE_POSTGRES_URL="$$url" $(SWIFT) test -c release; status=$$?; \
		./scripts/postgres.sh stop >/dev/null 2>&1; exit $$status; \
	fi

release: deps
	$(SWIFT) build -c release

bench: release
	$(SWIFT) run -c release embeddings-bench

bench-quick: release
	$(SWIFT) run -c release embeddings-bench --quick

peers: release
	./Benchmarks/peers/setup.sh && ./Benchmarks/peers/.venv/bin/python Benchmarks/peers/peers.py
	./Benchmarks/peers/llama-setup.sh && ./Benchmarks/peers/.venv-llama/bin/python Benchmarks/peers/llama_peer.py

# The formatter's check, as CI runs it: swift format lint --strict with .swift-format; any finding fails.
lint:
	./scripts/format-lint.sh

# Formats every Swift file in place (then `make lint` passes).
format:
	./scripts/format-lint.sh --fix

# The DocC catalog of every product module (Sources/<layer>/<Module>/<Module>.docc) with
# --warnings-as-errors, as CI builds them.
docs: release
	./scripts/docs.sh

clean:
	rm -rf .build
