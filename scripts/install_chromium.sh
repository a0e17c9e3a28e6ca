#!/usr/bin/env bash
# Install Debian's headless-capable Chromium for the browser test of report.html
# (tests/report/test_report_html.py renders the page and takes a screenshot).
# Idempotent: does nothing when /usr/bin/chromium and the font are there; installs with apt-get only when run
# as root (CI is); otherwise says how, and exits 0 so a developer without root still gets the
# rest of the suite (the browser test then skips, unless SIMHASH_REQUIRE_BROWSER=1).
set -euo pipefail
chromium=/usr/bin/chromium
# A CJK font too: the sample's Chinese pages would otherwise render as empty boxes.
packages="chromium fonts-wqy-microhei"
if [ -x "$chromium" ] && dpkg -s fonts-wqy-microhei >/dev/null 2>&1; then
  echo "install_chromium: $("$chromium" --version 2>/dev/null || echo chromium) already at $chromium; nothing to do"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install_chromium: $chromium or the CJK font is missing and this is not root; install it with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y $packages" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium: no apt-get (not Debian?); install Chromium at $chromium by hand" >&2
  exit 0
fi
echo "install_chromium: installing Debian's $packages with apt-get (a few minutes the first time)"
export DEBIAN_FRONTEND=noninteractive
# apt's download chatter goes to a log, shown only if the install fails.
log=$(mktemp)
# shellcheck disable=SC2086  # $packages is a list, split on purpose
if ! { apt-get update && apt-get install -y --no-install-recommends $packages; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "install_chromium: apt-get failed (log above)" >&2
  exit 1
fi
rm -f "$log"
echo "install_chromium: installed $("$chromium" --version 2>/dev/null || echo chromium) at $chromium"
