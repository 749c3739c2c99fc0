#!/usr/bin/env python3
"""Execute every notebook in this folder against a locklab results directory.

    python3 notebooks/execute.py RESULTS_DIR

Each notebook reads the directory from the LOCKLAB_RESULTS environment variable.
Exits non-zero if any cell raises. Used by the test suite after a quick run.
"""
import os
import pathlib
import sys

import nbformat
from nbclient import NotebookClient


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = pathlib.Path(sys.argv[1]).resolve()
    if not (results / "manifest.yaml").is_file():
        print(f"{results} is not a results directory (no manifest.yaml)", file=sys.stderr)
        return 2
    os.environ["LOCKLAB_RESULTS"] = str(results)
    here = pathlib.Path(__file__).resolve().parent
    failed = 0
    books = sorted(here.glob("*.ipynb"))
    for path in books:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(here)}})
        try:
            client.execute()
            print(f"{path.name}: ok ({len(nb.cells)} cells)")
        except Exception as e:  # noqa: BLE001 - report any cell failure by name
            failed += 1
            print(f"{path.name}: FAILED: {e}", file=sys.stderr)
    print(f"notebooks: {len(books) - failed} passed, {failed} failed")
    return 1 if failed or not books else 0


if __name__ == "__main__":
    sys.exit(main())
