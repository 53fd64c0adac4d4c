#!/bin/sh
# check-timing.sh runs blast's timing properties (`make check-timing`): the
# tests built with the "timing" tag (files *_timing_test.go, tests named
# TestTiming...), one package at a time, as root for the lab ones.
#
#   scripts/check-timing.sh [PACKAGE...]      (default: every package)
#
# Each property is measured several times and judged on its median, with
# the host's load printed beside the figures (internal/timingcheck). The
# summary lists every TIMING line. Exit status: 0 when every property
# held; 1 when one failed (or a check could not measure); 3 when none
# failed but some could not be judged because the host was too busy
# (run it again on a quiet host: a busy host proves nothing either way).
set -u
cd "$(dirname "$0")/.." || exit 2
GO=${GO:-go}
[ $# -gt 0 ] || set -- ./...
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "check-timing: host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
$GO test -tags timing -run '^TestTiming' -count=1 -p 1 -timeout 30m -v "$@" >"$log" 2>&1
st=$?
# The figures, then any test failure that printed no TIMING line.
echo
grep -o 'TIMING .*' "$log" | sed 's/ (host too busy to judge)$//' | sort -s -k2,2
fails=$(grep -E '^(--- FAIL|FAIL|panic:)' "$log")
busy=$(grep -c 'TIMING BUSY' "$log")
echo
if [ $st -ne 0 ] || grep -q 'TIMING FAIL' "$log"; then
	echo "check-timing: FAILED"
	printf '%s\n' "$fails"
	# Each run's own figures (the tests' logs) are in the whole log.
	kept=${TMPDIR:-/tmp}/check-timing.log
	cp "$log" "$kept" && echo "check-timing: the whole log, each run's figures in it: $kept"
	grep -q 'TIMING ' "$log" || cat "$log"
	exit 1
fi
if [ "$busy" -gt 0 ]; then
	echo "check-timing: $busy properties not judged: host too busy to judge (see 'host:' above); run again on a quiet host"
	exit 3
fi
echo "check-timing: every property held ($(grep -c 'TIMING PASS' "$log") checks)"
