"""Issue 6's depthwise backward figure from one run's two bench records: per row, cuDNN's
dgrad + wgrad time over tileconv's dgrad + wgrad time, and their geometric mean.

    python benchmarks/backward_sum.py DGRAD.json WGRAD.json [--json OUT.json]

Both records must come from the same device call (bench --pass dgrad and --pass wgrad,
each timing tileconv beside cuDNN's convolution_backward in its own process).
"""

import json
import math
import sys


def combine(dgrad: dict, wgrad: dict) -> dict:
    """Rows matched by name; every row of both records must be ok."""
    by_name = {row["name"]: row for row in wgrad["rows"]}
    rows = []
    for d in dgrad["rows"]:
        w = by_name[d["name"]]
        if not (d["ok"] and w["ok"]):
            raise SystemExit(f"{d['name']}: a failed row (dgrad ok={d['ok']}, wgrad ok={w['ok']})")
        ours, theirs = d["tileconv_us"] + w["tileconv_us"], d["cudnn_us"] + w["cudnn_us"]
        rows.append({"name": d["name"], "tileconv_us": ours, "cudnn_us": theirs, "speedup_vs_cudnn": theirs / ours,
                     "dgrad_speedup": d["speedup_vs_cudnn"], "wgrad_speedup": w["speedup_vs_cudnn"]})
    geomean = math.exp(sum(math.log(r["speedup_vs_cudnn"]) for r in rows) / len(rows))
    return {"device": dgrad["device"], "date": dgrad["date"], "suite": dgrad["suite"], "pass": "dgrad + wgrad",
            "geomean_speedup_vs_cudnn": geomean, "dgrad_geomean": dgrad["geomean_speedup_vs_cudnn"],
            "wgrad_geomean": wgrad["geomean_speedup_vs_cudnn"], "rows": rows}


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--json")]
    out = next((sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--json"), None)
    args = [a for a in args if a != out]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[0]) as f, open(args[1]) as g:
        result = combine(json.load(f), json.load(g))
    for row in result["rows"]:
        print(f"{row['name']:30s} {row['tileconv_us']:9.1f} us  cuDNN {row['cudnn_us']:9.1f} us  "
              f"{row['speedup_vs_cudnn']:6.2f}x  (dgrad {row['dgrad_speedup']:.2f}x, wgrad {row['wgrad_speedup']:.2f}x)")
    print(f"{result['device']}: dgrad + wgrad geomean {result['geomean_speedup_vs_cudnn']:.2f}x "
          f"(dgrad {result['dgrad_geomean']:.2f}x, wgrad {result['wgrad_geomean']:.2f}x)")
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
