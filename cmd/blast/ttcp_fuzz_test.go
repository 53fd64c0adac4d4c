package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// FuzzParseTTCP: ttcp mode's command line (blast -t / -r). args holds
// the arguments separated by NUL bytes, as no argument can hold one.
// Whatever is given, parsing never panics, a refusal is one line (it is
// printed as "blast: ERROR"), and what is accepted is a valid Config.
func FuzzParseTTCP(f *testing.F) {
	for _, args := range [][]string{
		{"-t", "-s", "h"},
		{"-r", "-s"},
		{"-t", "-s", "-u", "-l", "1472", "-n", "1000", "-p", "5002", "--backend", "mmsg:batch=64,gso", "198.18.0.2"},
		{"-t", "-s", "-u", "--backend", "afxdp:queues=2,zc", "--dst-mac", "02:00:00:00:00:01", "h"},
		{"-r", "-s", "-u", "-f", "m", "-b", "262144", "-S", "0x10", "-4"},
		{"-t", "-s", "--rate", "100M", "-A", "4096", "-O", "16", "-T", "-v", "-6", "h"},
		{"-t", "-F", "/etc/hostname", "--backend", "sendfile", "h"},
		{"-t", "-R", "-s"},
		{"-r", "-R", "-B", "h"},
		{"-r", "-p", "echo"},
		{"-r", "-p", "70000"},
		{"-r", "-S", "300"},
		{"-r", "-f", "mm"},
		{"-r", "-l", "x"},
		{"-r", "-x"},
		{"-t", "-s", "--rate", "NaN", "h"},
		{"-t", "-s", "--rate", "1e400G", "h"},
		{"-t", "-s", "-n", "9223372036854775807", "-l", "2", "h"},
		{"-r", "-s", "--rx-backend", "mmsg"},
		{"-t", "-s", "--backend", "readwrite:gso", "h"},
		{"-h"},
		{},
	} {
		f.Add(strings.Join(args, "\x00"))
	}
	f.Fuzz(func(t *testing.T, s string) {
		var args []string
		if s != "" {
			args = strings.Split(s, "\x00")
		}
		cfg, err := parseTTCP(args, "blast")
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("%q: error of more than one line: %q", args, err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%q: parsed, then refused by Validate: %v", args, err)
		}
	})
}
