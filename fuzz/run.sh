#!/usr/bin/env bash
# Runs every duetime fuzz target for a bounded time: fuzz/run.sh [SECONDS_PER_TARGET]
#
#   fuzz/run.sh            one hour per target (scripts/fuzz-long runs this, then minimizes)
#   fuzz/run.sh 22         what CI does (.ci/run passes FUZZ_SECONDS, default 22)
#
# Targets are whatever `cargo fuzz list` names (cron_text, schedule_next, step_sequence,
# state_bytes, wire_request, jobs_file, stored_rows, http_query, human_input); a new [[bin]]
# in Cargo.toml is picked up with its corpus/, regressions/ and dictionary (dict_for below).
#
# Needs nightly and cargo-fuzz (`cargo install cargo-fuzz --locked`). Targets run side by
# side, FUZZ_JOBS at a time (default: the number of cores). Each reads its committed seeds
# (fuzz/corpus/<target>/) and kept crashes (fuzz/regressions/<target>/), replaying every one of
# them first, and writes what it discovers to fuzz/work/<target>/ (git-ignored, reused by the
# next run). A crash leaves its input in fuzz/artifacts/<target>/ and makes this script exit
# non-zero; replay it with `cargo run --example replay -- <target> FILE` from fuzz/ (prints
# the decoded input) and keep it under fuzz/regressions/<target>/.
#
# Knobs: FUZZ_ONLY (space-separated targets to run instead of all), FUZZ_SANITIZER (default none: the code under test is safe Rust, and without ASan
# targets run about three times faster; overflow checks and debug assertions stay on),
# FUZZ_TARGET_DIR (cargo's target dir, default fuzz/target), FUZZ_CODEGEN_UNITS (16 builds
# about twice as fast from cold for slightly slower runs; unset uses cargo-fuzz's default of 1),
# FUZZ_TIMEOUT (seconds of wall time one input may take before it counts as a hang, default
# 10; libFuzzer measures wall time, so a run at `nice 19` on a busy machine wants more:
# scripts/fuzz-long sets 60).
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-3600}"
jobs="${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}"
sanitizer="${FUZZ_SANITIZER:-none}"
build_args=(-s "$sanitizer" --target-dir "${FUZZ_TARGET_DIR:-target}")
if [[ -n "${FUZZ_CODEGEN_UNITS:-}" ]]; then
  build_args+=(--codegen-units "$FUZZ_CODEGEN_UNITS")
fi

# Dictionaries by target; targets without one run without.
dict_for() {
  case "$1" in
    cron_text) echo cron.dict ;;
    wire_request | stored_rows) echo json.dict ;;
    jobs_file) echo toml.dict ;;
  esac
}

cargo +nightly fuzz build "${build_args[@]}"
# `run.sh --build-only`: the build above and nothing else (.ci/run builds early, in the
# background, with the same arguments, so its later run finds the build done).
[[ "$seconds" == --build-only ]] && exit 0
if [[ -n "${FUZZ_ONLY:-}" ]]; then
  # Only these targets (scripts/fuzz-long TARGET...), space-separated.
  read -ra targets <<<"$FUZZ_ONLY"
else
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
mkdir -p work/logs

run_one() {
  local target="$1" dict
  # -timeout: one input taking over FUZZ_TIMEOUT (10 s) is a hang, reported like a crash.
  # -malloc_limit_mb: one allocation over 512 MB is an allocation bomb (a length or count in
  # the input that the code trusted), reported like a crash too.
  local args=(-max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -malloc_limit_mb=512
    -print_final_stats=1)
  dict="$(dict_for "$target")"
  [[ -n "$dict" ]] && args+=(-dict="$dict")
  # FUZZ_SEED fixes libFuzzer's random seed, so a bounded run (CI's) replays the same
  # mutations as a longer run checked before landing; unset, every run explores afresh.
  [[ -n "${FUZZ_SEED:-}" ]] && args+=(-seed="$FUZZ_SEED")
  local corpora=("work/$target" "corpus/$target")
  [[ -d "regressions/$target" ]] && corpora+=("regressions/$target")
  mkdir -p "work/$target"
  cargo +nightly fuzz run "${build_args[@]}" "$target" "${corpora[@]}" -- "${args[@]}" \
    >"work/logs/$target.log" 2>&1
}

declare -A pids=()
failed=()
finish() {
  local target="$1"
  if wait "${pids[$target]}"; then
    local runs rate
    runs="$(grep -ao 'number_of_executed_units: *[0-9]*' "work/logs/$target.log" | grep -o '[0-9]*$' || true)"
    rate="$(grep -ao 'average_exec_per_sec: *[0-9]*' "work/logs/$target.log" | grep -o '[0-9]*$' || true)"
    echo "fuzz $target: clean for ${seconds}s (${runs:-?} executions, ${rate:-?}/s)"
  else
    echo "fuzz $target: FAILED (full log: fuzz/work/logs/$target.log):" >&2
    grep -a -m1 -A4 -E 'panicked at|ERROR: libFuzzer' "work/logs/$target.log" >&2 || true
    grep -a -A12 -E '^Failing input:' "work/logs/$target.log" >&2 || true
    failed+=("$target")
  fi
  unset "pids[$target]"
}

for target in "${targets[@]}"; do
  while (( ${#pids[@]} >= jobs )); do
    # Wait for one running target to finish before starting another.
    for running in "${!pids[@]}"; do finish "$running"; break; done
  done
  echo "fuzz $target: running ${seconds}s"
  run_one "$target" &
  pids[$target]=$!
done
for running in "${!pids[@]}"; do finish "$running"; done

if (( ${#failed[@]} )); then
  echo "fuzz: crashes in ${failed[*]}; inputs under fuzz/artifacts/" >&2
  exit 1
fi
