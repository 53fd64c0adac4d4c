#!/usr/bin/env bash
# iperf3's own release test list (test_commands.sh in esnet/iperf), run
# between blast and iperf3 both ways on loopback:
#   - iperf3's client against `blast server`, and
#   - `blast client` against `iperf3 -s`,
# with each iperf3 given (Debian's 3.12 by default). A line passes when
# both ends exit 0 within the time limit. Adapted from the list: -A 1/1 for
# -A 2/2 (CPU 2 does not exist on a 2-CPU host), and the SCTP line is left
# out (blast speaks TCP and UDP). A line marked ! must be refused by the
# client (iperf3 takes only one of -t, -n and -k): it passes when the
# client exits non-zero at once, with no server. Loopback only: 127.0.0.1
# and ::1.
#
#   scripts/iperf3-release-tests.sh [BLAST] [IPERF3 ...]
#
# Prints one line per command and a count per direction; exits 1 when a
# command failed.
set -uo pipefail

blast=${1:-bin/blast}
shift || true
iperfs=("$@")
[ ${#iperfs[@]} -gt 0 ] || iperfs=(/usr/bin/iperf3)
limit=60 # seconds a command may take (the longest runs 5 s)

cmds=(
	"-V -t 5 -T test1"
	"-u -V -t 5"
	"-i .3 -O 2 -t 5"
	"-i 1 -J -t 5"
	"-4 -t 5"
	"-4 -u -t 5"
	"-6 -t 5"
	"-6 -u -t 5"
	"-V -t 5 --fq-rate 5m"
	"-u -V -t 5 --fq-rate 5m"
	"-P 3 -t 5"
	"-u -P 3 -t 5"
	"-P 2 -t 5 -R"
	"-u -P 2 -t 5 -R"
	"-P 2 -t 5 --bidir"
	"-u -P 2 -t 5 --bidir"
	"-Z -t 5"
	"-Z -t 5 -R"
	"-t 5 -w 8M"
	"-n 5M"
	"-n 5M -u -b1G"
	"-n 5M -R"
	"-n 5M -u -b1G -R"
	"!-n 5M -t 5"
	"-k 1K"
	"-k 1K -u -b1G"
	"-k 1K -R"
	"-k 1K -u -b1G -R"
	"-A 1/1"
	"-A 1/1 -u -b1G"
	"-u -b1G/100"
	"-C reno -V"
	"-M 1000 -V"
)

port=$((20000 + RANDOM % 20000))
fail=0
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
trap 'exit 130' INT TERM # through the EXIT trap

# host is the address a command's client aims at: ::1 for -6.
host() { case " $1 " in *" -6 "*) echo ::1 ;; *) echo 127.0.0.1 ;; esac; }

# run_one NAME ARGS SERVER CLIENT: starts SERVER (a command that serves
# one test) on the port, runs CLIENT HOST -p PORT ARGS, and reports.
run_one() {
	local name=$1 args=$2 srv=$3 cli=$4
	local out
	out=$(mktemp)
	if [ "${args:0:1}" = "!" ]; then
		args=${args:1}
		# shellcheck disable=SC2086
		if timeout 10 $cli "$(host "$args")" -p "$port" $args >"$out" 2>&1; then
			printf 'FAIL  %-12s %s  (the client ran it: want a refusal)\n' "$name" "$args"
			fail=1
		else
			printf 'pass  %-12s %s  (refused: %s)\n' "$name" "$args" "$(grep -i -m1 -E 'error|only one' "$out")"
		fi
		rm -f "$out"
		return
	fi
	$srv -p "$port" >"$out.srv" 2>&1 &
	local sp=$!
	pids+=("$sp")
	for _ in $(seq 100); do ss -ltn "sport = :$port" | grep -q LISTEN && break; sleep 0.1; done
	# shellcheck disable=SC2086
	timeout "$limit" $cli "$(host "$args")" -p "$port" $args >"$out" 2>&1
	local crc=$?
	local src=0
	for _ in $(seq $((limit * 10))); do kill -0 "$sp" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$sp" 2>/dev/null; then kill "$sp"; src=124; fi
	wait "$sp" 2>/dev/null || [ $src -ne 0 ] || src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		printf 'pass  %-12s %s\n' "$name" "$args"
	else
		printf 'FAIL  %-12s %s  (client exit %d, server exit %d)\n' "$name" "$args" $crc $src
		sed 's/^/      client: /' "$out" | tail -5
		sed 's/^/      server: /' "$out.srv" | tail -5
		fail=1
	fi
	rm -f "$out" "$out.srv"
	port=$((port + 1))
}

for ip in "${iperfs[@]}"; do
	v=$("$ip" --version | head -1)
	for way in "iperf3 client -> blast server" "blast client -> iperf3 server"; do
		echo "== $way ($v)"
		n=0 ok=0
		for a in "${cmds[@]}"; do
			before=$fail
			fail=0
			if [ "${way%% *}" = iperf3 ]; then
				run_one "${ip##*/}" "$a" "$blast server -1" "$ip -c"
			else
				run_one "blast" "$a" "$ip -s -1" "$blast client"
			fi
			n=$((n + 1))
			[ $fail -eq 0 ] && ok=$((ok + 1))
			fail=$((before | fail))
		done
		echo "== $ok of $n passed: $way ($v)"
	done
done
exit $fail
