#!/usr/bin/env bash
# The device calls behind the committed H200 reports (benchmarks/DESIGN.md "Measurement method"), one
# command each, writing under $OUT (the device tool returns at most 8 files: each mode ends by packing
# its files into one $OUT/<mode>.tgz):
#
#   AFTER=<commit> bash benchmarks/h200.sh bench   this tree's kernels, every peer and both floors in one run
#                                    (benchmarks/bench_propose.py --stages; VOCABS, default all three;
#                                    DTYPES, default fp32,bf16,fp16)
#   bash benchmarks/h200.sh report   the conformance report of this tree's kernels, every step at once
#                                    (none is timed): `dyadic24 conform --bundled --only kernel
#                                    --exp-sweep`, kernels/bulk_fuzz.py's 10^6 rows, compute-sanitizer
#                                    memcheck and racecheck, gpu_check (smoke, graph replays, custom op,
#                                    the kernel's exp path); each under a timeout, so one that hangs
#                                    leaves the others'; and the default plan on the selection tests'
#                                    rows and fuzz rows in all three formats (benchmarks/variants.py --rows)
#   AFTER=<commit> BEFORE=<commit> bash benchmarks/h200.sh ab
#                                    this tree and .before/ (a `git archive` of the commit BEFORE,
#                                    carried; both timed by this tree's bench_propose.py and peers.py,
#                                    each with its own kernels) alternately, twice, after compiling
#                                    both side by side, at
#                                    AB_BATCHES (default 1,2,4: the launch-bound sizes whose run-to-run
#                                    spread exceeds 2 %), AB_DTYPES (default fp32,bf16), AB_VOCABS
#                                    (default 163840), AB_IMPLS (default sampled and greedy); ends with
#                                    benchmarks/ab_table.py's table (ab.md)
#   AFTER=<commit> bash benchmarks/h200.sh variants
#                                    benchmarks/variants.py's plans timed in one process (DESIGN.md
#                                    "The 16-bit tile"): VAR_DTYPES (default bf16,fp16,fp32) at
#                                    VAR_BATCHES (default 1,4,16,64,256; binary32 at VAR_FP32_BATCHES,
#                                    default 1,64), VAR_PLANS16 on 16-bit logits (default: the default
#                                    plan, the 16-bit tile's geometries, the default again for the
#                                    spread) and VAR_PLANS on binary32 (default: the default plan),
#                                    the read-only skeleton in every case; before it, untimed and in
#                                    parallel: one --warm process
#                                    per format and plan (the Triton cache then holds every kernel), the
#                                    16-bit plans against the fast reference on the selection tests' rows
#                                    and VAR_FUZZ fuzz rows at V = 163,840, B = 64 (one process per
#                                    format and plan), and the kernel's conformance on the 16-bit golden
#                                    vectors and VAR_BULK bulk rows at B = 64
#   bash benchmarks/h200.sh ncu      Nsight Compute source counters of each of NCU_KERNELS (default
#                                    tile_kernel; merge_kernel) at NCU_SHAPES (profile_ncu.py shapes,
#                                    default fp32 B = 256 sampled and greedy, B = 64 sampled), one
#                                    launch each: per-instruction samples (source_*.csv), the details
#                                    page and the cubins' SASS with their line tables, for
#                                    benchmarks/ncu_source.py; NCU_OPTS_<kernel>: more ncu options
#                                    (--warp-sampling-interval 0 for short launches, --cache-control
#                                    none for the merge, whose words a graph finds in L2)
#
# The device's copy of the tree may hold a stale .git, so bench and ab stamp this tree's runs with
# AFTER=<commit> (required), not with what git says there.
set -uo pipefail
out=${OUT:?OUT must name the output folder}
mode=${1:?bench, report, ab, variants or ncu}
case $mode in bench | ab | variants) : "${AFTER:?AFTER must name the commit of this tree}" ;; esac
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
o=$out/$mode
mkdir -p "$o"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$o/gpu.txt" 2>&1
case $mode in
bench)
    timeout 560 python benchmarks/bench_propose.py --out "$o" --vocabs "${VOCABS:-163840,81920,262144}" \
        --dtypes "${DTYPES:-fp32,bf16,fp16}" --stages \
        --commit "$AFTER" >"$o/log.txt" 2>&1
    echo "bench: exit $?"
    tail -n 45 "$o/bench.md"
    ;;
report)
    timeout 300 python -m dyadic24 conform --bundled --only kernel --exp-sweep --json "$o/conform.json" \
        >"$o/conform.txt" 2>"$o/conform.err" &
    timeout 300 python -m dyadic24.kernels.bulk_fuzz --rows 1000000 --workers 8 --out "$o/bulk" \
        >"$o/bulk.log" 2>&1 &
    for tool in memcheck racecheck; do
        timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python -m dyadic24.kernels.sanitizer_call \
            >"$o/$tool.log" 2>&1 &
    done
    timeout 150 python -m dyadic24.kernels.gpu_check --out "$o/g" --only smoke,graph,custom_op,exp_sweep --replays 5000 \
        >"$o/gpu_check.log" 2>&1 &
    # the selection tests' rows (tests/kernel_rows.py: every row kind, sampled and greedy, at V = 9,001
    # and 40,000, a partial last tile with and without 16-byte loads) and fuzz rows, default plan
    timeout 240 python benchmarks/variants.py --out "$o/rows" --dtypes fp32,bf16,fp16 --batches "" --rows \
        --fuzz 256 --fuzz-vocabs 40000,50000,163840 --fuzz-batch 64 --fuzz-plans default >"$o/rows.log" 2>&1 &
    wait
    rm -rf "$o/rows"
    echo "report: done"
    tail -n 14 "$o/conform.txt"; tail -n 4 "$o/bulk.log" "$o"/memcheck.log "$o"/racecheck.log "$o/gpu_check.log"
    grep -E "^(fuzz|rows):" "$o/rows.log"
    ;;
ab)
    : "${BEFORE:?the commit of .before/}"
    sel=(--impls "${AB_IMPLS:-dyadic24-sampled,dyadic24-greedy}" --batches "${AB_BATCHES:-1,2,4}"
         --vocabs "${AB_VOCABS:-163840}" --dtypes "${AB_DTYPES:-fp32,bf16}")
    # both arms timed by this tree's harness (each with its own kernels): a BEFORE older than 80cc746
    # warmed on pool streams, which times its kernels slower (DESIGN.md "Measurement method")
    cp benchmarks/bench_propose.py benchmarks/peers.py .before/benchmarks/
    # both trees' kernels compiled first, side by side (one replay each, not kept), so that the timed
    # runs below are not compile-bound: 5 batches x 2 dtypes fit the call's 10 minutes this way
    timeout 240 python benchmarks/bench_propose.py --out "$o/warm_after" "${sel[@]}" --replays 1 \
        --commit "$AFTER" >"$o/warm_after.log" 2>&1 &
    (cd .before && PYTHONPATH=$PWD timeout 240 python benchmarks/bench_propose.py --out "$o/warm_before" \
        "${sel[@]}" --replays 1 --commit "$BEFORE" >"$o/warm_before.log" 2>&1) &
    wait
    rm -rf "$o/warm_after" "$o/warm_before"
    echo "ab: compiled (${SECONDS} s)"
    for rep in 1 2; do
        timeout 90 python benchmarks/bench_propose.py --out "$o/after_$rep" "${sel[@]}" \
            --commit "$AFTER" >"$o/after_$rep.log" 2>&1
        # (.before's own script: it puts its own tree first on sys.path; ../benchmarks/bench_propose.py
        # imported this tree's kernels, so the ab runs before 2026-12-02 13:10 timed this tree twice)
        (cd .before && PYTHONPATH=$PWD timeout 90 python benchmarks/bench_propose.py --out "$o/before_$rep" \
            "${sel[@]}" --commit "$BEFORE" >"$o/before_$rep.log" 2>&1)
    done
    python benchmarks/ab_table.py "$o" | tee "$o/ab.md"
    echo "ab: done (${SECONDS} s)"
    ;;
variants)
    dtypes=${VAR_DTYPES:-bf16,fp16,fp32}
    plans16=${VAR_PLANS16:-default,t8192,t16384,t8192-r80,t16384-r96,default}
    sel=(--batches "${VAR_BATCHES:-1,4,16,64,256}" --fp32-batches "${VAR_FP32_BATCHES:-1,64}"
         --floors read-skeleton --replays 200)
    for d in ${dtypes//,/ }; do
        plans=$plans16
        [ "$d" = fp32 ] && plans=${VAR_PLANS:-default}
        for p in $(echo "${plans//,/ }" | tr ' ' '\n' | sort -u); do
            timeout 240 python benchmarks/variants.py --warm --out "$o/warm_${d}_$p" --dtypes "$d" --plans "$p" \
                --plans16 "$p" "${sel[@]}" >"$o/warm_${d}_$p.log" 2>&1 &
        done
    done
    # (one check per format and plan: the fuzz calls at B = 64 share the warm processes' kernels)
    for d in bf16 fp16; do
        for p in $(echo "${plans16//,/ }" | tr ' ' '\n' | sort -u); do
            timeout 240 python benchmarks/variants.py --out "$o/check_${d}_$p" --dtypes "$d" --batches "" \
                --fuzz "${VAR_FUZZ:-128}" --fuzz-vocabs 163840 --fuzz-batch 64 --fuzz-plans "$p" --rows \
                >"$o/check_${d}_$p.log" 2>&1 &
        done
    done
    timeout 240 python -m dyadic24 conform --bundled --only kernel --vectors widening large_vocab --no-invalid \
        --accumulated 0 --no-fuzz --bulk "${VAR_BULK:-4096}" --shapes "V=163840 formats=bf16,fp16 B=64" \
        --workers 4 --no-progress >"$o/conform.txt" 2>&1 &
    wait
    echo "variants: compiled and checked (${SECONDS} s)"
    timeout 300 python benchmarks/variants.py --out "$o" --dtypes "$dtypes" --plans "${VAR_PLANS:-default}" \
        --plans16 "$plans16" "${sel[@]}" --commit "$AFTER" >"$o/log.txt" 2>&1
    echo "variants: exit $? (${SECONDS} s)"
    rm -rf "$o"/warm_*/ "$o"/check_*/
    tail -n 2 "$o/conform.txt"; grep -HE "^(fuzz|rows):" "$o"/check_*.log | sed "s|$o/||"
    grep "^!!" "$o/log.txt" | head -5
    sed -n '/^| dtype | B | skeleton/,/^$/p' "$o/variants.md"
    ;;
ncu)
    ncu --version >"$o/ncu_version.txt" 2>&1
    for kernel in ${NCU_KERNELS:-tile_kernel}; do
        for shape in ${NCU_SHAPES:-256:163840:1 256:163840:0 64:163840:1}; do
            tag=$(echo "$shape" | tr ':' '_')
            [ "$kernel" = tile_kernel ] || tag=${kernel%_kernel}_$tag
            opts=NCU_OPTS_$kernel
            # shellcheck disable=SC2086 # (the options are words)
            timeout 200 ncu --clock-control none ${!opts:-} --kernel-name "regex:$kernel" --launch-skip 1 --launch-count 1 \
                --section SourceCounters --section WarpStateStats --section InstructionStats \
                --section SchedulerStats --section SpeedOfLight --import-source yes -f -o "$o/r_$tag" \
                python benchmarks/profile_ncu.py --calls 2 --shapes "$shape" >"$o/run_$tag.log" 2>&1
            ncu -i "$o/r_$tag.ncu-rep" --page source --csv --print-source sass | gzip -9 >"$o/source_$tag.csv.gz"
            ncu -i "$o/r_$tag.ncu-rep" --page details --csv >"$o/details_$tag.csv" 2>&1
            rm -f "$o/r_$tag.ncu-rep"
        done
        for f in $(find ~/.triton/cache -name "$kernel.cubin"); do
            nvdisasm -g -c "$f" | gzip -9 >"$o/${kernel}_$(basename "$(dirname "$f")").sass.gz"
        done
    done
    ls "$o"
    ;;
*)
    echo "unknown mode $mode (bench, report, ab or ncu)"; exit 2
    ;;
esac
rm -f "$o"/*.png "$o"/*/*.png
tar -czf "$out/$mode.tgz" -C "$out" "$mode" && rm -rf "$o"
