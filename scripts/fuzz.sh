#!/bin/sh
# fuzz.sh runs every native Go fuzz target of the module for a while each.
#
#   scripts/fuzz.sh [TIME] [PACKAGE...]
#   FUZZ='^FuzzParams$' scripts/fuzz.sh 30s ./control
#
# TIME is go test's -fuzztime (1m by default; 30s, 5000x, ...). Without
# packages every package is searched; FUZZ picks targets by name (a
# regular expression; every target by default). The targets are what
# `go test -list '^Fuzz'` lists; each runs alone (go test -fuzz takes one
# target of one package), and a failing one does not stop the others.
# An input that fails is written under the package's testdata/fuzz/NAME/:
# commit it once the bug is fixed, so the plain go test keeps checking it.
# The exit status is 1 when a target failed.
set -u
cd "$(dirname "$0")/.." || exit 2
GO=${GO:-go}
T=${1:-1m}
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then
	pkgs="$*"
else
	# Only packages whose tests declare a fuzz target: listing means
	# building and running a test binary, which costs seconds a package.
	pkgs=$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -r -n1 dirname | sort -u)
fi
[ -n "$pkgs" ] || { echo "fuzz.sh: no fuzz targets"; exit 0; }

# go test -list prints the names of a package, then "ok  <package> ...".
list=$($GO test -list "${FUZZ:-^Fuzz}" $pkgs) || { echo "$list"; echo "fuzz.sh: go test -list failed"; exit 2; }
targets=$(printf '%s\n' "$list" | awk '
	/^Fuzz/ { names = names " " $1; next }
	/^ok[ \t]/ { n = split(names, a, " "); for (i = 1; i <= n; i++) print $2, a[i]; names = "" }')

# A failure found while the time runs out is lost if its minimization
# outlasts the time (go test then passes): short runs minimize briefly.
case $T in
[0-9]s | [12][0-9]s) M=${FUZZMINIMIZETIME:-300x} ;;
*) M=${FUZZMINIMIZETIME:-10s} ;;
esac

# deadline_race tells Go's own flake from a failure: up to Go 1.26 the
# fuzzing coordinator can report "context deadline exceeded" as the
# target's failure when -fuzztime runs out under load (go.dev/issue/75804,
# fixed in Go 1.27). Such a run wrote no failing input and failed nothing
# else; any other failure counts.
deadline_race() {
	printf '%s\n' "$1" | grep -q 'Failing input written' && return 1
	printf '%s\n' "$1" | grep -q -E '^panic:|^[[:space:]]+[a-z_]+_test\.go:[0-9]+:' && return 1
	printf '%s\n' "$1" | grep -q '^    context deadline exceeded$'
}

failed=""
count=0
for t in $(printf '%s\n' "$targets" | tr ' ' ':'); do
	pkg=${t%%:*}
	name=${t#*:}
	count=$((count + 1))
	log=$($GO test -run '^$' -fuzz "^$name\$" -fuzztime "$T" -fuzzminimizetime "$M" "$pkg" 2>&1)
	st=$?
	execs=$(printf '%s\n' "$log" | sed -n 's/.*execs: \([0-9]*\) .*/\1/p' | tail -n 1)
	if [ $st -ne 0 ] && deadline_race "$log"; then
		printf 'ok    %-45s %-28s %s execs (go test then failed on its own -fuzztime deadline, go.dev/issue/75804: no failing input)\n' "$pkg" "$name" "${execs:-?}"
	elif [ $st -eq 0 ]; then
		printf 'ok    %-45s %-28s %s execs\n' "$pkg" "$name" "${execs:-?}"
	else
		printf 'FAIL  %-45s %s\n' "$pkg" "$name"
		printf '%s\n' "$log" | sed 's/^/      /'
		failed="$failed $pkg.$name"
	fi
done
if [ -n "$failed" ]; then
	echo "fuzz.sh: failed:$failed"
	exit 1
fi
echo "fuzz.sh: $count targets, $T each"
