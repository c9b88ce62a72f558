# Two commands for a fresh machine: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLES_OUT ?= demo-output

.PHONY: demo test lint bench verify-blender clean chromium

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "retarget needs Python >= 3.11 (PYTHON=$(PYTHON))"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# three.js for the HTML viewer: a pinned npm release bundled by esbuild (viz/js/package-lock.json)
VIEWER_JS := src/retarget/viz/js
THREE := src/retarget/viz/_three/three.min.js
$(THREE): $(VIEWER_JS)/package.json $(VIEWER_JS)/package-lock.json $(VIEWER_JS)/entry.js
	@command -v npm >/dev/null || { echo "the viewer's three.js bundle needs npm (Node.js)"; exit 2; }
	npm ci --prefix $(VIEWER_JS) --no-audit --no-fund --loglevel=error
	npm run --prefix $(VIEWER_JS) --silent build

# Blender's bpy (its BVH, glTF and FBX importers as references; FBX read and written
# through it): its own venv, since bpy needs numpy<2.
BLENDER_VENV := .venv-blender

$(VENV)/.installed: pyproject.toml $(THREE) | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml $(THREE) | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/retarget demo --out $(SAMPLES_OUT)

# Chromium for the viewer's browser tests: Debian's package, installed when it is missing
# and this machine can (root, or sudo without a password); otherwise one line saying what
# to install. `.ci/run` installs nothing itself: `make test` is the whole set-up.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium (the viewer's tests drive it)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null; \
	  elif command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	    echo "installing Debian's chromium (the viewer's tests drive it)"; \
	    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null; \
	  else \
	    echo "the viewer's tests drive Chromium: install it (Debian: apt-get install chromium) and run make test again"; \
	    exit 2; \
	  fi; }

test: $(VENV)/.installed-test $(BLENDER_VENV)/.installed chromium
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/mypy src/retarget
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -n 2 -q

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/mypy src/retarget

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[bench]'
	@touch $@

bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/io_kinematics.py
	$(BIN)/python benchmarks/hierarchical.py
	$(BIN)/python benchmarks/omr.py
	$(BIN)/python benchmarks/puppetry.py
	$(BIN)/python benchmarks/batch.py
	$(BIN)/python benchmarks/real_files.py
	$(BIN)/python benchmarks/physics.py
	$(BIN)/python benchmarks/verbs.py
	$(BIN)/python benchmarks/startup.py

$(BLENDER_VENV)/.installed:
	$(PYTHON) -m venv $(BLENDER_VENV)
	$(BLENDER_VENV)/bin/python -m pip install -q --upgrade pip
	$(BLENDER_VENV)/bin/python -m pip install -q 'bpy==5.0.1' 'numpy<2'
	@touch $@

verify-blender: $(VENV)/.installed $(BLENDER_VENV)/.installed
	$(BIN)/python tools/verify_blender.py --blender-python $(BLENDER_VENV)/bin/python

clean:
	rm -rf $(VENV) $(BLENDER_VENV) $(SAMPLES_OUT) .pytest_cache $(VIEWER_JS)/node_modules src/retarget/viz/_three
