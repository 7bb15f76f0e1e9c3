#!/usr/bin/env bash
# Installs what the browser test of the run pages needs (harness/tests/html_report.rs runs
# tools/html_check.py): Debian's Chromium and Playwright for Python, which drives it. Chromium
# comes from the system's packages, not from `playwright install`, so the test uses the browser
# the machine's users have. Idempotent; needs apt-get (as root or through sudo) and pip.
set -euo pipefail

chromium=${CHROMIUM:-/usr/bin/chromium}
if [[ ! -x $chromium ]]; then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "Installing Chromium (apt-get install chromium) ..."
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi

if ! python3 -c "import playwright" 2>/dev/null; then
  echo "Installing Playwright for Python (pip install playwright) ..."
  pip=(python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore)
  # Debian's system Python refuses packages pip installs unless told that this is wanted.
  "${pip[@]}" playwright 2>/dev/null || "${pip[@]}" --break-system-packages playwright
fi
echo "Browser test ready: $chromium, playwright $(python3 -c 'import playwright, importlib.metadata as m; print(m.version("playwright"))')"
