#!/bin/bash
# One device call: correctness on the GPU, tuning, and the benchmark runs of record.
export PYTHONUNBUFFERED=1 TILECONV_CACHE_DIR=/tmp/tileconv-cache
L=$OUT/log.txt
step() { echo "=== $1" | tee -a $L; shift; (time timeout "$@") 2>&1 | tee -a $L | tail -${TAILN:-12}; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a $L
TAILN=14 step info 25 python -m tileconv info
TAILN=6 step gpu-tests 60 python -m pytest -m gpu -q -p no:cacheprovider
TAILN=22 step verify 140 python -m tileconv verify --cases 2000 --seed 7 --device cuda --json $OUT/verify.json
TAILN=4 step tune 90 python -m tileconv tune --suite all
TAILN=80 step bench-all 170 python -m tileconv bench --suite all --json $OUT/all.json --plot $OUT/all.png
TAILN=16 step bench-seed-fp32 50 python -m tileconv bench --suite seed --dtype float32 --layout nchw --json $OUT/seed-fp32.json --plot $OUT/seed-fp32.png
TAILN=14 step sweep 45 python -m tileconv sweep --json $OUT/sweep.json --plot $OUT/sweep.png
