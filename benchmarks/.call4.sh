set -x
export TILECONV_CACHE_DIR=$OUT/cache
mkdir -p $OUT/cache && cp benchmarks/results/nvidia-h200_tuning-cache-resnet50_session45.json $OUT/cache/tuning-v1.json
timeout 330 python -m pytest -q tests/test_conv2d.py tests/test_autograd.py -p no:cacheprovider -x 2>&1 | tail -4
timeout 120 python -m tileconv bench --suite resnet50 --epilogue bias_relu --json $OUT/r50_bias_relu.json 2>&1 | tail -3
timeout 60 python benchmarks/probe_wgmma_rows.py 2>&1 | tail -2
