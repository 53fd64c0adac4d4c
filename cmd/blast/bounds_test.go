package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Hostile numbers on every command's command line (issue 13, item 5):
// each is refused before anything is allocated or connected, with exit
// status 2 and one line naming the flag, its value and the range.

// runCapped runs blast ARGS with a context that ends after 10 s, so that
// a number wrongly accepted ends the test instead of serving forever.
func runCapped(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb strings.Builder
	e := &env{ctx: ctx, argv0: "blast", stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	code := dispatch(e, args)
	return code, out.String(), errb.String()
}

type boundCase struct {
	args []string
	want string // the whole of standard error
}

func runBoundCases(t *testing.T, prefix []string, cases []boundCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errs := runCapped(t, append(append([]string(nil), prefix...), tc.args...)...)
			if code != exitUsage || out != "" || errs != tc.want {
				t.Errorf("exit %d, stdout %q, stderr:\n got %q\nwant %q (exit 2)", code, out, errs, tc.want)
			}
		})
	}
}

func TestClientNumberBounds(t *testing.T) {
	const big = "99999999999999999999"
	runBoundCases(t, []string{"client", "127.0.0.1"}, []boundCase{
		{[]string{"-P", "0"}, "blast client: -P 0: invalid number of parallel streams (min = 1, max = 128)\n"},
		{[]string{"-P", "-1"}, "blast client: -P -1: invalid number of parallel streams (min = 1, max = 128)\n"},
		{[]string{"-P", "129"}, "blast client: -P 129: invalid number of parallel streams (min = 1, max = 128)\n"},
		{[]string{"-n", big}, "blast client: -n " + big + ": too large (at most 9223372036854775807)\n"},
		{[]string{"-n", "1e300T"}, "blast client: -n 1e300T: too large (at most 9223372036854775807)\n"},
		{[]string{"-k", big}, "blast client: -k " + big + ": too large (at most 9223372036854775807)\n"},
		{[]string{"-w", big}, "blast client: -w " + big + ": too large (at most 9223372036854775807)\n"},
		{[]string{"-l", big}, "blast client: -l " + big + ": too large (at most 9223372036854775807)\n"},
		{[]string{"-l", "99999999999"}, "blast client: -l 99999999999: must be 1 to 1M for TCP\n"},
		{[]string{"-n", "NaN"}, "blast client: -n \"NaN\": want a byte count such as 100M or 1G\n"},
		{[]string{"-n", "-Inf"}, "blast client: -n \"-Inf\": want a byte count such as 100M or 1G\n"},
		{[]string{"-w", "Inf"}, "blast client: -w \"Inf\": want a size such as 256K or 4M\n"},
		{[]string{"--connect-timeout", "-5"}, "blast client: --connect-timeout -5: must be 0 (the system's) to 86400000 ms\n"},
		{[]string{"--connect-timeout", "9223372036854"}, "blast client: --connect-timeout 9223372036854: must be 0 (the system's) to 86400000 ms\n"},
		{[]string{"-i", "NaN"}, "blast client: -i NaN: invalid report interval (min = 0.1, max = 60 seconds; 0: none)\n"},
		{[]string{"-i", "Inf"}, "blast client: -i +Inf: invalid report interval (min = 0.1, max = 60 seconds; 0: none)\n"},
		{[]string{"-i", "-1"}, "blast client: -i -1: invalid report interval (min = 0.1, max = 60 seconds; 0: none)\n"},
		{[]string{"-i", "0.05"}, "blast client: -i 0.05: invalid report interval (min = 0.1, max = 60 seconds; 0: none)\n"},
		{[]string{"-t", "-1"}, "blast client: -t -1: test duration valid values are 0 to 86400 seconds\n"},
		{[]string{"-t", "9223372037"}, "blast client: -t 9223372037: test duration valid values are 0 to 86400 seconds\n"},
		{[]string{"-t", big}, "blast client: -t " + big + ": too large for a 64-bit number (at most 9223372036854775807): run 'blast help client' for the flags\n"},
		{[]string{"-O", "-1"}, "blast client: -O -1: bogus value for --omit (min = 0, max = 600 seconds)\n"},
		{[]string{"-O", "9223372037"}, "blast client: -O 9223372037: bogus value for --omit (min = 0, max = 600 seconds)\n"},
		{[]string{"-R", "--rcv-timeout", "9223372036855"}, "blast client: --rcv-timeout 9223372036855: receive timeout value is incorrect or not in range (100 to 86400000 ms)\n"},
		{[]string{"--snd-timeout", "9223372036855"}, "blast client: --snd-timeout 9223372036855: send timeout value is incorrect or not in range (0 to 86400000 ms)\n"},
		{[]string{"-M", "-5"}, "blast client: -M -5: must be 0 (the system's) to 32767\n"},
		{[]string{"-b", "NaN"}, "blast client: -b \"NaN\": want a rate such as 100M or 1G, at most 10T (0: unlimited)\n"},
		{[]string{"--fq-rate", "-Inf"}, "blast client: --fq-rate \"-Inf\": want a rate such as 100M or 1G\n"},
	})
}

func TestServerNumberBounds(t *testing.T) {
	const big = "99999999999999999999"
	runBoundCases(t, []string{"server", "-B", "127.0.0.1", "-p", "0"}, []boundCase{
		{[]string{"-i", "NaN"}, "blast server: -i NaN: must be 0 (off) or 0.1 to 60 seconds\n"},
		{[]string{"-i", "+Inf"}, "blast server: -i +Inf: must be 0 (off) or 0.1 to 60 seconds\n"},
		{[]string{"-i", "-Inf"}, "blast server: -i -Inf: must be 0 (off) or 0.1 to 60 seconds\n"},
		{[]string{"-i", "-1"}, "blast server: -i -1: must be 0 (off) or 0.1 to 60 seconds\n"},
		{[]string{"--max-clients", "0"}, "blast server: --max-clients 0: must be at least 1\n"},
		{[]string{"--max-clients", "-3"}, "blast server: --max-clients -3: must be at least 1\n"},
		{[]string{"--max-per-host", "0"}, "blast server: --max-per-host 0: must be at least 1\n"},
		{[]string{"--max-streams", "0"}, "blast server: --max-streams 0: must be at least 1\n"},
		{[]string{"--max-bytes", big}, "blast server: --max-bytes " + big + ": too large (at most 9223372036854775807)\n"},
		{[]string{"--max-clients", big}, "blast server: --max-clients " + big + ": too large for a 64-bit number (at most 9223372036854775807): run 'blast help server' for the flags\n"},
		{[]string{"--time-skew-threshold", "9223372037"}, "blast server: --time-skew-threshold 9223372037: skew threshold must be 1 to 86400 seconds\n"},
	})
}

func TestTTCPNumberBounds(t *testing.T) {
	const big = "99999999999999999999"
	runBoundCases(t, nil, []boundCase{
		{[]string{"-t", "-l", "9999999999999999", "h"}, "blast: -l 9999999999999999: the buffer length must be 1 to 67108864 (64 MiB) for TCP: give a smaller -l\n"},
		{[]string{"-t", "-s", "-l", "99999999999", "h"}, "blast: -l 99999999999: the buffer length must be 1 to 67108864 (64 MiB) for TCP: give a smaller -l\n"},
		{[]string{"-r", "-l", "9999999999999999"}, "blast: -l 9999999999999999: the buffer length must be 1 to 67108864 (64 MiB) for TCP: give a smaller -l\n"},
		{[]string{"-r", "-s", "-l", "99999999999"}, "blast: -l 99999999999: the buffer length must be 1 to 67108864 (64 MiB) for TCP: give a smaller -l\n"},
		{[]string{"-r", "-s", "-u", "-l", "99999999999"}, "blast: -l 99999999999: a UDP datagram carries at most 65507 bytes\n"},
		{[]string{"-r", "-l", big}, "blast: -l " + big + ": too large for a 64-bit number (at most 9223372036854775807): run 'blast -h' for the options\n"},
		{[]string{"-r", "-l", "-" + big}, "blast: -l -" + big + ": too small for a 64-bit number (at least -9223372036854775808): run 'blast -h' for the options\n"},
		{[]string{"-t", "-s", "-l", "67108864", "--backend", "iouring", "h"}, "blast: -l 67108864 with --backend iouring: its buffers would take 512 MiB (-l times the buffers the backend keeps in flight), more than 256 MiB: give a smaller -l or batch=\n"},
		{[]string{"-r", "-s", "-l", "16777216", "--backend", "iouring:batch=32,multishot"}, "blast: -l 16777216 with --backend iouring:batch=32,multishot: its buffers would take 512 MiB (-l times the buffers the backend keeps in flight), more than 256 MiB: give a smaller -l or batch=\n"},
		{[]string{"-t", "-s", "-n", "9223372036854775807", "h"}, "blast: -n 9223372036854775807: 9223372036854775807 buffers of -l 8192 bytes are more than 8 EiB: -n must be 1 to 1125899906842623\n"},
		{[]string{"-r", "-b", "-1"}, "blast: -b -1: the socket buffer size must be 0 (the system's) to 2147483647 bytes\n"},
		{[]string{"-r", "-b", "99999999999"}, "blast: -b 99999999999: the socket buffer size must be 0 (the system's) to 2147483647 bytes\n"},
		{[]string{"-r", "-A", "99999999999"}, "blast: -A 99999999999: the buffer alignment must be 0 to 67108864 bytes\n"},
		{[]string{"-r", "-O", "99999999999"}, "blast: -O 99999999999: the buffer offset must be 0 to 67108864 bytes\n"},
		{[]string{"-r", "-O", "-1"}, "blast: -O -1: the buffer offset must be 0 to 67108864 bytes\n"},
		{[]string{"-t", "-s", "--rate", "NaN", "h"}, "blast: --rate NaN: must be 0 (unlimited) to 10T bits/s\n"},
		{[]string{"-t", "-s", "--rate", "Inf", "h"}, "blast: --rate +Inf: must be 0 (unlimited) to 10T bits/s\n"},
		{[]string{"-t", "-s", "--rate", "1e300G", "h"}, "blast: --rate +Inf: must be 0 (unlimited) to 10T bits/s\n"},
	})
}

func TestLatNumberBounds(t *testing.T) {
	runBoundCases(t, []string{"lat", "h"}, []boundCase{
		{[]string{"-t", "NaN"}, "blast lat: -t NaN: give a number of seconds from 0 to 1000000\n"},
		{[]string{"-t", "Inf"}, "blast lat: -t +Inf: give a number of seconds from 0 to 1000000\n"},
		{[]string{"-t", "0"}, "blast lat: -t 0s: give a positive number of seconds, at most 1000000\n"},
		{[]string{"-i", "-Inf"}, "blast lat: -i -Inf: give a number of seconds from 0 to 1000000\n"},
		{[]string{"--timeout", "NaN"}, "blast lat: --timeout NaN: give a number of seconds from 0 to 1000000\n"},
		{[]string{"--timeout", "0"}, "blast lat: --timeout 0s: give a positive number of seconds, at most 1000000\n"},
		{[]string{"--warmup", "-1"}, "blast lat: --warmup -1: give 0 or more round trips\n"},
		{[]string{"-l", "99999999999"}, "blast lat: -l 99999999999: a request is at most 67108864 bytes\n"},
		{[]string{"-n", "-5"}, "blast lat: -n -5: give a positive number of round trips\n"},
		{[]string{"-n", "99999999999999999999"}, "blast lat: -n 99999999999999999999: too large for a 64-bit number (at most 9223372036854775807): run 'blast lat -h' for the flags\n"},
	})
}

func TestCompareNumberBounds(t *testing.T) {
	runBoundCases(t, []string{"compare"}, []boundCase{
		{[]string{"--lab", "-t", "NaN"}, "blast compare: -t NaN: must be more than 0 and at most 86400 seconds\n"},
		{[]string{"--lab", "-t", "Inf"}, "blast compare: -t +Inf: must be more than 0 and at most 86400 seconds\n"},
		{[]string{"--lab", "-t", "0"}, "blast compare: -t 0: must be more than 0 and at most 86400 seconds\n"},
		{[]string{"--lab", "-t", "-1"}, "blast compare: -t -1: must be more than 0 and at most 86400 seconds\n"},
		{[]string{"127.0.0.1", "-t", "1e9"}, "blast compare: -t 1e+09: must be more than 0 and at most 86400 seconds\n"},
		{[]string{"--lab", "-l", "0"}, "blast compare: -l 0: must be between 1 and 16777216\n"},
		{[]string{"--lab", "-l", "99999999999"}, "blast compare: -l 99999999999: must be between 1 and 16777216\n"},
		{[]string{"--lab", "-u", "-l", "99999999999"}, "blast compare: -l 99999999999: must be between 1 and 65507\n"},
		{[]string{"127.0.0.1", "-l", "-1"}, "blast compare: -l -1: must be between 1 and 1048576\n"},
		{[]string{"127.0.0.1", "-p", "0"}, "blast compare: -p 0: must be 1 to 65535\n"},
		{[]string{"--lab", "-l", "99999999999999999999"}, "blast compare: -l 99999999999999999999: too large for a 64-bit number (at most 9223372036854775807): run 'blast help compare' for the options\n"},
	})
}

func TestAgentNumberBounds(t *testing.T) {
	t.Setenv("BLAST_TOKEN", "0123456789abcdef0123456789abcdef")
	runBoundCases(t, []string{"agent", "-B", "127.0.0.1", "--name", "a"}, []boundCase{
		{[]string{"--max-tests", "0"}, "blast agent: --max-tests 0: must be 1 to 64\n"},
		{[]string{"--max-test-seconds", "-1"}, "blast agent: --max-test-seconds -1: must be 0 (no budget) to 230400\n"},
		{[]string{"--max-test-seconds", "230401"}, "blast agent: --max-test-seconds 230401: must be 0 (no budget) to 230400\n"},
	})
}
