#!/usr/bin/env bash
# Install OpenLink Virtuoso 7 (Debian's virtuoso-opensource-7-bin) when virtuoso-t is missing, and
# Chromium (Debian's chromium) when no chromium binary is found.
# Used by `make test` before pytest; tests marked `virtuoso` skip with a clear reason when it is
# still missing, and so does the headless-Chromium test of the `kbqa compare` report
# (tests/tracking/test_report.py). Never fails the build: without root (and without passwordless
# sudo) it warns; a failed install warns and the tests skip.
set -uo pipefail

have_virtuoso() {
    command -v virtuoso-t >/dev/null 2>&1 || [ -x /usr/bin/virtuoso-t ]
}

have_chromium() {
    command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
        command -v google-chrome >/dev/null 2>&1
}

missing=()
have_virtuoso || missing+=("virtuoso-opensource-7-bin")
have_chromium || missing+=("chromium")
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
    SUDO="sudo -n"
else
    echo "warning: ${missing[*]} not installed and neither root nor passwordless sudo is available;" \
        "tests marked 'virtuoso' (and the headless-Chromium report test) will be skipped" \
        "(install: apt-get install ${missing[*]})" >&2
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "warning: no apt-get here; install ${missing[*]} by hand (OpenLink Virtuoso 7: virtuoso-t, isql-vt;" \
        "Chromium); the tests that need them will be skipped" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
if ! $SUDO apt-get update -qq >"$log" 2>&1; then
    echo "warning: apt-get update failed; tests that need ${missing[*]} will be skipped:" >&2
    tail -n 5 "$log" >&2
    rm -f "$log"
    exit 0
fi
for package in "${missing[@]}"; do
    if $SUDO apt-get install -y -qq --no-install-recommends "$package" >>"$log" 2>&1; then
        case "$package" in
        virtuoso-*) echo "installed $(virtuoso-t -? 2>&1 | sed -n 2p)" ;;
        *) echo "installed $package" ;;
        esac
    else
        echo "warning: installing $package failed; the tests that need it will be skipped:" >&2
        tail -n 5 "$log" >&2
    fi
done
rm -f "$log"
exit 0
