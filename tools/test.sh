#!/usr/bin/env bash
# The lab's tests on any machine, GPU or not: installs the project-local CUDA tools (NVRTC and
# headers, for the compile checks) and Chromium with Playwright, then runs the workspace tests
# (unit tests, the NVRTC compile-everything test, the simulator matrix, the CLI end to end with
# `harness check` of every kernel on the CPU, the run pages in Chromium) and the GPU machine's
# one-command check in its smoke mode (on a machine without a GPU it runs the CPU steps and
# skips the others), with the harness binary the tests built.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install-cuda-tools.sh
# Chromium and Playwright for the browser test of the run pages (harness/tests/html_report.rs).
bash tools/install-browser.sh
cargo test --workspace
# The binary the tests ran (the test profile: the ports optimized), built again only if missing;
# a `cargo run` here would build the whole workspace once more, unoptimized.
cargo build --quiet --profile test -p harness
# The smoke run's lab folder stays under target/ so that the log its summary names exists.
rm -rf target/lab-smoke
HARNESS=target/debug/harness bash tools/gpu-check.sh --smoke --out target/lab-smoke
