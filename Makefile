# The two commands a newcomer runs: `make demo` and `make test`.
# Each creates .venv when missing and installs what it needs: the demo only the core package, the tests
# also the optional extras, so that every code path is tested, and (on Debian as root) Chromium, in which
# a test opens every study's report (repscope report check).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CORE_STAMP := $(VENV)/.repscope-core-installed
STAMP := $(VENV)/.repscope-installed
FASHION_DIR := /usr/share/datasets/fashion-mnist
PYTEST_ARGS ?=

.PHONY: demo test test-all lint install install-core bench clean

install: $(STAMP)
install-core: $(CORE_STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch first, pinned: this version is a CPU build on local disk here; an unpinned
# requirement would pull a multi-GB CUDA build. The demo needs nothing more than the core package.
$(CORE_STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e .
	touch $(CORE_STAMP)

# The tests also need the dev tools and the extras: ray (sweeps on Ray Tune), candle (Blender's bpy,
# ~1 GB; it holds numpy below 2), attacks (the adversarial-robustness-toolbox) and onnx (onnxruntime); none depends on
# torch, so the pinned build stays. On Debian as root, Fashion-MNIST and Chromium from their packages.
$(STAMP): $(CORE_STAMP)
	$(PY) -m pip install --quiet -e '.[dev,ray,candle,attacks,onnx]'
	@if [ ! -d $(FASHION_DIR) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1 || \
		(apt-get update -q >/dev/null 2>&1 && apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1) || \
		echo "note: could not install dataset-fashion-mnist; its tests will be skipped"; \
	fi
	@if ! command -v chromium >/dev/null && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get install -y -q chromium >/dev/null 2>&1 || \
		(apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1) || \
		echo "note: could not install chromium; the browser checks of reports will be skipped"; \
	fi
	touch $(STAMP)

demo: $(CORE_STAMP)
	$(VENV)/bin/repscope demo

# the fast set (under 6 minutes of tests on 2 cores); `make test-all` adds the tests marked slow.
# --dist loadscope: the tests of one module run on one worker, so a module-scoped fixture (a trained model,
# a study run) is built once, not once per worker
test: $(STAMP) lint
	$(PY) -m pytest -n 2 --dist loadscope -q $(PYTEST_ARGS)

test-all: $(STAMP) lint
	$(PY) -m pytest -n 2 --dist loadscope -q -m "" $(PYTEST_ARGS)

# the style every file keeps (pyproject.toml [tool.ruff]): lint, then formatting
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks tools
	$(VENV)/bin/ruff format --check src tests benchmarks tools

bench: $(STAMP)
	$(PY) benchmarks/morpho_throughput.py
	$(PY) benchmarks/train_throughput.py
	$(PY) benchmarks/sprites_throughput.py
	$(PY) benchmarks/mmvae_throughput.py
	$(PY) benchmarks/disentanglement_metrics.py --sizes 10000 --dci-max 0

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
