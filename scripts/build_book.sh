#!/usr/bin/env bash
# Quick start, step 1: install everything and build the website into _build/html.
# Every notebook is executed (cached in _build/.jupyter_cache, so unchanged chapters are
# not re-run); warnings, broken references and failing cells stop the build.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet -r requirements.txt
python scripts/vendor_assets.py
jupyter-book build . -W -n --keep-going
