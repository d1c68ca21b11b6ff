#!/usr/bin/env bash
# The browser tests/test_report_html.py drives (headless Chromium, through playwright): installed once from the
# system's packages where it is missing. Prints the browser's path; prints why not, and exits 0, where it cannot
# install it (not root, no apt-get, no network), and the browser test then says so when it skips.
set -uo pipefail
found=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$found" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "harvest: installing chromium from the system's packages (first run only, about a minute)" >&2
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/tmp/harvest-chromium-install.log 2>&1; then
      apt-get update -q >>/tmp/harvest-chromium-install.log 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >>/tmp/harvest-chromium-install.log 2>&1
    fi
    found=$(command -v chromium || command -v chromium-browser || true)
  fi
  if [ -z "$found" ]; then
    echo "harvest: no chromium (see /tmp/harvest-chromium-install.log, or install the chromium package): the browser test of report.html will be skipped" >&2
    exit 0
  fi
fi
echo "$found"
