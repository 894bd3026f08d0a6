timeout 420 python -m pytest -q tests/test_conv2d.py tests/test_autograd.py -p no:cacheprovider 2>&1 | tail -6
