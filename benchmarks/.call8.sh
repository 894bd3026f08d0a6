export PYTHONUNBUFFERED=1 TILECONV_CACHE_DIR=/tmp/tc-cache-s54f; rm -rf $TILECONV_CACHE_DIR
s() { echo "=== $1"; shift; ( time timeout "$@" ) 2>&1 | tail -${T:-4}; }
T=3 s grouped-heuristics 60 python -m tileconv bench --suite grouped --json $OUT/grouped-heuristics.json
T=2 s tune-grouped 60 python -m tileconv tune --suite grouped
T=3 s grouped-tuned 60 python -m tileconv bench --suite grouped --json $OUT/grouped-tuned.json
cp $TILECONV_CACHE_DIR/tuning-v1.json $OUT/tuning-cache-grouped.json 2>/dev/null
rm -rf $TILECONV_CACHE_DIR
T=3 s seed003 30 python -m tileconv bench --suite seed --case seed003 --json $OUT/seed003-float16-nhwc.json
T=3 s seed003-fp32 30 python -m tileconv bench --suite seed --case seed003 --dtype float32 --layout nchw --json $OUT/seed003-float32-nchw.json
T=3 s dw-heuristics 150 python -m tileconv bench --suite depthwise --json $OUT/depthwise-heuristics.json
