package plan

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// Describe's limits for a large plan (more than fullSteps steps or
// fullTests tests): the first few rounds, a few steps of each and a few
// tests of each step.
const (
	fullSteps  = 50
	fullTests  = 500
	showRounds = 3
	showSteps  = 10
	showTests  = 10
)

// Describe writes the plan as `blast mesh --dry-run` prints it: a header
// line (mode, nodes, rounds, steps, tests and, if perTest > 0, the
// estimated time), then each round's steps, one line a step, each test as
// "name -> name". A plan of more than 50 steps or 500 tests is cut short: the first 3
// rounds, 10 steps of each and 10 tests of each step, and a line saying
// how much more there is. A node beyond names is written #i.
func (p *Plan) Describe(w io.Writer, names []string, perTest time.Duration) error {
	bw := bufio.NewWriter(w)
	name := func(i int) string {
		if i < len(names) {
			return names[i]
		}
		return fmt.Sprintf("#%d", i)
	}
	fmt.Fprintf(bw, "plan: %s, %d nodes, %d rounds, %d steps, %d tests", p.title(), p.N, len(p.Rounds), p.Steps(), p.Tests())
	if perTest > 0 {
		fmt.Fprintf(bw, ", about %s at %s a test", p.Estimate(perTest), perTest)
	}
	bw.WriteString("\n")

	short := p.Steps() > fullSteps || p.Tests() > fullTests
	for r, round := range p.Rounds {
		if short && r == showRounds {
			steps, tests := 0, 0
			for _, rest := range p.Rounds[r:] {
				steps += len(rest.Steps)
				for _, s := range rest.Steps {
					tests += len(s)
				}
			}
			fmt.Fprintf(bw, "... and %d more rounds (%d steps, %d tests)\n", len(p.Rounds)-r, steps, tests)
			break
		}
		fmt.Fprintf(bw, "round %d", r+1)
		if len(round.Steps) > 0 && len(round.Steps[0]) > 0 && round.Steps[0][0].Phase != "" {
			fmt.Fprintf(bw, " (%s)", round.Steps[0][0].Phase)
		}
		bw.WriteString("\n")
		for s, step := range round.Steps {
			if short && s == showSteps {
				fmt.Fprintf(bw, "  ... and %d more steps\n", len(round.Steps)-s)
				break
			}
			var b strings.Builder
			for t, test := range step {
				if t > 0 {
					b.WriteString(", ")
				}
				if short && t == showTests {
					fmt.Fprintf(&b, "... and %d more", len(step)-t)
					break
				}
				b.WriteString(name(test.Src))
				b.WriteString(" -> ")
				b.WriteString(name(test.Dst))
			}
			fmt.Fprintf(bw, "  step %d: %s\n", s+1, b.String())
		}
	}
	return bw.Flush()
}

// title is the mode with its options, e.g. "ring:2 (zones same, isolated)".
func (p *Plan) title() string {
	var opts []string
	if p.Options.Baseline {
		opts = append(opts, "baseline")
	}
	if p.Options.Zones != AnyZone {
		opts = append(opts, "zones "+string(p.Options.Zones))
	}
	if p.Options.Isolate {
		opts = append(opts, "isolated")
	}
	if p.Mode.Kind == Sample {
		opts = append(opts, fmt.Sprintf("seed %d", p.Options.Seed))
	}
	if len(opts) == 0 {
		return p.Mode.String()
	}
	return p.Mode.String() + " (" + strings.Join(opts, ", ") + ")"
}
