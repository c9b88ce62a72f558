# Two commands for a fresh machine: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLES_OUT ?= demo-output

.PHONY: demo test lint bench verify-blender clean

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

test: $(VENV)/.installed-test $(BLENDER_VENV)/.installed
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
