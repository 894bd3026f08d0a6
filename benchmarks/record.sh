#!/bin/bash
# The runs of record, in parts that each fit one device call (10 minutes):
#
#   bash benchmarks/record.sh check      the whole test suite on the GPU
#   bash benchmarks/record.sh verify     verify 2000 random cases
#   bash benchmarks/record.sh verify-bwd verify --pass bwd: 600 random cases' gradients, every backward algorithm
#   bash benchmarks/record.sh forward    tune, bench all, epilogues, bf16, NCHW, host cost
#   bash benchmarks/record.sh issue4     every figure issue 4 asks for, fp16 NHWC unless said: resnet50 untuned
#                                        (the heuristics), tune --suite resnet50 (timed), resnet50 tuned, both
#                                        epilogues against eager, host cost and first call, seed and vae tuned,
#                                        bf16 tuned, NCHW untuned
#   bash benchmarks/record.sh issue4-core  issue 4's core rows alone, for a call that cannot hold the whole part: resnet50
#                                        untuned, tune --suite resnet50 (timed), resnet50 tuned, host cost and first
#                                        call, seed tuned, bias_relu against eager
#   bash benchmarks/record.sh issue5     every figure issue 5 asks for: the depthwise and grouped suites
#                                        untuned, seed003 in fp16 NHWC and strict fp32 NCHW, the fused epilogue's
#                                        cost on the depthwise, grouped and seed suites (benchmarks/probe_epilogue.py;
#                                        seed003 in strict fp32 NCHW too)
#   bash benchmarks/record.sh precision  strict fp32 / TF32 (seed, resnet50), the ladder chart, sweep
#   bash benchmarks/record.sh fp32       tune + bench tf32 and strict fp32, NHWC and NCHW (DTYPES, LAYOUTS pick)
#   bash benchmarks/record.sh nchw       NCHW input: GPU tests of staged_nhwc, resnet50 fp16 (heuristics, tuned), tf32
#   bash benchmarks/record.sh training   tune the backward, dgrad, wgrad, bench --train resnet50
#   bash benchmarks/record.sh ddp        the training step under DDP on 2 GPUs (a machine with 2)
#   bash benchmarks/record.sh tma        tma_rows: its GPU tests, then seed and vae fp16 NHWC (heuristics, tuned)
#                                        and seed TF32 NHWC, tuned
#   bash benchmarks/record.sh r50        resnet50 fp16 NHWC (heuristics, then tuned) and TF32 NHWC tuned
#   bash benchmarks/record.sh ws         implicit_gemm_ws: its GPU tests, then resnet50 and seed fp16 NHWC
#                                        (heuristics, then tuned)
#   bash benchmarks/record.sh ws-tf32    resnet50 and seed TF32 NHWC, heuristics then tuned
#   bash benchmarks/record.sh ws-tuned   resnet50 and seed fp16 NHWC tuned; then ping-pong's GPU tests and
#                                        a seed000 probe, time-boxed
#   bash benchmarks/record.sh direct     depthwise, grouped, seed003: heuristics, then tuned (NCU="case" adds
#                                        Nsight Compute on the depthwise rows whose name contains case)
#   bash benchmarks/record.sh banded     dense_toeplitz and depthwise_plane: their GPU tests, benchmarks/probe.py
#                                        toeplitz and plane (every candidate against cuDNN)
#   bash benchmarks/record.sh banded-record  seed003 (fp16 NHWC, strict fp32 NCHW) and the depthwise suite, tuned
#   bash benchmarks/record.sh rows       depthwise_rows: its GPU tests, the depthwise suite tuned, seed003,
#                                        benchmarks/probe.py rows, verify's random cases
#   bash benchmarks/record.sh window     depthwise_window: its GPU tests, verify --algo depthwise_window, the
#                                        depthwise suite (heuristics, no tuning cache)
#   bash benchmarks/record.sh halo       depthwise_halo: its GPU tests (and the suites it broke once), the
#                                        depthwise suite (heuristics, tuned), verify's random cases
#   bash benchmarks/record.sh dw-bwd     the depthwise backward: its GPU tests, depthwise dgrad and wgrad
#                                        (heuristics, then tune --pass bwd and tuned), resnet50 wgrad (heuristics)
#   bash benchmarks/record.sh dw-wgrad   the depthwise wgrad kernels tuned on top of an earlier cache (SEED_CACHE=
#                                        a results/ tuning cache, its dgrad entries kept; FORCE=1 re-tunes its wgrad
#                                        entries too), then depthwise dgrad and
#                                        wgrad tuned and their sum (benchmarks/backward_sum.py)
#   bash benchmarks/record.sh model      ResNet-50 converted vs torch.compile max-autotune, batch 32 and 1
#                                        (BATCHES="32" picks; each needs ~4-5 minutes)
#   bash benchmarks/record.sh models     MobileNetV2, ConvNeXt-T, ResNeXt-50 the same way, batch 32
#                                        (MODELS="a b" picks; each needs ~4-5 minutes: at most two a call)
#
# Outputs go to $OUT (the device tool's folder), packed into $OUT/results.tgz after every
# step so that a cut call still returns what it measured (the tool returns 8 files at most);
# the log of every step to $OUT/log.txt. The tuning cache lives in /tmp/tileconv-cache and
# is packed too: a part that benches without tuning first uses the heuristics.
set -u
export PYTHONUNBUFFERED=1 TILECONV_CACHE_DIR=/tmp/tileconv-cache
OUT=${OUT:-/tmp/tileconv-out}
R=/tmp/tileconv-record
# A machine can outlive a session: a record folder left by an earlier run would be packed with
# this run's files as if measured now (session 53 found session 52's depthwise JSON so).
rm -rf "$R"
mkdir -p "$OUT" "$R"
L=$OUT/log.txt
step() { echo "=== $1" | tee -a "$L"; shift; (time timeout "$@") 2>&1 | tee -a "$L" | tail -"${TAILN:-12}"; }
save() {
    cp "$TILECONV_CACHE_DIR/tuning-v1.json" "$R/tuning-cache.json" 2>/dev/null
    (cd "$R" && tar czf "$OUT/results.tgz" .)
}
# The parts whose figures say "untuned" (the heuristics) start from no tuning cache: the machine may
# hold one from an earlier call or session.
fresh_cache() { rm -rf "$TILECONV_CACHE_DIR"; }
# Issue 5's seed003 row in fp16 channels_last and strict fp32 NCHW (the tuning cache, if any, decides).
seed003_rows() {
    TAILN=3 step seed003 30 python -m tileconv bench --suite seed --case seed003 --json "$R/seed003-float16-nhwc.json"
    TAILN=3 step seed003-fp32 30 python -m tileconv bench --suite seed --case seed003 --dtype float32 --layout nchw \
        --json "$R/seed003-float32-nchw.json"
}
# resnet50 and seed fp16 channels_last, tuned then benched (issue 4's rows of record).
resnet50_seed_tuned() {
    TAILN=2 step tune-r50 120 python -m tileconv tune --suite resnet50
    TAILN=2 step tune-seed 90 python -m tileconv tune --suite seed
    save
    for suite in resnet50 seed; do
        TAILN=3 step "$suite" 60 python -m tileconv bench --suite $suite --json "$R/$suite-float16-nhwc.json" \
            --plot "$R/$suite-float16-nhwc.png"
    done
    save
}
# Issue 4's core rows (about 290 s on an H200), most needed first: resnet50 untuned (the heuristics), tune
# --suite resnet50 (timed), resnet50 tuned, host cost and first call, seed tuned, bias + ReLU against eager.
issue4_core() {
    fresh_cache
    TAILN=3 step r50-heuristics 75 python -m tileconv bench --suite resnet50 --json "$R/resnet50-float16-nhwc-heuristics.json"
    save
    TAILN=3 step tune-r50 90 python -m tileconv tune --suite resnet50
    save
    TAILN=3 step r50 60 python -m tileconv bench --suite resnet50 --json "$R/resnet50-float16-nhwc.json" \
        --plot "$R/resnet50-float16-nhwc.png"
    save
    TAILN=8 step host-cost 50 python -m tileconv bench --host-cost --suite resnet50 --json "$R/host.json"
    TAILN=2 step tune-seed 60 python -m tileconv tune --suite seed
    save
    TAILN=4 step seed 45 python -m tileconv bench --suite seed --repeat 5 --json "$R/seed-float16-nhwc.json"
    save
    TAILN=3 step epilogue-bias_relu 60 python -m tileconv bench --suite resnet50 --epilogue bias_relu \
        --json "$R/resnet50-bias_relu.json"
    save
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a "$L"

case "${1:-}" in
check)
    # The whole suite on the GPU, not only the -m gpu tests: the interpreter cannot show what
    # Triton's GPU compiler does to the arithmetic (it turned a tl.sum of products into a TF32 dot).
    TAILN=8 step tests-on-gpu 540 python -m pytest -q -p no:cacheprovider -n 8
    save
    ;;
verify)
    TAILN=22 step verify 400 python -m tileconv verify --cases 2000 --seed 7 --device cuda --jobs 14 --json "$R/verify.json"
    save
    ;;
verify-bwd)
    TAILN=22 step verify-bwd 400 python -m tileconv verify --pass bwd --algo each --cases 600 --seed 8 --device cuda \
        --jobs 14 --json "$R/verify-bwd.json"
    save
    ;;
forward)
    TAILN=3 step tune-resnet50 60 python -m tileconv tune --suite resnet50
    TAILN=3 step tune-all 80 python -m tileconv tune --suite all
    TAILN=3 step tune-bf16 40 python -m tileconv tune --suite resnet50 --dtype bfloat16
    save
    TAILN=3 step bench-all 150 python -m tileconv bench --suite all --json "$R/all.json" --plot "$R/all.png"
    save
    for epilogue in bias_relu bias_add_relu; do
        TAILN=3 step "epilogue-$epilogue" 60 python -m tileconv bench --suite resnet50 --epilogue $epilogue \
            --json "$R/resnet50-$epilogue.json"
    done
    TAILN=3 step bf16 45 python -m tileconv bench --suite resnet50 --dtype bfloat16 --json "$R/resnet50-bf16.json"
    TAILN=3 step nchw 45 python -m tileconv bench --suite resnet50 --layout nchw --json "$R/resnet50-nchw.json"
    TAILN=8 step host-cost 40 python -m tileconv bench --host-cost --suite resnet50 --json "$R/host.json"
    save
    ;;
precision)
    TAILN=3 step tune-seed-fp32 30 python -m tileconv tune --suite seed --dtype float32 --layout nchw
    for dtype in float32 tf32; do
        TAILN=3 step "seed-$dtype" 40 python -m tileconv bench --suite seed --dtype $dtype --layout nchw \
            --json "$R/seed-$dtype-nchw.json"
        TAILN=3 step "resnet50-$dtype" 50 python -m tileconv bench --suite resnet50 --dtype $dtype --layout nchw \
            --json "$R/resnet50-$dtype-nchw.json"
        save
    done
    TAILN=3 step ladder 90 python -m tileconv bench --suite seed --case seed001 --dtype float32 --layout nchw \
        --algo all --json "$R/ladder.json" --plot "$R/ladder.png"
    TAILN=3 step sweep 60 python -m tileconv sweep --json "$R/sweep.json" --plot "$R/sweep.png"
    save
    ;;
fp32)
    # Both fp32 modes in both layouts, tuned first: the issue's fp32 table (seed001 and resnet50).
    for dtype in ${DTYPES:-tf32 float32}; do
        for layout in ${LAYOUTS:-nhwc nchw}; do
            TAILN=2 step "tune-$dtype-$layout" 120 python -m tileconv tune --suite resnet50 --dtype $dtype --layout $layout
            TAILN=2 step "tune-seed-$dtype-$layout" 60 python -m tileconv tune --suite seed --dtype $dtype --layout $layout
            save
            for suite in seed resnet50; do
                TAILN=3 step "$suite-$dtype-$layout" 90 python -m tileconv bench --suite $suite --dtype $dtype \
                    --layout $layout --json "$R/$suite-$dtype-$layout.json"
            done
            save
        done
    done
    ;;
nchw)
    # NCHW input: staged_nhwc (a channels_last copy, then the GEMM) and gemm_1x1_nchw against the NCHW gather.
    TAILN=4 step tests-nchw 300 python -m pytest -q -p no:cacheprovider -n 8 \
        -k "${TESTS:-staged or gemm_1x1_nchw or replayed_calls or forward_launchers}" \
        tests/test_conv2d.py tests/test_call_plans.py
    TAILN=3 step nchw-fp16-heuristics 90 python -m tileconv bench --suite resnet50 --layout nchw \
        --json "$R/resnet50-float16-nchw-heuristics.json"
    save
    for dtype in ${DTYPES:-float16 tf32}; do
        TAILN=2 step "tune-$dtype-nchw" 120 python -m tileconv tune --suite resnet50 --dtype $dtype --layout nchw
        [ "$dtype" = float16 ] || TAILN=2 step "tune-seed-$dtype-nchw" 60 python -m tileconv tune --suite seed --dtype $dtype --layout nchw
        for suite in resnet50 $([ "$dtype" = float16 ] || echo seed); do
            TAILN=3 step "$suite-$dtype-nchw" 90 python -m tileconv bench --suite $suite --dtype $dtype --layout nchw \
                --json "$R/$suite-$dtype-nchw.json"
        done
        save
    done
    ;;
training)
    TAILN=3 step tune-bwd 120 python -m tileconv tune --suite resnet50 --pass bwd
    save
    TAILN=3 step dgrad 50 python -m tileconv bench --suite resnet50 --pass dgrad --json "$R/resnet50-dgrad.json"
    TAILN=3 step wgrad 50 python -m tileconv bench --suite resnet50 --pass wgrad --json "$R/resnet50-wgrad.json"
    TAILN=3 step depthwise-bwd 60 python -m tileconv bench --suite depthwise --pass fwd+bwd --json "$R/depthwise-bwd.json"
    save
    TAILN=12 step train 150 python -m tileconv bench --train resnet50 --steps 200 --json "$R/train.json" --plot "$R/train.png"
    save
    ;;
ddp)
    TAILN=12 step train 150 python -m tileconv bench --train resnet50 --steps 200 --json "$R/train.json" --plot "$R/train.png"
    save
    TAILN=12 step ddp 220 python -m torch.distributed.run --nproc_per_node=2 benchmarks/ddp_train.py --model resnet50 \
        --steps 200 --batch 16 --single "$R/train.json" --json "$R/ddp.json"
    save
    ;;
tma)
    # Wide stride-1 rows on tma_rows (issue 4's seed001 and vae rows, issue 8's TF32 NHWC).
    TAILN=4 step tests-tma 240 python -m pytest -q -p no:cacheprovider -n 8 \
        -k "${TESTS:-tma_rows or replayed or forward_launchers or hopper}" \
        tests/test_conv2d.py tests/test_call_plans.py tests/test_sass.py tests/test_tuning.py
    for suite in seed vae; do
        TAILN=3 step "$suite-heuristics" 60 python -m tileconv bench --suite $suite \
            --json "$R/$suite-float16-nhwc-heuristics.json"
    done
    save
    TAILN=2 step tune-seed 90 python -m tileconv tune --suite seed
    TAILN=2 step tune-vae 90 python -m tileconv tune --suite vae
    TAILN=2 step tune-seed-tf32 90 python -m tileconv tune --suite seed --dtype tf32
    save
    for suite in seed vae; do
        TAILN=3 step "$suite" 60 python -m tileconv bench --suite $suite --json "$R/$suite-float16-nhwc.json" \
            --plot "$R/$suite-float16-nhwc.png"
    done
    TAILN=3 step seed-tf32 60 python -m tileconv bench --suite seed --dtype tf32 --json "$R/seed-tf32-nhwc.json"
    save
    ;;
r50)
    # ResNet-50 in fp16 and TF32, channels_last (issue 4's resnet50 targets, issue 8's TF32 row).
    TAILN=3 step r50-heuristics 60 python -m tileconv bench --suite resnet50 --json "$R/resnet50-float16-nhwc-heuristics.json"
    TAILN=2 step tune-r50 90 python -m tileconv tune --suite resnet50
    save
    TAILN=3 step r50 60 python -m tileconv bench --suite resnet50 --json "$R/resnet50-float16-nhwc.json" \
        --plot "$R/resnet50-float16-nhwc.png"
    save
    TAILN=2 step tune-r50-tf32 120 python -m tileconv tune --suite resnet50 --dtype tf32
    TAILN=3 step r50-tf32 60 python -m tileconv bench --suite resnet50 --dtype tf32 --json "$R/resnet50-tf32-nhwc.json"
    save
    ;;
ws)
    # The warp-specialized Gluon implicit GEMM (issue 4's seed000 and resnet50 rows).
    TAILN=6 step tests-ws 200 python -m pytest -q -p no:cacheprovider -n 8 \
        -k "${TESTS:-implicit_gemm_ws or replayed or forward_launchers or hopper or candidates}" \
        tests/test_conv2d.py tests/test_call_plans.py tests/test_tuning.py
    for suite in resnet50 seed; do
        TAILN=3 step "$suite-heuristics" 60 python -m tileconv bench --suite $suite \
            --json "$R/$suite-float16-nhwc-heuristics.json"
    done
    save
    resnet50_seed_tuned
    ;;
ws-tuned)
    # resnet50 and seed fp16 NHWC tuned (the bench of record), then ping-pong's GPU tests and a
    # seed000 probe, last and time-boxed (its first form hung).
    resnet50_seed_tuned
    TAILN=4 step tests-pingpong 60 python -m pytest -q -p no:cacheprovider -n 4 tests/test_conv2d.py -k "pp and implicit_gemm_ws"
    TAILN=12 step probe-pingpong 60 python benchmarks/probe.py ws pingpong seed000
    ;;
ws-tf32)
    for suite in resnet50 seed; do
        TAILN=3 step "$suite-tf32-heuristics" 60 python -m tileconv bench --suite $suite --dtype tf32 \
            --json "$R/$suite-tf32-nhwc-heuristics.json"
    done
    save
    TAILN=2 step tune-r50-tf32 150 python -m tileconv tune --suite resnet50 --dtype tf32
    TAILN=2 step tune-seed-tf32 90 python -m tileconv tune --suite seed --dtype tf32
    save
    for suite in resnet50 seed; do
        TAILN=3 step "$suite-tf32" 60 python -m tileconv bench --suite $suite --dtype tf32 \
            --json "$R/$suite-tf32-nhwc.json"
    done
    save
    ;;
issue4-core)
    issue4_core
    ;;
issue4)
    issue4_core
    TAILN=3 step epilogue-bias_add_relu 60 python -m tileconv bench --suite resnet50 --epilogue bias_add_relu \
        --json "$R/resnet50-bias_add_relu.json"
    TAILN=2 step tune-vae 60 python -m tileconv tune --suite vae
    save
    TAILN=3 step vae 45 python -m tileconv bench --suite vae --json "$R/vae-float16-nhwc.json"
    save
    TAILN=2 step tune-bf16 75 python -m tileconv tune --suite resnet50 --dtype bfloat16
    TAILN=3 step bf16 45 python -m tileconv bench --suite resnet50 --dtype bfloat16 --json "$R/resnet50-bf16.json"
    save
    TAILN=3 step nchw-heuristics 50 python -m tileconv bench --suite resnet50 --layout nchw \
        --json "$R/resnet50-float16-nchw-heuristics.json"
    save
    ;;
issue5)
    fresh_cache
    TAILN=3 step dw-heuristics 150 python -m tileconv bench --suite depthwise --json "$R/depthwise-heuristics.json" \
        --plot "$R/depthwise-heuristics.png"
    TAILN=3 step grouped-heuristics 60 python -m tileconv bench --suite grouped --json "$R/grouped-heuristics.json"
    seed003_rows
    save
    TAILN=20 step epilogue-cost 120 python benchmarks/probe_epilogue.py --suite depthwise --json "$R/epilogue-cost.json"
    save
    TAILN=9 step epilogue-cost-grouped 60 python benchmarks/probe_epilogue.py --suite grouped,seed --match "resnext|seed003" \
        --json "$R/epilogue-cost-grouped.json"
    TAILN=3 step epilogue-cost-seed003-fp32 30 python benchmarks/probe_epilogue.py --suite seed --match seed003 \
        --dtype float32 --layout nchw --json "$R/epilogue-cost-seed003-float32-nchw.json"
    save
    ;;
direct)
    # The suites of issue 5 (depthwise, grouped, seed003): fp16 NHWC, then seed003 in fp32
    # NCHW too (seed003 untuned: the heuristics' kernel).
    TAILN=3 step dw-heuristics 90 python -m tileconv bench --suite depthwise --json "$R/depthwise-heuristics.json"
    save
    TAILN=2 step tune-direct 200 python -m tileconv tune --suite depthwise
    TAILN=2 step tune-grouped 100 python -m tileconv tune --suite grouped
    save
    TAILN=3 step depthwise 90 python -m tileconv bench --suite depthwise --json "$R/depthwise.json" --plot "$R/depthwise.png"
    TAILN=3 step grouped 60 python -m tileconv bench --suite grouped --json "$R/grouped.json"
    seed003_rows
    save
    for case in ${NCU:-}; do  # "_" stands for a space: NCU="hw56/1 dw7x7_c96"
        case=${case//_/ }
        TAILN=40 step "ncu-${case// /_}" 120 ncu --launch-skip 3 --launch-count 1 -k "regex:^conv2d_(depthwise|direct)" \
            --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
            python -m tileconv bench --suite depthwise --case "$case" --repeat 1
    done
    save
    ;;
halo)
    # test_conv2d.py whole but its int64 cases (tens of GiB each, one at a time: minutes), and the
    # suites that depend on the heuristics' choices.
    TAILN=6 step tests-halo 270 python -m pytest -q -p no:cacheprovider -n 14 -W ignore -rf \
        tests/test_conv2d.py tests/test_convert.py tests/test_bench.py tests/test_tuning.py tests/test_call_plans.py \
        -k "not int64_indexing_on_gpu"
    TAILN=3 step dw-heuristics 80 python -m tileconv bench --suite depthwise --json "$R/depthwise-heuristics.json"
    save
    TAILN=2 step tune-depthwise 150 python -m tileconv tune --suite depthwise
    save
    TAILN=24 step depthwise 80 python -m tileconv bench --suite depthwise --json "$R/depthwise.json" --plot "$R/depthwise.png"
    save
    TAILN=8 step verify 90 python -m tileconv verify --cases 300 --seed ${SEED:-13} --device cuda --jobs 14 --json "$R/verify.json"
    save
    ;;
window)
    TAILN=4 step tests-window 200 python -m pytest -q -p no:cacheprovider -n 8 -W ignore -rf \
        -k "${TESTS:-depthwise_window or respect or heuristics or race}" \
        tests/test_conv2d.py tests/test_tuning.py tests/test_call_plans.py tests/test_sass.py
    save
    TAILN=8 step verify-window "${VERIFY_S:-200}" python -m tileconv verify --cases "${CASES:-150}" --seed "${SEED:-25}" \
        --algo depthwise_window --device cuda --jobs 14 --json "$R/verify-window.json"
    save
    TAILN=24 step dw-heuristics 150 python -m tileconv bench --suite depthwise --json "$R/depthwise-heuristics.json" \
        --plot "$R/depthwise-heuristics.png"
    save
    ;;
banded)
    # The banded kernels written without a GPU (session 9): dense_toeplitz (few input channels)
    # and depthwise_plane (7x7 planes). Their GPU tests, then each probe: every candidate
    # against the heuristics' kernel and cuDNN.
    TAILN=4 step tests-banded 300 python -m pytest -q -p no:cacheprovider -n 8 \
        -k "${TESTS:-dense_toeplitz or depthwise_plane or banded or replayed or forward_launchers or hopper}" \
        tests/test_conv2d.py tests/test_call_plans.py tests/test_sass.py tests/test_tuning.py
    TAILN=40 step probe-toeplitz 120 python benchmarks/probe.py toeplitz
    TAILN=40 step probe-plane 90 python benchmarks/probe.py plane
    save
    ;;
banded-record)
    # Issue 5's rows they serve, tuned (tune races them): seed003 in fp16 NHWC and strict fp32
    # NCHW, then the depthwise suite.
    TAILN=2 step tune-seed 60 python -m tileconv tune --suite seed
    TAILN=2 step tune-seed-fp32 60 python -m tileconv tune --suite seed --dtype float32 --layout nchw
    save
    seed003_rows
    save
    TAILN=2 step tune-depthwise 200 python -m tileconv tune --suite depthwise
    TAILN=3 step depthwise 90 python -m tileconv bench --suite depthwise --json "$R/depthwise.json" --plot "$R/depthwise.png"
    save
    ;;
rows)
    # depthwise_rows (3x3 rows streamed, the next rows loaded ahead, row stride 1 and 2): its GPU
    # tests, the depthwise suite tuned (tune races it) and benched, seed003 (fp16 NHWC, strict
    # fp32 NCHW), then benchmarks/probe.py rows (its candidates against the 2D kernels and cuDNN)
    # and verify's random cases.
    TAILN=4 step tests-rows 150 python -m pytest -q -p no:cacheprovider -n 8 \
        -k "${TESTS:-depthwise_rows or dense_toeplitz or depthwise_plane or respect or heuristics}" \
        tests/test_conv2d.py tests/test_tuning.py tests/test_call_plans.py
    TAILN=2 step tune-depthwise 150 python -m tileconv tune --suite depthwise
    save
    TAILN=3 step depthwise 90 python -m tileconv bench --suite depthwise --json "$R/depthwise.json" --plot "$R/depthwise.png"
    seed003_rows
    save
    TAILN=60 step probe-rows 180 python benchmarks/probe.py rows
    save
    TAILN=12 step verify "${VERIFY_S:-90}" python -m tileconv verify --cases "${CASES:-400}" --seed 10 --algo each --device cuda --jobs 14 \
        --json "$R/verify.json"
    save
    ;;
dw-bwd)
    TAILN=2 step tests-bwd 120 python -m pytest -q -p no:cacheprovider -n 8 tests/test_autograd.py tests/test_tune_backward.py
    for p in dgrad wgrad; do
        TAILN=3 step "depthwise-$p-heuristics" 120 python -m tileconv bench --suite depthwise --pass $p \
            --json "$R/depthwise-float16-nhwc-$p-heuristics.json"
    done
    save
    TAILN=1 step tune-dw-bwd 200 python -m tileconv tune --suite depthwise --pass bwd
    for p in dgrad wgrad; do
        TAILN=3 step "depthwise-$p" 100 python -m tileconv bench --suite depthwise --pass $p \
            --json "$R/depthwise-float16-nhwc-$p.json"
    done
    TAILN=3 step resnet50-wgrad-heuristics 100 python -m tileconv bench --suite resnet50 --pass wgrad \
        --json "$R/resnet50-float16-nhwc-wgrad-heuristics.json"
    save
    ;;
dw-wgrad)
    if [ -n "${SEED_CACHE:-}" ]; then mkdir -p "$TILECONV_CACHE_DIR" && cp "$SEED_CACHE" "$TILECONV_CACHE_DIR/tuning-v1.json"; fi
    TAILN=2 step tests-dw-bwd 100 python -m pytest -q -p no:cacheprovider -n 8 tests/test_autograd.py \
        -k "halo or toeplitz or depthwise"
    TAILN=20 step tune-dw-wgrad "${TUNE_S:-300}" python -m tileconv tune --suite depthwise --pass wgrad ${FORCE:+--force}
    save
    for p in dgrad wgrad; do
        TAILN=3 step "depthwise-$p" 90 python -m tileconv bench --suite depthwise --pass $p \
            --json "$R/depthwise-float16-nhwc-$p.json"
    done
    TAILN=20 step backward-sum 10 python benchmarks/backward_sum.py "$R/depthwise-float16-nhwc-dgrad.json" \
        "$R/depthwise-float16-nhwc-wgrad.json" --json "$R/depthwise-float16-nhwc-bwd.json"
    save
    ;;
model)
    # max-autotune compiles for ~4 minutes a model; the tuning cache (forward tuned) makes tileconv's set-up short.
    for batch in ${BATCHES:-32 1}; do  # BATCHES="1" picks
        TAILN=16 step "model-b$batch" 290 python -m tileconv bench --model resnet50 --batch $batch --json "$R/"
        save
    done
    ;;
models)
    # One process a model: a CUDA fault in one (seen once on an H200, ConvNeXt-T timed after
    # MobileNetV2 in the same process; not reproduced alone) cannot take the others with it.
    for model in ${MODELS:-mobilenet_v2 convnext_tiny resnext50_32x4d}; do
        TAILN=16 step "model-$model" 290 python -m tileconv bench --model "$model" --batch 32 --json "$R/"
        save
    done
    ;;
*)
    echo "usage: bash benchmarks/record.sh check|verify|forward|precision|fp32|nchw|training|ddp|tma|r50|direct|window|halo|banded|banded-record|rows|model|models" >&2
    exit 2
    ;;
esac
