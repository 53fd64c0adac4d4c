package control

import (
	"encoding/json"
	"fmt"
	"net"

	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/engine"
)

// iperf3's -d lines (iperf_api.c, iperf_client_api.c, iperf_tcp.c), in
// its words: the parameters and results as they cross the control
// connection, each stream's buffers and congestion control from level 1;
// every state read or set from level 3 (DEBUG_LEVEL_INFO). iperf3's
// lines for every block sent and every thread are not written: a line
// per write would cost more than the write it reports.

// debugf writes one -d line at level.
func (cl *client) debugf(level int, format string, a ...any) {
	if cl.cfg.Debug == nil || cl.cfg.DebugLevel < level {
		return
	}
	fmt.Fprintf(cl.cfg.Debug, format, a...)
}

// debugJSON writes title and v as indented JSON, as iperf3's cJSON_Print.
func (cl *client) debugJSON(level int, title string, v any) {
	if cl.cfg.Debug == nil || cl.cfg.DebugLevel < level {
		return
	}
	if p, ok := v.(*wire.Params); ok && p.AuthToken != "" {
		q := *p
		q.AuthToken = redactedToken // -d prints no credential
		v = &q
	}
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		b = []byte(err.Error())
	}
	cl.debugf(level, "%s\n%s\n", title, b)
}

// stateText is iperf3's name of a state in its debug lines
// (state_to_text in iperf_util.c).
func stateText(s wire.State) string {
	switch s {
	case 0:
		return "Test reset"
	case wire.TestStart:
		return "TEST_START - starting a new test"
	case wire.ParamExchange:
		return "PARAM_EXCHANGE - Client to Server Parameters Exchange"
	case wire.IperfStart:
		return "IPERF_START - waiting for a new test"
	case wire.AccessDenied:
		return "ACCESS_DENIED - Server is busy"
	case wire.TestRunning, wire.TestEnd, wire.CreateStreams, wire.ServerTerminate, wire.ClientTerminate, wire.ExchangeResults,
		wire.DisplayResults, wire.IperfDone, wire.ServerError:
		return s.String()
	}
	return "Unknown State"
}

// readState reads the next state in the background, as readStateAsync,
// and writes iperf3's -d lines about it.
func (cl *client) readState(c net.Conn) <-chan stateMsg {
	cur := wire.State(cl.state.Load())
	cl.debugf(3, "Reading new State from the Server - current state is %d-%s\n", cur, stateText(cur))
	in := readStateAsync(c)
	out := make(chan stateMsg, 1)
	go func() {
		m := <-in
		if m.err == nil {
			cl.state.Store(int32(m.s))
			cl.debugf(3, "State change: client received and changed State to %d-%s\n", m.s, stateText(m.s))
		}
		out <- m
	}()
	return out
}

// writeState sends s to the server, and says so with -d.
func (cl *client) writeState(s wire.State) error {
	prev := wire.State(cl.state.Swap(int32(s)))
	cl.debugf(3, "State change: State set to %d-%s (from %d-%s)\n", s, stateText(s), prev, stateText(prev))
	return wire.WriteState(cl.ctrl, s)
}

// debugStream writes what iperf3's -d says of a new stream's socket.
func (cl *client) debugStream(c *engine.Socket) {
	if cl.cfg.Debug == nil {
		return
	}
	snd, _ := c.BufSize(true)
	rcv, _ := c.BufSize(false)
	cl.debugf(1, "SNDBUF is %d, expecting %d\n", snd, cl.cfg.Window)
	cl.debugf(1, "RCVBUF is %d, expecting %d\n", rcv, cl.cfg.Window)
	if !cl.cfg.UDP {
		cl.debugf(1, "Congestion algorithm is %s\n", congestionOf(c))
	}
}
