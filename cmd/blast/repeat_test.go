package main

import "testing"

// The output and repetition flags refuse their mistakes in one line, exit
// status 2, the same words in every command.
func TestRepeatFlagsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"client", "127.0.0.1", "--repeat", "2", "--confidence", "95,5"}, "blast client: --repeat and --confidence together: use one (--repeat N runs N times, --confidence runs until the interval is narrow enough)\n"},
		{[]string{"client", "127.0.0.1", "--plot", "run.pdf"}, "blast client: --plot run.pdf: the file name must end in .svg or .png\n"},
		{[]string{"client", "127.0.0.1", "--csv", "-J"}, "blast client: --csv and -J (or --json-stream): pick one output format\n"},
		{[]string{"client", "127.0.0.1", "--repeat", "2", "--json-stream"}, "blast client: --json-stream with --repeat or --confidence: the events of several tests make no one stream; use -J (one document with every run and the summary)\n"},
		{[]string{"client", "127.0.0.1", "--confidence", "120,5"}, "blast client: --confidence 120,5: the level is a percent from 50 to 99.9\n"},
		{[]string{"lat", "127.0.0.1", "--repeat", "0"}, "blast lat: --repeat 0: the count is from 1 to 1000\n"},
		{[]string{"lat", "127.0.0.1", "--csv", "-J"}, "blast lat: --csv and -J: pick one output format\n"},
		{[]string{"lat", "-s", "--plot", "a.png"}, "blast lat: --repeat, --confidence, --plot and --csv are for the client: the server (-s) echoes\n"},
		{[]string{"compare", "--lab", "--max-runs", "5"}, "blast compare: --max-runs 5 without --confidence: it bounds a --confidence run; add --confidence 95,5 or drop --max-runs\n"},
		{[]string{"compare", "--lab", "--csv", "-J"}, "blast compare: --csv and -J: pick one output format\n"},
		{[]string{"doctor", "127.0.0.1", "--plot", "x.jpg"}, "blast doctor: --plot x.jpg: the file name must end in .svg or .png\n"},
		{[]string{"doctor", "127.0.0.1", "--csv", "-J"}, "blast doctor: --csv and -J: pick one output format\n"},
	} {
		code, out, errOut := runArgs(t, "blast", tc.args...)
		if code != exitUsage || out != "" || errOut != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, %q", tc.args, code, out, errOut, tc.want)
		}
	}
}
