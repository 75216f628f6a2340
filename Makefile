# Builds that need Debian's rustc 1.96 toolchain (scripts/setup-sbf.sh), kept
# apart from rustup's host toolchain: they call /usr/bin/cargo and
# /usr/bin/rustc by path and use their own target dirs, so neither toolchain
# invalidates the other's fingerprints. See docs/sbf.md.

SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

DEB_CARGO := /usr/bin/cargo
DEB_RUSTC := /usr/bin/rustc
# A RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS variable would replace the
# rustflags of .cargo/config.toml, and a RUSTC_WRAPPER or
# RUSTC_WORKSPACE_WRAPPER (clippy-driver, as HOST_CARGO sets it) would run
# rustup's rustc, which has no SBF standard library: clear them for the
# Debian builds. DEB_ENV_STABLE is stable Rust
# (what a program outside this repository builds with, the storyteller);
# DEB_ENV adds RUSTC_BOOTSTRAP=1 for the core's inline assembly
# (asm_experimental_arch) and -Zbuild-std.
DEB_ENV_STABLE := env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u RUSTC_WRAPPER -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS -u RUSTC_BOOTSTRAP RUSTC=$(DEB_RUSTC)
DEB_ENV := $(DEB_ENV_STABLE) RUSTC_BOOTSTRAP=1

SBF_TARGET := bpfel-unknown-none
SBF_TARGET_DIR := $(ROOT)/target/sbf
DEPLOY_DIR := $(ROOT)/target/deploy
# The program built for SBF by Debian's cargo, linked into SBPF v3 by
# sbpf-linker 0.2.6 (scripts/setup-sbf.sh puts it in target/sbpf-linker;
# .cargo/config.toml names it and its flags), written once for build-sbf,
# build-sbf-probe, build-sbf-v0 and test-reproducible (each adds its target
# dir, and its features, flags or -q), so their builds cannot drift apart.
SBF_CARGO = $(call SBF_CARGO_OF,curta-program)
# The same for any package ($(1)) of the workspace that is an SBF program.
SBF_CARGO_OF = cd $(ROOT) && $(DEB_ENV) $(DEB_CARGO) build -p $(1) --lib --target $(SBF_TARGET) --profile sbf
# Installs the program cargo built ($(1): its target dir) as $(2), after
# checking its ELF header: e_machine EM_BPF (247) and e_flags $(3) (the
# SBPF version), or the recipe fails.
INSTALL_SBF = $(call INSTALL_SBF_LIB,$(1),$(2),$(3),curta_program)
# The same for the library named $(4).
INSTALL_SBF_LIB = $(call INSTALL_SBF_PROFILE,$(1),$(2),$(3),$(4),sbf)
# The same for the profile $(5) (its folder under the target's).
INSTALL_SBF_PROFILE = llvm-readelf-22 -h $(1)/$(SBF_TARGET)/$(5)/lib$(4).so | tr -s ' ' > $(1)/elf-header.txt && \
	grep -q -x ' Machine: EM_BPF' $(1)/elf-header.txt && grep -q -x ' Flags: $(3)' $(1)/elf-header.txt || \
	{ echo "$(1)/$(SBF_TARGET)/$(5)/lib$(4).so is not an SBPF ELF with e_flags $(3):" >&2; cat $(1)/elf-header.txt >&2; exit 1; } ; \
	install -D -m 0644 $(1)/$(SBF_TARGET)/$(5)/lib$(4).so $(2) && ls -l $(2)
# The example consumer program (examples/storyteller): a workspace of its
# own, as a program outside this repository would be (pinocchio 0.12, which
# Agave 4.0's crates cannot share a graph with), built as its README says:
# stable Rust (no RUSTC_BOOTSTRAP), its own release profile, the linker
# and flags of .cargo/config.toml, into a target dir of its own.
STORYTELLER_MANIFEST := $(ROOT)/examples/storyteller/Cargo.toml
STORYTELLER_TARGET_DIR := $(ROOT)/target/sbf-storyteller
STORYTELLER_HOST_TARGET_DIR := $(ROOT)/target/storyteller
STORYTELLER_CARGO = cd $(ROOT) && $(DEB_ENV_STABLE) $(DEB_CARGO) build --manifest-path $(STORYTELLER_MANIFEST) --lib --target $(SBF_TARGET) --release
# The minimal consumer (examples/consumer: `ask`, and `receive`, the
# callback Curta's `deliver` invokes), built the same way, the command its
# README gives: from the repository (its .cargo/config.toml's linker and
# flags), stable Rust, its own Cargo.lock and release profile.
CONSUMER_MANIFEST := $(ROOT)/examples/consumer/Cargo.toml
CONSUMER_TARGET_DIR := $(ROOT)/target/sbf-consumer
CONSUMER_CARGO = cd $(ROOT) && $(DEB_ENV_STABLE) $(DEB_CARGO) build --manifest-path $(CONSUMER_MANIFEST) --lib --target $(SBF_TARGET) --release
# The test-only callee of replay/tests/delivery.rs
# (replay/programs/callback-probe: succeeds, fails, burns its budget,
# reenters Curta or tries to take lamports), built the same way.
PROBE_CALLEE_MANIFEST := $(ROOT)/replay/programs/callback-probe/Cargo.toml
PROBE_CALLEE_TARGET_DIR := $(ROOT)/target/sbf-callback-probe
PROBE_CALLEE_CARGO = cd $(ROOT) && $(DEB_ENV_STABLE) $(DEB_CARGO) build --manifest-path $(PROBE_CALLEE_MANIFEST) --lib --target $(SBF_TARGET) --release

WASM_TARGET := wasm32-unknown-unknown
WASM_TARGET_DIR := $(ROOT)/target/wasm
WASM_FEATURES := std
# There is no prebuilt std for wasm32 matching rustc 1.96: build it from
# rust-web-src (its dependencies come from crates.io on the first build).
# With the `std` feature curta-core needs std itself, and the target's
# panic=abort needs panic_abort. `-Zbuild-std=core` builds only a no_std
# cdylib with its own #[panic_handler], which curta-core does not have.
WASM_BUILD_STD := std,panic_abort

# Every target: none names a file it makes (`models` is also a folder).
.PHONY: setup setup-sbf setup-host setup-js setup-browser setup-fuzz models \
	build-sbf-v0 test-bitexact-v0 test-costs-v0 \
	build-sbf build-sbf-probe build-wasm demo localnet localnet-scale localnet-15m web web-build bench-1b \
	test lint lint-host check-graphs test-core test-host-units test-program test-localnet test-e2e test-faults test-bitexact test-costs \
	test-wasm test-web idl test-idl test-js-chain test-browser test-reproducible \
	golden bench bench-web fuzz fuzz-seeds

setup-sbf:
	@bash $(ROOT)/scripts/setup-sbf.sh

# clang and libclang-dev, for RocksDB under the local validator.
setup-host:
	@bash $(ROOT)/scripts/setup-host.sh

# The real test models in models/, each checked against a pinned SHA-256:
# linked from a models folder beside the repository, or downloaded.
models:
	@bash $(ROOT)/scripts/fetch-models.sh >/dev/null

# The JavaScript packages' dependencies (npm ci from their lockfiles).
setup-js:
	@bash $(ROOT)/scripts/setup-js.sh

setup: setup-sbf setup-host setup-js models

# Every host binary and test in one build: the harness, the client and the
# local validator share one dependency graph only when built together
# this way; another package selection resolves other features and
# rebuilds hundreds of crates.
#
# Every host cargo command of the harness and the client also lints them:
# clippy-driver wraps rustc for the workspace's own crates only
# (RUSTC_WORKSPACE_WRAPPER, as `cargo clippy` itself sets it), with warnings
# as errors, so dependencies build as ever and clippy costs seconds of the
# build instead of a second, check-mode pass over Agave's graph. All of them
# run with it: a command without it would rebuild the workspace's crates.
HOST_CARGO = RUSTC_WORKSPACE_WRAPPER="$$(rustup which clippy-driver)" CLIPPY_ARGS=-Dwarnings cargo
# Every host cargo command selects these three packages, whichever of
# their targets it builds: the replay (no validator), the harness (the
# validator and the end-to-end tests) and the client. The features then
# resolve the same in every command and no crate is built twice, while a
# command naming only the replay's targets (`--test bitexact`) builds no
# validator crate.
HOST_PACKAGES = -p curta-replay -p curta-harness -p curta-client
HOST_BUILD = $(HOST_CARGO) build $(HOST_PACKAGES) --bins --tests
LOCALNET := $${CARGO_TARGET_DIR:-$(ROOT)/target}/debug/curta-localnet

# SBPF v3 (e_flags 3): what Agave 4.x runs and, with SIMD-0500 active, the
# only version a cluster deploys (docs/sbf.md).
build-sbf: setup-sbf
	$(SBF_CARGO) --target-dir $(SBF_TARGET_DIR)
	@$(call INSTALL_SBF,$(SBF_TARGET_DIR),$(DEPLOY_DIR)/curta_program.so,0x3)
	$(STORYTELLER_CARGO) --target-dir $(STORYTELLER_TARGET_DIR)
	@$(call INSTALL_SBF_PROFILE,$(STORYTELLER_TARGET_DIR),$(DEPLOY_DIR)/curta_storyteller.so,0x3,curta_storyteller,release)
	$(CONSUMER_CARGO) --target-dir $(CONSUMER_TARGET_DIR)
	@$(call INSTALL_SBF_PROFILE,$(CONSUMER_TARGET_DIR),$(DEPLOY_DIR)/curta_consumer.so,0x3,curta_consumer,release)
	$(PROBE_CALLEE_CARGO) --target-dir $(PROBE_CALLEE_TARGET_DIR)
	@$(call INSTALL_SBF_PROFILE,$(PROBE_CALLEE_TARGET_DIR),$(DEPLOY_DIR)/curta_callback_probe.so,0x3,curta_callback_probe,release)

# The measuring build: `turn` writes each chunk's compute units into an
# extra account (program feature cost-probe), for `make test-costs`.
PROBE_TARGET_DIR := $(ROOT)/target/sbf-probe
build-sbf-probe: build-sbf
	$(SBF_CARGO) --features cost-probe --target-dir $(PROBE_TARGET_DIR)
	@$(call INSTALL_SBF,$(PROBE_TARGET_DIR),$(DEPLOY_DIR)/curta_program_probe.so,0x3)

# The fallback for clusters without SBPF v3 (docs/sbf.md, "SBPF versions"): the
# same crate, profile and linker with --arch=v0, into
# target/deploy-v0/curta_program.so (e_flags 0), with its cost-probe build
# beside it. Not in `make test`; test-bitexact-v0 and test-costs-v0 run
# test-bitexact's and test-costs' tests on it.
SBF_V0_TARGET_DIR := $(ROOT)/target/sbf-v0
PROBE_V0_TARGET_DIR := $(ROOT)/target/sbf-probe-v0
DEPLOY_V0_DIR := $(ROOT)/target/deploy-v0
SBF_V0_CONFIG := target.$(SBF_TARGET).rustflags=["-C","link-arg=--arch=v0"]
build-sbf-v0: setup-sbf
	$(SBF_CARGO) --config '$(SBF_V0_CONFIG)' --target-dir $(SBF_V0_TARGET_DIR)
	@$(call INSTALL_SBF,$(SBF_V0_TARGET_DIR),$(DEPLOY_V0_DIR)/curta_program.so,0x0)
	$(SBF_CARGO) --config '$(SBF_V0_CONFIG)' --features cost-probe --target-dir $(PROBE_V0_TARGET_DIR)
	@$(call INSTALL_SBF,$(PROBE_V0_TARGET_DIR),$(DEPLOY_V0_DIR)/curta_program_probe.so,0x0)

build-wasm: setup-sbf
	cd $(ROOT) && $(DEB_ENV) $(DEB_CARGO) rustc -p curta-core --lib --crate-type cdylib --features "$(WASM_FEATURES)" \
		--target $(WASM_TARGET) --release --target-dir $(WASM_TARGET_DIR) \
		-Zbuild-std=$(WASM_BUILD_STD)
	install -D -m 0644 $(WASM_TARGET_DIR)/$(WASM_TARGET)/release/curta_core.wasm \
		$(WASM_TARGET_DIR)/curta_core.wasm
	@ls -l $(WASM_TARGET_DIR)/curta_core.wasm

# Where host cargo builds land: CARGO_TARGET_DIR when set (a shared
# dependency graph), else target/.
HOST_TARGET_DIR = $(or $(CARGO_TARGET_DIR),$(ROOT)/target)

# The JS package's tests (Node's built-in runner): the module against the
# native CLI, which they run for conversions, runs and per-turn states.
test-wasm: setup-js models build-wasm
	cd $(ROOT) && cargo build --release -p curta-core --features std --bin curta-core
	cd $(ROOT) && CURTA_WASM=$(WASM_TARGET_DIR)/curta_core.wasm CURTA_CLI=$(HOST_TARGET_DIR)/release/curta-core \
		CURTA_MODELS=$$(bash $(ROOT)/scripts/fetch-models.sh) node --test sdk/test/*.test.js

# The harness's runs use the program's .so and the module; they read models
# from CURTA_MODELS, set from what scripts/fetch-models.sh found.
HARNESS_ENV = SBF_OUT_DIR=$(DEPLOY_DIR) CURTA_WASM=$(WASM_TARGET_DIR)/curta_core.wasm RUST_LOG=$${RUST_LOG:-error} \
	CURTA_MODELS=$$(bash $(ROOT)/scripts/fetch-models.sh)

# The main job: convert stories260K, start a local validator, and run the
# curta client against it as a user would: deploy the program through the
# upgradeable loader, upload the model, generate "Once upon a time" (the
# text as it arrives, then turns, compute units, fees, slots and time),
# stop the validator.
CURTA_BIN_DIR := $${CARGO_TARGET_DIR:-$(ROOT)/target}/debug
# Only the three programs the demo runs, not the test binaries (each of
# which links Agave's validator): the same feature set as HOST_BUILD, so
# `make test` after it rebuilds none of them.
DEMO_BUILD = $(HOST_CARGO) build $(HOST_PACKAGES) --bin demo --bin curta-localnet --bin curta

demo: setup build-sbf
	@echo "[demo] building the host programs (the demo, the curta client, the local validator): Agave's validator and RocksDB, many minutes the first time on two cores, seconds after"
	cd $(ROOT) && $(DEMO_BUILD)
	cd $(ROOT) && $(HARNESS_ENV) $(CURTA_BIN_DIR)/demo "Once upon a time" 12

# Every test: the core's and the program's unit tests, the program on the
# SBF VM and on the local validator, the client end to end and under load
# and faults (a validator that dies, an RPC that lies), the bit-exactness
# harness with its compute-unit report, the JS package (the module, the
# IDL, the chain client and the page), and two clean builds of the program
# giving the same bytes.
test: setup lint check-graphs test-core test-host-units test-program test-localnet test-e2e test-faults test-bitexact test-costs test-wasm test-web test-reproducible

# The JavaScript side beyond the module: the IDL and its generated client
# against curta_core::protocol, the chain client on curta-localnet, the
# page in headless Chromium.
test-web: test-idl test-js-chain test-browser

# Formatting and clippy, warnings as errors: the interface (with its CPI
# builders; no #![feature] in it, so it builds on stable Rust), the core,
# the program and the fuzz checks (curta-fuzz-checks), and the workspaces
# of their own: the fuzz targets', the storyteller's (with and without its
# `program` feature, as the harness uses it), the minimal consumer's and
# the delivery tests' callback probe, in seconds. The harness and the client are linted
# by every build of theirs (HOST_CARGO); `lint-host` is that build alone.
lint:
	@! grep -rn --include=*.rs '#!\[feature' $(ROOT)/interface/src || \
		{ echo "interface/ builds on stable Rust: no #![feature] in it" >&2; exit 1; }
	cd $(ROOT) && cargo fmt --all -- --check
	cd $(ROOT) && cargo fmt --manifest-path fuzz/Cargo.toml -- --check
	cd $(ROOT) && cargo fmt --manifest-path $(STORYTELLER_MANIFEST) -- --check
	cd $(ROOT) && cargo fmt --manifest-path $(CONSUMER_MANIFEST) -- --check
	cd $(ROOT) && cargo fmt --manifest-path $(PROBE_CALLEE_MANIFEST) -- --check
	cd $(ROOT) && cargo clippy -q -p curta-interface -p curta-core -p curta-program -p curta-fuzz-checks --all-targets --features curta-core/std,curta-interface/pinocchio -- -D warnings
	cd $(ROOT) && cargo clippy -q --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
	cd $(ROOT) && cargo clippy -q --manifest-path $(STORYTELLER_MANIFEST) --target-dir $(STORYTELLER_HOST_TARGET_DIR) --all-targets -- -D warnings
	cd $(ROOT) && cargo clippy -q --manifest-path $(STORYTELLER_MANIFEST) --target-dir $(STORYTELLER_HOST_TARGET_DIR) --all-targets --no-default-features -- -D warnings
	cd $(ROOT) && cargo clippy -q --manifest-path $(CONSUMER_MANIFEST) --target-dir $(ROOT)/target/consumer-host --all-targets -- -D warnings
	cd $(ROOT) && cargo clippy -q --manifest-path $(PROBE_CALLEE_MANIFEST) --target-dir $(ROOT)/target/consumer-host --all-targets -- -D warnings

lint-host:
	cd $(ROOT) && $(HOST_BUILD)

# The workspace's default members' tests: the core's, the program's and the
# fuzz checks' (curta-fuzz-checks), which replay every committed fuzz input
# (fuzz/checks/tests/regressions.rs); then the storyteller's, in its own
# workspace.
test-core: models
	cd $(ROOT) && CURTA_MODELS=$$(bash $(ROOT)/scripts/fetch-models.sh) cargo test
	cd $(ROOT) && cargo test --manifest-path $(STORYTELLER_MANIFEST) --target-dir $(STORYTELLER_HOST_TARGET_DIR)

# The program on the SBF VM: every instruction's checks (program.rs), the
# accounts' lifecycle tried as an attacker would (accounts.rs), and another
# program requesting and reading runs by CPI (storyteller.rs,
# examples/storyteller), and `deliver` with callbacks that succeed, fail,
# burn their budget, reenter Curta or try to take lamports (delivery.rs,
# replay/programs/callback-probe).
test-program: setup build-sbf
	cd $(ROOT) && $(HARNESS_ENV) $(HOST_CARGO) test $(HOST_PACKAGES) --test program --test accounts --test crank_fee --test storyteller --test delivery

# The local validator in the foreground (Ctrl-C stops it and removes its
# ledger): JSON-RPC on http://127.0.0.1:8899, faucet on 9900, a funded
# payer in target/localnet/payer.json. LOCALNET_ARGS passes flags, e.g.
# LOCALNET_ARGS="--legacy-block-limits --rpc-port 0".
localnet: setup-host
	cd $(ROOT) && $(HOST_BUILD)
	cd $(ROOT) && exec $(LOCALNET) $(LOCALNET_ARGS)

# The unit tests of the host crates: the replay's (the module's replay
# against the native one), the harness's (the validator's ports, the
# proxy's faults) and the client's (its words, journal, keys, flags).
test-host-units: setup-host models build-wasm
	cd $(ROOT) && $(HARNESS_ENV) $(HOST_CARGO) test $(HOST_PACKAGES) --lib --bins

# curta-localnet through the harness's localnet module: RPC, faucet, fees,
# transaction history, a preloaded program and the legacy block limits.
test-localnet: setup-host build-sbf
	cd $(ROOT) && $(HOST_CARGO) test $(HOST_PACKAGES) --test localnet

# The curta client on curta-localnet, run as a process: deploy through the
# loader and verify, upload stories260K, the golden reference and T=0.8
# runs (every turn's state against the receipts, transactions and fees
# against the quote), a client killed mid-upload and mid-crank resuming
# with nothing paid twice, the v0 fallback deployed where SIMD-0500 is not
# active and refused before anything is sent where its feature account
# says it is, bad input refused in words; two `curta crank --all` crankers
# with different keys spreading over paid runs, each in profit, every
# transaction they report the chain's (harness/tests/fleet.rs); and `curta
# crank` as a person runs it (harness/tests/cranker.rs): Ctrl-C, plain and
# piped through tee, ending it within a second with totals equal to the
# balance change, an empty wallet refused before sending, the journal kept
# per signer.
test-e2e: setup-host models build-sbf build-sbf-v0
	cd $(ROOT) && $(HOST_BUILD)
	cd $(ROOT) && $(HARNESS_ENV) $(HOST_CARGO) test $(HOST_PACKAGES) --test e2e --test paid_crank --test consumer --test fleet --test cranker

# The curta client under load and faults, each scenario on a curta-localnet
# of its own. harness/tests/faults.rs: eight stories260K runs from four
# openers generated at once (turns per block, compute units per block and
# per run account, turns resent, seconds); the validator SIGKILLed
# mid-upload and mid-crank and restarted on its ledger, the same command
# run again finishing with nothing paid twice; a cranker out of lamports
# stopping with one error that says so, the run finished and closed by its
# opener. harness/tests/rpc_faults.rs, through a fault-injecting RPC proxy
# (harness/src/proxy.rs, loopback, seeded): stories260K uploaded and the
# golden reference run generated, clean and then with requests dropped,
# delayed, answered 429 and 503, cut mid-answer, stale slots and
# blockhashes; a crank's first window swallowed, each turn sent again only
# after its blockhash expired; a rate limit that never lifts, ending in
# words, and the same command resuming. Every run's final state is its
# golden receipt's or the native replay's, the validator's history shows
# every chunk and turn landed once, and every signer's balance change is
# its fees plus royalties. Prints each scenario's figures; about 5 minutes.
test-faults: setup-host models build-sbf
	cd $(ROOT) && $(HOST_BUILD)
	cd $(ROOT) && $(HARNESS_ENV) $(HOST_CARGO) test $(HOST_PACKAGES) --test faults --test rpc_faults -- --nocapture --test-threads 1

# The JavaScript chain client (sdk/src/chain/) on curta-localnet, from
# Node's test runner: upload stories260K, the golden reference and T=0.8
# runs (every turn's state against the receipts), a client killed
# mid-upload and mid-crank resuming with nothing paid twice, bad input
# refused in words, a model whose embedding spans two weight accounts
# (synthesized by the release curta-core) run to the native final state;
# prints the upload's time and transactions and the crank's time. Then crankRun racing the Rust `curta run crank` (HOST_BUILD's
# target/debug/curta, another signer) on three runs (race.test.js): every
# turn landed once, each cranker's summary counting the other's, each
# signer's fees; prints turns attempted per turn landed for each, in about
# 30 s (5 to 15 s of racing); the whole target about 2.5 minutes.
test-js-chain: setup-host models build-sbf build-wasm
	cd $(ROOT) && $(HOST_BUILD)
	cd $(ROOT) && cargo build --release -p curta-core --features std --bin curta-core
	cd $(ROOT) && CURTA_WASM=$(WASM_TARGET_DIR)/curta_core.wasm SBF_OUT_DIR=$(DEPLOY_DIR) CURTA_LOCALNET_BIN=$(LOCALNET) CURTA_BIN=$(CURTA_BIN_DIR)/curta \
		CURTA_CLI=$(HOST_TARGET_DIR)/release/curta-core \
		CURTA_MODELS=$$(bash $(ROOT)/scripts/fetch-models.sh) node --test --test-concurrency=1 sdk/test/chain/

# The scale table: the stories15M, stories42M and stories110M shapes
# (synthetic weights, llama2's tokenizer), each planned with the
# specification's charges and the measured ones, and stories260K's
# reference run, on curta-localnet under today's block limits, and
# stories260K and the stories15M shape under the legacy ones too: upload
# time, the model's rent today and under SIMD-0437, turns per block, turns
# and seconds per generated token beside the floor a run account's
# compute-unit limit sets, fees per token today and under SIMD-0553;
# target/localnet-scale.md. About 30 minutes (the stories110M shape
# uploads in about 112,000 transactions). WINDOW=N sets the turns in
# flight; CURTA_RUNS=name,... picks runs. `localnet-15m` is its old name.
localnet-scale: setup build-sbf
	cd $(ROOT) && $(HOST_BUILD)
	cd $(ROOT) && $(HARNESS_ENV) $(CURTA_BIN_DIR)/localnet-scale $(WINDOW)

localnet-15m: localnet-scale

# The page (web/): Vite bundles it with @curta/sdk and the WebAssembly
# module into target/web/dist, served as static files on 127.0.0.1
# (WEB_PORT, 5173 by default; Ctrl-C stops it), beside `make localnet`.
# `make test-browser` drives it in headless Debian Chromium: the offline
# reference run and bad input, a stories110M-shaped checkpoint converted
# and run offline beside the native CLI (web/test/big.test.js, which needs
# the release curta-core), then the reference run on a curta-localnet
# it starts, through a Wallet Standard test wallet; screenshots and the
# click-to-last-token time in target/web/.
WEB_PORT ?= 5173
web-build: setup-js build-wasm
	cd $(ROOT)/sdk && npm run -s build
	cd $(ROOT)/web && npx vite build --logLevel warn

web: web-build
	cd $(ROOT)/web && exec node scripts/serve.js $(WEB_PORT)

setup-browser:
	@bash $(ROOT)/scripts/setup-browser.sh

test-browser: setup-host setup-browser models build-sbf web-build
	cd $(ROOT) && $(HOST_BUILD)
	cd $(ROOT) && cargo build --release -p curta-core --features std --bin curta-core
	cd $(ROOT) && CURTA_CLI=$(HOST_TARGET_DIR)/release/curta-core CURTA_LOCALNET_BIN=$(LOCALNET) SBF_OUT_DIR=$(DEPLOY_DIR) \
		CURTA_MODELS=$$(bash $(ROOT)/scripts/fetch-models.sh) node --test --test-concurrency=1 web/test/*.test.js

# The IDL (idl/curta.json) is written from curta_core::protocol's tables
# (`curta-core idl`), and the JavaScript client in sdk/src/generated-js/
# from the IDL, and sdk/src/layout.js (the header lengths and offsets the
# IDL has no node for) from the same constants (`curta-core layout`):
# `make idl` writes them. test-idl checks the committed IDL and layout are
# the generators', and (sdk/test/idl/) that the generated client builds
# and decodes what curta-client's example protocol_vectors prints (every
# instruction, account kind, the turn receipt and the errors, as protocol
# and the Rust client's builders make them) and is what `npm run generate`
# writes today. No validator, none built: the example's graph is the
# client's (built with the harness selected too, so that its crates get
# the features HOST_BUILD gives them and are not built twice).
VECTORS_BUILD = $(HOST_CARGO) build $(HOST_PACKAGES) --example protocol_vectors
CORE_IDL = cargo run -q -p curta-core --features std --bin curta-core -- idl
CORE_LAYOUT = cargo run -q -p curta-core --features std --bin curta-core -- layout
idl: setup-js
	cd $(ROOT) && $(CORE_IDL) > idl/curta.json
	cd $(ROOT) && $(CORE_LAYOUT) > sdk/src/layout.js
	cd $(ROOT)/sdk && npm run generate

test-idl: setup-js setup-host
	cd $(ROOT) && $(CORE_IDL) | cmp - idl/curta.json || \
		{ echo "idl/curta.json is not what curta-core idl writes: run make idl"; exit 1; }
	cd $(ROOT) && $(CORE_LAYOUT) | cmp - sdk/src/layout.js || \
		{ echo "sdk/src/layout.js is not what curta-core layout writes: run make idl"; exit 1; }
	cd $(ROOT) && $(VECTORS_BUILD)
	cd $(ROOT) && CURTA_VECTORS_BIN=$(HOST_TARGET_DIR)/debug/examples/protocol_vectors node --test sdk/test/idl/

# The replay (make test-bitexact, test-program, test-costs) and the client
# (make test-idl) must not depend on Agave's validator: its crates and
# RocksDB's C++ are most of a cold build.
VALIDATOR_CRATES = solana-test-validator|solana-core|solana-ledger|solana-gossip|solana-turbine|solana-rpc|librocksdb-sys
check-graphs:
	@cd $(ROOT) && for p in curta-replay curta-client; do \
		found=$$(cargo tree -p $$p -e normal,build,dev --prefix none | awk '{print $$1}' | sort -u | grep -xE '$(VALIDATOR_CRATES)' | tr '\n' ' '); \
		if [ -n "$$found" ]; then echo "$$p depends on Agave's validator: $$found" >&2; exit 1; fi; \
		echo "$$p: no validator crate"; done

# A clean build of the (v3) program, in a fresh target folder, must give
# the same bytes as `make build-sbf`'s, so that `curta program verify` can
# tell a cluster's program is this source.
REPRO_DIR := $(ROOT)/target/sbf-repro
test-reproducible: build-sbf
	rm -rf $(REPRO_DIR)
	$(SBF_CARGO) -q --target-dir $(REPRO_DIR)
	@$(call INSTALL_SBF,$(REPRO_DIR),$(REPRO_DIR)/curta_program.so,0x3)
	cmp $(REPRO_DIR)/curta_program.so $(DEPLOY_DIR)/curta_program.so
	sha256sum $(REPRO_DIR)/curta_program.so $(DEPLOY_DIR)/curta_program.so

# Every golden run, turn by turn, on the SBF VM, natively and through the
# WebAssembly module, against golden/; writes target/cu-report.md.
test-bitexact: setup build-sbf build-wasm
	cd $(ROOT) && $(HARNESS_ENV) $(HOST_CARGO) test $(HOST_PACKAGES) --test bitexact -- --nocapture

# Every chunk of every golden run on the measuring build, beside its
# charge; writes target/cost-report.md, fails on a chunk over its charge.
test-costs: setup build-sbf-probe
	cd $(ROOT) && $(HARNESS_ENV) $(HOST_CARGO) test $(HOST_PACKAGES) --test costs -- --nocapture

# test-bitexact and test-costs on the SBPF v0 fallback (build-sbf-v0):
# every turn's state equal to the golden receipts', every total within 1%
# of theirs (v3's compute units, which the v0 build spends exactly: the
# same code, docs/sbf.md), no turn over its plan or 1,400,000, every chunk
# within its charge. Reports in target/cu-report-v0.md and target/cost-report-v0.md
# (target/cu-report.md and cost-report.md are written first, then moved).
V0_HARNESS_ENV = $(subst SBF_OUT_DIR=$(DEPLOY_DIR),SBF_OUT_DIR=$(DEPLOY_V0_DIR),$(HARNESS_ENV))
test-bitexact-v0: setup build-sbf-v0 build-wasm
	cd $(ROOT) && $(V0_HARNESS_ENV) $(HOST_CARGO) test $(HOST_PACKAGES) --test bitexact -- --nocapture
	mv $(ROOT)/target/cu-report.md $(ROOT)/target/cu-report-v0.md

test-costs-v0: setup build-sbf-v0
	cd $(ROOT) && $(V0_HARNESS_ENV) $(HOST_CARGO) test $(HOST_PACKAGES) --test costs -- --nocapture
	mv $(ROOT)/target/cost-report.md $(ROOT)/target/cost-report-v0.md

# Writes golden/receipts/ and golden/slopes.txt, only when the three targets
# agree on every turn. Commit the result with a message that says why.
golden: setup build-sbf build-wasm
	cd $(ROOT) && $(HARNESS_ENV) $(HOST_CARGO) run -q $(HOST_PACKAGES) --bin golden

# Native tokens and multiply-accumulates per second.
bench: models
	cd $(ROOT) && CURTA_MODELS=$$(bash $(ROOT)/scripts/fetch-models.sh) \
		cargo run -q --release -p curta-core --features std --example bench

# One generated token of the TinyLlama-1.1B shape (synthetic weights, 169
# sections, 1.1 GB) on the SBF VM, natively and through the WebAssembly
# module, every turn's state compared: turns, compute units, times and the
# floor on a cluster; target/bench-1b.md. About 12 GB of memory; not in CI.
bench-1b: setup build-sbf build-wasm
	cd $(ROOT) && $(HOST_BUILD)
	cd $(ROOT) && $(HARNESS_ENV) $(CURTA_BIN_DIR)/bench-1b $(TABLE)

# The offline run's tokens per second in the page (headless Chromium, the
# run in its worker) beside the module's in Node, on the same run:
# stories260K, "Once upon a time", 200 tokens, T = 0, in turns
# (web/scripts/bench-offline.js; TOKENS=N, ROUNDS=N). Prints, asserts nothing.
bench-web: setup-browser models web-build
	cd $(ROOT)/web && CURTA_MODELS=$$(bash $(ROOT)/scripts/fetch-models.sh) node scripts/bench-offline.js

# Fuzzing (fuzz/: cargo-fuzz and libFuzzer on rustup's nightly, its own
# workspace). `make fuzz FUZZ_SECONDS=N` runs every target N seconds (60
# by default; FUZZ_TARGETS="state program" picks some) from the committed
# corpus and reproducers, prints each one's executions and coverage, and
# fails when any finds a crash (the input in target/fuzz/artifacts/). The
# stable `cargo test` (`make test-core`) replays fuzz/corpus/ and
# fuzz/regressions/ through the same checks, the crate curta-fuzz-checks
# (fuzz/checks/tests/regressions.rs).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=

setup-fuzz:
	@bash $(ROOT)/scripts/setup-fuzz.sh

fuzz: setup-fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash $(ROOT)/scripts/fuzz.sh $(FUZZ_TARGETS)

# Rewrites the seeds built from the golden runs and the models
# (fuzz/corpus/<target>/seed-*).
fuzz-seeds: models
	cd $(ROOT) && cargo test -q -p curta-fuzz-checks --test regressions -- --ignored write_seeds
