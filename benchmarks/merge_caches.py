"""Merge tuning-cache files of benchmarks/results/ into one (later files win on a shared key):
a device call that benches several parts tuned in different sessions starts from it.

    python benchmarks/merge_caches.py OUT.json A.json B.json ...
"""

import json
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    merged = None
    for path in sys.argv[2:]:
        with open(path) as f:
            data = json.load(f)
        if merged is None:
            merged = data
        else:
            if (data.get("format"), data.get("version")) != (merged.get("format"), merged.get("version")):
                raise SystemExit(f"{path}: another cache format ({data.get('format')} {data.get('version')})")
            merged["entries"].update(data["entries"])
    with open(sys.argv[1], "w") as f:
        json.dump(merged, f, indent=1)
    print(f"{len(merged['entries'])} entries -> {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
