#!/usr/bin/env bash
# Install OpenLink Virtuoso 7 (Debian's virtuoso-opensource-7-bin) when virtuoso-t is missing.
# Used by `make test` before pytest; tests marked `virtuoso` skip with a clear reason when it is
# still missing. Never fails the build: without root (and without passwordless sudo) it warns.
set -uo pipefail

have_virtuoso() {
    command -v virtuoso-t >/dev/null 2>&1 || [ -x /usr/bin/virtuoso-t ]
}

if have_virtuoso; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
    SUDO="sudo -n"
else
    echo "warning: virtuoso-t is not installed and neither root nor passwordless sudo is available;" \
        "tests marked 'virtuoso' will be skipped (install: apt-get install virtuoso-opensource-7-bin)" >&2
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "warning: no apt-get here; install OpenLink Virtuoso 7 (virtuoso-t, isql-vt) by hand;" \
        "tests marked 'virtuoso' will be skipped" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
if $SUDO apt-get update -qq >"$log" 2>&1 &&
    $SUDO apt-get install -y -qq --no-install-recommends virtuoso-opensource-7-bin >>"$log" 2>&1; then
    rm -f "$log"
    echo "installed $(virtuoso-t -? 2>&1 | sed -n 2p)"
    exit 0
fi
echo "warning: installing virtuoso-opensource-7-bin failed; tests marked 'virtuoso' will be skipped:" >&2
tail -n 5 "$log" >&2
rm -f "$log"
exit 0
