"""tileconv's benchmark: suites of named problems, timing beside peers, reports.

- :mod:`.suites`: the named problems (seed, resnet50, depthwise, grouped, vae).
- :mod:`.timing`: CUDA-event medians (do_bench's protocol, a 1 GiB L2 flush), the GEMM and copy ceilings, the roofline, the machine.
- :mod:`.peers`: cuDNN (PyTorch eager) and torch.compile, and the reference output.
- :mod:`.runner`: one problem -> rows: inputs, correctness check, round-robin timing.
- :mod:`.report`: geomeans, JSON (the schema other tools read), CSV, the rich table.
- :mod:`.plot`: the PNG charts.
- :mod:`.session`: a GPU run of ``bench`` or ``sweep``; :mod:`.demo`: ``bench`` without a GPU.
- :mod:`.cli_bench`, :mod:`.cli_sweep`, :mod:`.cli_info`: the commands.
"""
