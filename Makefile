# The front door. `make run` and `make test` work on a fresh machine: they create the virtual environments they
# need from the pinned, hashed lock files in requirements/ (stamp files keep later runs fast), each with the pinned
# installer of requirements/installer.txt put in first (requirements/install.sh), whatever pip the machine has.
#   .venv      build + tests + both adapters (torch==2.13.0 CPU): test, lint, model, train, eval, bench
#   .venv-run  runtime + Google Cloud adapter only (no torch): run
#   .venv-lock pip-tools only: lock
# Outside machines that carry the torch CPU wheel on disk, add the PyTorch CPU index for .venv:
#   make test PIP_INSTALL_ARGS="--extra-index-url https://download.pytorch.org/whl/cpu"

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
PIP_INSTALL_ARGS ?=
HOST ?= 127.0.0.1
PORT ?= 8080
MODEL ?=
NAME ?= $(notdir $(patsubst %/,%,$(MODEL)))
VERIFY_ARGS ?=
# images: BUNDLE (a finished bundle, model_artifacts/<name>) or MODEL (exported inside the image build); CONTAINER
# (docker, podman or buildah; default: detected), BASE_IMAGE (default python:3.11-slim). infra/container/image.sh.
BUNDLE ?=
CONTAINER ?=
BASE_IMAGE ?=
IMAGE ?= zh-en-translate
IMAGE_CHECK_ARGS ?=
CONTAINER_PACKAGES ?= buildah podman debootstrap
PYTEST_ARGS ?=
TRAIN_ARGS ?=
EVAL_ARGS ?=
CALIBRATE_ARGS ?=
CALIBRATE_PAIRS ?= 500
BENCH_ARGS ?=
LOADTEST_ARGS ?=
SERVING_ARGS ?=
BROWSER_PACKAGES ?= chromium
REDIS_PACKAGES ?= redis-server
JEMALLOC ?= /usr/lib/x86_64-linux-gnu/libjemalloc.so.2

VENV := .venv
RUN_VENV := .venv-run
LOCK_VENV := .venv-lock
DEV_STAMP := $(VENV)/.installed-dev
RUN_STAMP := $(RUN_VENV)/.installed-run
LOCK_STAMP := $(LOCK_VENV)/.installed-lock
CSANMT_RUN_STAMP := $(RUN_VENV)/.installed-csanmt
# exits 0 when the bundle make run serves ($TRANSLATE_BUNDLE_DIR, default model_artifacts/default) is a CSANMT one
export BUNDLE_IS_CSANMT := import json, os, sys; folder = os.environ.get("TRANSLATE_BUNDLE_DIR") or "model_artifacts/default"; \
	path = os.path.join(folder, "manifest.json"); \
	sys.exit(0 if os.path.isfile(path) and json.load(open(path)).get("family") == "csanmt" else 1)
PIP_COMPILE := $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	--no-emit-index-url --no-emit-find-links

.PHONY: mutation schemathesis
.PHONY: help run test lint model train eval fidelity bench image image-gcp image-check deploy-aws deploy-gcp \
	deploy-cloudrun lock clean distclean browser redis container-engine dev-env run-env model-argument audit loadtest \
	serving

help:
	@echo "make run                    serve the function on http://$(HOST):$(PORT)/ (PORT=... to change)"
	@echo "make test                   the whole test suite (what .ci/run runs, with make lint)"
	@echo "make lint                   ruff on the repository, mypy --strict on handler/, pip-audit of the runtime lock files"
	@echo "make audit                  pip-audit of the runtime lock files alone (part of make lint)"
	@echo "make model MODEL=<folder or hub id> [NAME=...] [LABEL=...] [FAMILY=csanmt] [FORCE=1] [VERIFY_ARGS=...]"
	@echo "                            export + quantize + verify a bundle into model_artifacts/NAME, then calibrate its"
	@echo "                            confidence on CALIBRATE_PAIRS (500; 0 skips) dev sentences (build.calibrate)"
	@echo "make train [TRAIN_ARGS=--finalize]   train the default model (resumes; finalize writes the checkpoint)"
	@echo "make eval                   BLEU/chrF++ of the bundles on the dev set (data/corpus, or TRANSLATE_CORPUS_DIR),"
	@echo "                            then how well the confidence separates bad from good translations (held out)"
	@echo "make fidelity [FIDELITY_ARGS=--dev --guards --tiny]   spans, amounts, glossary, markup kept, per class"
	@echo "make bench [BENCH_ARGS=--quick]   this runtime beside CTranslate2 and transformers; writes docs/benchmarks.md"
	@echo "make mutation [MODULE=handler/config.py] [SAMPLE=N]   mutmut on one module (or all: hours; docs/mutation.md)"
	@echo "make schemathesis [SEED=n]  schemathesis, every phase, on make run's server with a fresh (or the given) seed"
	@echo "make loadtest [LOADTEST_ARGS=--quick]   load + soak of make run's server with locust (long; see docs/loadtest.md)"
	@echo "make serving [SERVING_ARGS=--quick]     make run's server beside the per-request decoding of 7295841 and a"
	@echo "                            CTranslate2 server, 1-64 closed-loop clients (docs/loadtest.md)"
	@echo "make image / image-gcp [BUNDLE=model_artifacts/<name>] [CONTAINER=docker|podman|buildah] [BASE_IMAGE=...]"
	@echo "                            container images for AWS Lambda / Cloud Run (MODEL=<checkpoint> exports inside)"
	@echo "make image-check            build, run and call every image of a tiny Marian, a tiny CSANMT and the default"
	@echo "make deploy-aws / deploy-gcp / deploy-cloudrun [BUNDLE=...]   print the deployment commands; DEPLOY=1 runs them"
	@echo "make lock                   regenerate requirements/*.txt from requirements/*.in"
	@echo "make clean                  remove caches and the run/lock environments (distclean: .venv too)"

# ---- environments -------------------------------------------------------------------------------------------
$(DEV_STAMP): requirements/dev.txt requirements/tools.txt requirements/installer.txt requirements/install.sh
	@echo "installing requirements/dev.txt and tools.txt into $(VENV) (a few minutes the first time)"
	PYTHON=$(PYTHON) bash requirements/install.sh $(VENV) $(PIP_INSTALL_ARGS) --require-hashes \
		-r requirements/dev.txt -r requirements/tools.txt
	@touch $@

$(RUN_STAMP): requirements/runtime-gcp.txt requirements/installer.txt requirements/install.sh
	@echo "installing requirements/runtime-gcp.txt into $(RUN_VENV) (a minute or two the first time)"
	PYTHON=$(PYTHON) bash requirements/install.sh $(RUN_VENV) --require-hashes -r requirements/runtime-gcp.txt
	@touch $@

$(LOCK_STAMP): requirements/lock.in requirements/installer.txt requirements/install.sh
	PYTHON=$(PYTHON) bash requirements/install.sh $(LOCK_VENV) -r requirements/lock.in
	@touch $@

dev-env: $(DEV_STAMP)
run-env: $(RUN_STAMP)

# ---- the two quick-start commands ---------------------------------------------------------------------------
# A CSANMT bundle (its manifest says family csanmt) also needs its tokenizer (jieba, subword-nmt, sacremoses).
run: $(RUN_STAMP)
	@if $(RUN_VENV)/bin/python -c "$$BUNDLE_IS_CSANMT"; then $(MAKE) --no-print-directory $(CSANMT_RUN_STAMP); fi
	@HOST=$(HOST) PORT=$(PORT) bash infra/local/run.sh $(RUN_VENV)

$(CSANMT_RUN_STAMP): requirements/csanmt.txt $(RUN_STAMP)
	@echo "the bundle is a CSANMT model: installing requirements/csanmt.txt (its tokenizer) into $(RUN_VENV)"
	PYTHON=$(PYTHON) bash requirements/install.sh $(RUN_VENV) --require-hashes -r requirements/csanmt.txt
	@touch $@

test: $(DEV_STAMP) browser redis
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

# The browser tests drive Debian's Chromium (headless); install it when missing and we may.
browser:
	@if command -v chromium >/dev/null 2>&1; then \
		true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's $(BROWSER_PACKAGES) for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$(BROWSER_PACKAGES) >/dev/null; \
	else \
		echo "make test: the browser tests need Debian's chromium; install it: sudo apt-get install $(BROWSER_PACKAGES)"; \
	fi

# The key quotas' tests count in Debian's real redis-server (tests/adapters/test_key_quotas_shared.py fails without it,
# never skips); install it when missing and we may.
redis:
	@if command -v redis-server >/dev/null 2>&1; then \
		true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's $(REDIS_PACKAGES) for the key quotas' tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			$(REDIS_PACKAGES) >/dev/null; \
	else \
		echo "make test: the key quotas' tests need Debian's redis-server; install it: sudo apt-get install $(REDIS_PACKAGES)"; \
	fi

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	@$(MAKE) --no-print-directory audit

# pip-audit of the runtime lock files (fully pinned and hashed: no resolution, no pip): a known vulnerability fails
# lint. Ignoring one takes its id in AUDIT_IGNORE with the reason on the line above it; none is ignored today.
# pip-audit reads PyPI's per-version JSON; where the index mirror answers 404 for it (the development machines),
# build/audit_report.py checks a pin that is the latest release against the project JSON's vulnerabilities and
# lists every other as NOT AUDITED with the counts (never "no known vulnerabilities" for what it did not check);
# those fail only with AUDIT_STRICT=1. pip-audit's own summary line is dropped: it counts skipped packages as clean.
AUDIT_LOCKS := requirements/runtime-aws.txt requirements/runtime-gcp.txt requirements/csanmt.txt
AUDIT_IGNORE :=
AUDIT_STRICT ?= 0

audit: $(DEV_STAMP)
	@set -o pipefail; $(VENV)/bin/pip-audit --disable-pip --require-hashes --progress-spinner off --format json \
		$(foreach lock,$(AUDIT_LOCKS),-r $(lock)) $(foreach id,$(AUDIT_IGNORE),--ignore-vuln $(id)) \
		2> >(grep -v "^No known vulnerabilities found" >&2) \
		| AUDIT_STRICT=$(AUDIT_STRICT) $(VENV)/bin/python -m build.audit_report $(AUDIT_LOCKS)

# ---- models -------------------------------------------------------------------------------------------------
model: model-argument $(DEV_STAMP)
	$(VENV)/bin/python -m build.export --model "$(MODEL)" --out "model_artifacts/$(NAME)" \
		$(if $(LABEL),--name "$(LABEL)") $(if $(FORCE),--force) $(if $(FAMILY),--family "$(FAMILY)") $(VERIFY_ARGS)
	@if [ "$(CALIBRATE_PAIRS)" != 0 ]; then \
		echo "$(VENV)/bin/python -m build.calibrate --bundle model_artifacts/$(NAME) --pairs $(CALIBRATE_PAIRS) --write"; \
		$(VENV)/bin/python -m build.calibrate --bundle "model_artifacts/$(NAME)" --pairs $(CALIBRATE_PAIRS) --write; \
	fi

# Before the build environment (3.8 GB) is installed: a hub id must be downloadable here (build/hub_check.py, standard
# library only), else it says how to download the checkpoint elsewhere and pass MODEL=<folder>.
model-argument:
	@test -n "$(MODEL)" || { echo "usage: make model MODEL=<checkpoint folder or hub id> [NAME=<bundle folder>] [LABEL=<name in the manifest>] [FAMILY=marian|csanmt] [FORCE=1] [VERIFY_ARGS=\"--min-int8-top1-agreement 0.9 ...\"]"; exit 2; }
	@$(PYTHON) -m build.hub_check "$(MODEL)" $(if $(FAMILY),--family "$(FAMILY)")

# jemalloc made training 2.2x faster here (glibc malloc fragments under torch's many small allocations).
train: $(DEV_STAMP)
	@if [ ! -e "$(JEMALLOC)" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get install -y -qq libjemalloc2 >/dev/null 2>&1 || echo "could not install libjemalloc2; training without it"; \
	fi
	@if [ -e "$(JEMALLOC)" ]; then \
		echo "LD_PRELOAD=$(JEMALLOC) $(VENV)/bin/python -m build.training.train $(TRAIN_ARGS)"; \
		LD_PRELOAD="$(JEMALLOC)" $(VENV)/bin/python -m build.training.train $(TRAIN_ARGS); \
	else \
		echo "no $(JEMALLOC): 'apt-get install libjemalloc2' makes training about 2x faster"; \
		$(VENV)/bin/python -m build.training.train $(TRAIN_ARGS); \
	fi

eval: $(DEV_STAMP)
	$(VENV)/bin/python -m build.evaluate $(EVAL_ARGS)
	$(VENV)/bin/python -m build.calibrate $(CALIBRATE_ARGS)

fidelity: $(DEV_STAMP)
	$(VENV)/bin/python -m bench.quality.fidelity $(FIDELITY_ARGS)

bench: $(DEV_STAMP)
	$(VENV)/bin/python -m bench.pipeline.runtime_bench $(BENCH_ARGS)

# make run's server (infra/local/run.sh from .venv-run) driven by locust from .venv: 2,000 requests then a
# 20,000-request soak, for the default bundle and a random opus-mt-zh-en-sized one; exits 1 on any error or on
# RSS growth >= 30 MB. LOADTEST_ARGS="--quick" takes under a minute; --requests/--soak-requests/--bundle choose.
loadtest: $(DEV_STAMP) $(RUN_STAMP)
	$(VENV)/bin/python -m bench.load.loadtest --server-venv $(RUN_VENV) $(LOADTEST_ARGS)

# The serving sweep (bench/load/serving.py): make run's server, the same server at the commit before the shared
# decoder (--baseline-commit, default 7295841: a git worktree under .bench/serving) and a CTranslate2 server
# (bench/load/ctranslate2_server.py, from .venv) behind the same gunicorn, at 1, 4, 8, 16 and 64 closed-loop clients,
# one-sentence requests and the load mix, with issue 44's goals beside the figures. SERVING_ARGS="--quick": a minute.
serving: $(DEV_STAMP) $(RUN_STAMP)
	$(VENV)/bin/python -m bench.load.serving --server-venv $(RUN_VENV) $(SERVING_ARGS)

# schemathesis against make run's server on the shipped model, every phase (tests/adapters/test_schemathesis.py), with
# a fresh seed, printed so a failure can be replayed: SEED=<n> make schemathesis. make test runs it with seed 1.
schemathesis: $(DEV_STAMP)
	@seed="$${SEED:-$$($(PYTHON) -c 'import secrets; print(secrets.randbelow(2**31))')}"; \
	echo "schemathesis seed $$seed (SEED=$$seed make schemathesis replays it)"; \
	SCHEMATHESIS_SEED="$$seed" $(VENV)/bin/python -m pytest -p no:randomly -s tests/adapters/test_schemathesis.py

# mutmut over handler/ (configured in pyproject.toml [tool.mutmut]; its copy of the project is mutants/). Not part
# of make test. MODULE=handler/config.py mutates one module and runs only the tests that reach it (tests/
# mutation_run.py, TESTS_BY_MODULE); SAMPLE=N checks a seeded random N of its mutants. Without MODULE: every module
# with the selection of pyproject.toml (hours on 2 cores). Scores per module: docs/mutation.md.
MODULE ?=
SAMPLE ?=
MUTATION_CHILDREN ?= 2
mutation: $(DEV_STAMP)
ifneq ($(MODULE),)
	$(VENV)/bin/python -m tests.mutation_run $(MODULE) "$(SAMPLE)" $(MUTATION_CHILDREN)
	$(VENV)/bin/python -m tests.mutation_scores $(MODULE)
else
	$(VENV)/bin/mutmut run --max-children $(MUTATION_CHILDREN)
	$(VENV)/bin/python -m tests.mutation_scores
endif

# ---- images and deployment ----------------------------------------------------------------------------------
IMAGE_ENV = CONTAINER="$(CONTAINER)" BUNDLE="$(BUNDLE)" MODEL="$(MODEL)" BASE_IMAGE="$(BASE_IMAGE)" IMAGE="$(IMAGE)"

image:
	@$(IMAGE_ENV) bash infra/container/image.sh build lambda

image-gcp:
	@$(IMAGE_ENV) bash infra/container/image.sh build cloudrun

# The whole journey on this machine (tests/journey/image_check.py): tiny Marian and CSANMT checkpoints through
# make model, every bundle baked into both images with BUNDLE=, each image run and called, the deploy targets'
# printed commands, the staged Cloud Functions source in a clean venv, a large upload through the Cloud Run
# recipe's services on the Cloud Storage emulator. Needs buildah (installed here from Debian's packages when
# missing and we may) and, without BASE_IMAGE, debootstrap + podman to make a stand-in base image.
image-check: $(DEV_STAMP) container-engine
	$(VENV)/bin/python -m tests.journey.image_check $(if $(BASE_IMAGE),--base-image "$(BASE_IMAGE)") $(IMAGE_CHECK_ARGS)

container-engine:
	@if command -v buildah >/dev/null 2>&1 && command -v podman >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1; then \
		true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's $(CONTAINER_PACKAGES) for make image-check"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(CONTAINER_PACKAGES) >/dev/null; \
	else \
		echo "make image-check needs $(CONTAINER_PACKAGES): sudo apt-get install $(CONTAINER_PACKAGES)"; exit 2; \
	fi

# Each deploy target prints its commands; DEPLOY=1 runs exactly those (one list: infra/commands.sh). Values given
# on the command line (GCP_PROJECT=, INPUT_BUCKET=, OUTPUT_BUCKET=, STAGE_DIR=, ...) are filled into the printout;
# BUNDLE=model_artifacts/<name> ships that bundle.
DEPLOY_MODE = $(if $(filter 1,$(DEPLOY)),deploy,print)

deploy-aws:
	@BUNDLE="$(BUNDLE)" bash infra/aws/deploy.sh $(DEPLOY_MODE)

deploy-gcp:
	@BUNDLE="$(BUNDLE)" bash infra/gcp/deploy.sh $(DEPLOY_MODE)

deploy-cloudrun:
	@BUNDLE="$(BUNDLE)" PLATFORM=run bash infra/gcp/deploy.sh $(DEPLOY_MODE)

# ---- maintenance --------------------------------------------------------------------------------------------
# The runtime images install runtime-aws.txt / runtime-gcp.txt; .venv installs dev.txt; the Dockerfile's export
# stage installs build.txt. Regenerate after editing any requirements/*.in (pins already in a .txt are kept).
# Slow (tens of minutes): pip-tools reads PyPI's release metadata of every package to collect all hashes.
lock: $(LOCK_STAMP)
	$(PIP_COMPILE) --output-file requirements/installer.txt requirements/installer.in
	$(PIP_COMPILE) --output-file requirements/runtime-aws.txt requirements/aws.in
	$(PIP_COMPILE) --output-file requirements/runtime-gcp.txt requirements/gcp.in
	$(PIP_COMPILE) --output-file requirements/build.txt requirements/build.in
	$(PIP_COMPILE) --output-file requirements/dev.txt requirements/build.in requirements/dev.in \
		requirements/aws.in requirements/gcp.in
	$(PIP_COMPILE) --output-file requirements/tools.txt --constraint requirements/dev.txt requirements/tools.in

clean:
	rm -rf $(RUN_VENV) $(LOCK_VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .bench .aws-sam
	find . -path ./.venv -prune -o -path ./.train -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
