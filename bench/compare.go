package bench

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// CompareTable is the output of one `blast compare --lab` run: every
// backend's row, as blast prints it.
type CompareTable struct {
	Args  []string `json:"args"`
	Table string   `json:"table"`
	Error string   `json:"error,omitempty"`
}

// RunCompare runs `blast compare --lab` (TCP, or UDP with 64-byte
// datagrams) for secs seconds per backend. compare builds and removes its
// own netns lab.
func RunCompare(ctx context.Context, blast string, udp bool, secs int) (CompareTable, error) {
	args := []string{"compare", "--lab", "-t", strconv.Itoa(secs)}
	if udp {
		args = append(args, "-u", "-l", "64")
	}
	t := CompareTable{Args: append([]string{"blast"}, args...)}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(30*secs+60)*time.Second)
	defer cancel()
	var out, errOut strings.Builder
	c := exec.CommandContext(ctx, blast, args...)
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	t.Table = strings.TrimRight(out.String(), "\n")
	if err != nil {
		err = fmt.Errorf("%s: %w: %s", strings.Join(t.Args, " "), err, firstLines(errOut.String(), 3))
		t.Error = err.Error()
	}
	return t, err
}
