#!/usr/bin/env python3
"""Execute every notebook in this folder against a locklab results directory and
keep the executed notebooks, outputs and figures included.

    python3 notebooks/execute.py [RESULTS_DIR] [--out DIR]

RESULTS_DIR defaults to $LOCKLAB_RESULTS. The executed notebooks are written to
DIR (default: RESULTS_DIR/notebooks/), one file per notebook under its own name.
Exits non-zero if any cell raises. The test suite runs it after a quick run.
"""
import argparse
import os
import pathlib
import sys

import nbformat
from nbclient import NotebookClient


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="?", default=os.environ.get("LOCKLAB_RESULTS"),
                        help="results directory (default: $LOCKLAB_RESULTS)")
    parser.add_argument("--out", type=pathlib.Path,
                        help="where the executed notebooks go (default: RESULTS/notebooks)")
    args = parser.parse_args()
    if not args.results:
        parser.error("name a results directory (results/<experiment>/<run id>, or "
                     "results/<experiment>/latest) or set LOCKLAB_RESULTS")
    results = pathlib.Path(args.results).resolve()
    if not (results / "manifest.yaml").is_file():
        print(f"{results} is not a results directory (no manifest.yaml)", file=sys.stderr)
        return 2
    out = (args.out or results / "notebooks").resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ["LOCKLAB_RESULTS"] = str(results)
    here = pathlib.Path(__file__).resolve().parent
    failed = 0
    books = sorted(here.glob("*.ipynb"))
    for path in books:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(here)}})
        try:
            client.execute()
            status = f"ok ({len(nb.cells)} cells)"
        except Exception as e:  # noqa: BLE001 - report any cell failure by name
            failed += 1
            status = "FAILED"
            print(f"{path.name}: FAILED: {e}", file=sys.stderr)
        # Kept either way: a failed notebook shows where it stopped.
        nbformat.write(nb, out / path.name)
        print(f"{path.name}: {status} → {out / path.name}")
    print(f"notebooks: {len(books) - failed} passed, {failed} failed")
    return 1 if failed or not books else 0


if __name__ == "__main__":
    sys.exit(main())
