"""Print a tuning cache's entries (the fastest config of each algorithm raced), optionally only
the problems whose key contains TEXT:  python benchmarks/show_cache.py CACHE.json [TEXT]"""

import json
import sys

entries = json.load(open(sys.argv[1]))["entries"]
for key, entry in entries.items():
    if len(sys.argv) > 2 and sys.argv[2] not in key:
        continue
    print(key.split("|")[-1], "->", entry["algorithm"], f"{entry['time_ms'] * 1000:.1f} us")
    for name, best in sorted(entry.get("best_per_algorithm", {}).items(), key=lambda item: item[1]["time_ms"]):
        config = {k: v for k, v in best["config"].items() if v}
        print(f"    {name:18s} {best['time_ms'] * 1000:8.1f} us  {config}")
