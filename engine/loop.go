package engine

import "context"

// LoopFunc is a data path that is not one direction of bytes: blast lat's
// requests and responses, or its echo. It makes its blocking calls on the
// flow's socket through the flow (Flow.Read, Flow.Recv, Flow.Send) and
// counts what it moved in f.Stats.
type LoopFunc func(ctx context.Context, f *Flow) error

// Loop runs fn on f as Run runs a Free backend's flow: free (see Free)
// when Spec.Free asks and Spec.Affinity does not pin it, else on a locked
// thread of its own (pinned with Spec.Affinity); cancelled the same
// way (the socket shut down, Flow.Wait and Flow.Sleep woken), with the
// same CPU, run-queue and switch accounting, and the socket's timeouts
// honoured and put back. Spec needs no more than the Protocol (and Free).
func Loop(ctx context.Context, f *Flow, fn LoopFunc) error {
	return Run(ctx, loop{fn}, f, false)
}

type loop struct{ fn LoopFunc }

func (loop) Name() string                              { return "loop" }
func (loop) Probe() error                              { return nil }
func (loop) RunsFree(bool) bool                        { return true }
func (l loop) Send(ctx context.Context, f *Flow) error { return l.fn(ctx, f) }
func (l loop) Recv(ctx context.Context, f *Flow) error { return l.fn(ctx, f) }
