#!/usr/bin/env bash
# The device calls behind the committed H200 reports (benchmarks/DESIGN.md "Measurement method"), one
# command each, writing under $OUT (the device tool returns it):
#
#   bash benchmarks/h200.sh bench    the kernels of this tree and of .before/ (a `git archive` of the
#                                    baseline commit, carried) in one run with the same replays, then
#                                    every peer and floor at V = 163,840 (benchmarks/bench_propose.py)
#   bash benchmarks/h200.sh report   the conformance report of this tree's kernels: gpu_check (compile
#                                    smoke, graph replays, custom op, both exp paths), `dyadic24 conform
#                                    --bundled --only kernel` with --bulk 1000000 and --exp-sweep,
#                                    compute-sanitizer memcheck and racecheck (each step under a
#                                    timeout, so one that hangs leaves the others' results)
#   bash benchmarks/h200.sh ab       this tree and .before/ alternately, twice, at B = 1, 2, 4 (the
#                                    launch-bound sizes whose run-to-run spread exceeds 2 %), logged
set -uo pipefail
out=${OUT:?OUT must name the output folder}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$out/gpu.txt" 2>&1
case ${1:?bench or report} in
bench)
    python benchmarks/bench_propose.py --out "$out/after" --impls dyadic24-sampled,dyadic24-greedy \
        --commit "${AFTER:-HEAD}" >>"$out/log.txt" 2>&1 || echo "after: exit $?"
    (cd .before && PYTHONPATH=$PWD python benchmarks/bench_propose.py --out "$out/before" >>"$out/log.txt" 2>&1) \
        || echo "before: exit $?"
    python benchmarks/bench_propose.py --out "$out/peers" --vocabs 163840 --stages --commit "${AFTER:-HEAD}" \
        >>"$out/log.txt" 2>&1 || echo "peers: exit $?"
    rm -f "$out/before/bench.md" "$out/before/bench_latency.png" "$out/after/bench.md" "$out/after/bench_latency.png"
    tail -n 45 "$out/peers/bench.md"
    ;;
report)
    timeout 300 python -m dyadic24 conform --bundled --only kernel --bulk 1000000 --exp-sweep \
        --json "$out/conform.json" >"$out/conform.txt" 2>"$out/conform.err"
    echo "conform: exit $?"
    for tool in memcheck racecheck; do
        timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python -m dyadic24.kernels.sanitizer_call \
            >"$out/$tool.log" 2>&1
        echo "$tool: exit $?"
    done
    timeout 80 python -m dyadic24.kernels.gpu_check --out "$out/g" --only smoke,graph,custom_op >/dev/null 2>&1
    echo "gpu_check: exit $?"
    tail -n 12 "$out/conform.txt"; tail -n 3 "$out"/memcheck.log "$out"/racecheck.log
    ;;
ab)
    sel=(--impls dyadic24-sampled,dyadic24-greedy --batches 1,2,4)
    for rep in 1 2; do
        timeout 40 python benchmarks/bench_propose.py --out "$out/ab_after_$rep" "${sel[@]}" \
            >"$out/ab_after_$rep.log" 2>&1
        (cd .before && PYTHONPATH=$PWD timeout 40 python ../benchmarks/bench_propose.py --out "$out/ab_before_$rep" \
            "${sel[@]}" --commit 3aeb4bc >"$out/ab_before_$rep.log" 2>&1)
    done
    ;;
esac
