package control

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blastnet/blast/control/wire"
)

// TestServerParamsRange: every field of the parameters a client sends is
// range-checked on the server as iperf3 3.17+ does (3.12 takes any) or
// stricter, and refused with iperf3's error number; values at the edges
// of each range still start a test.
func TestServerParamsRange(t *testing.T) {
	_, port, _ := blastServer(t, ServerConfig{Interval: 0})
	const base = `"tcp":true,"time":1`
	for _, tc := range []struct {
		field  string // what the body adds to base
		ierrno int32
	}{
		{`"flowlabel":-1`, 127},
		{`"flowlabel":0`, 127},
		{`"flowlabel":1048576`, 127},
		{`"pacing_timer":-1`, 114},
		{`"pacing_timer":2147483648`, 114},
		{`"num":-1`, 114},
		{`"num":18446744073709551615`, 114}, // -1 through an unsigned type
		{`"blockcount":-1`, 114},
		{`"server_affinity":99999`, 132},
		{`"server_affinity":-1`, 132},
		{`"server_affinity":1025`, 132},
		{`"burst":0`, 15},
		{`"burst":-1`, 15},
		{`"burst":1001`, 15},
		{`"parallel":0`, 6},
		{`"parallel":-1`, 6},
		{`"bandwidth":-1`, 114},
		{`"fqrate":-1`, 114},
		{`"bandwidth":1e14`, 27},
		{`"gso":2`, 114},
		{`"gro":-1`, 114},
		{`"gso_dg_size":-1`, 114},
		{`"gso_bf_size":65508`, 114},
		{`"gro_bf_size":1073741824`, 114},
		{`"omit":-1`, 12},
		{`"omit":601`, 12},
		{`"time":-1`, 5},
		{`"MSS":-1`, 10},
		{`"MSS":32768`, 10},
		{`"window":-1`, 8},
		{`"window":536870913`, 8},
		{`"len":-1`, 7},
		{`"TOS":-1`, 21},
		{`"TOS":256`, 21},
	} {
		t.Run(tc.field, func(t *testing.T) {
			body := fmt.Sprintf(`{%s,%s}`, base, tc.field)
			if !strings.HasPrefix(tc.field, `"parallel"`) {
				body = fmt.Sprintf(`{%s,"parallel":1,%s}`, base, tc.field)
			}
			rc := dialRaw(t, port)
			rc.expect(wire.ParamExchange)
			rc.ctrl.Write(frame([]byte(body)))
			s, err := wire.ReadState(rc.ctrl)
			if err != nil || s != wire.ServerError {
				t.Fatalf("%s: state %v, %v; want SERVER_ERROR", body, s, err)
			}
			var se wire.ServerErrorCode
			if err := wire.ReadServerError(rc.ctrl); !errors.As(err, &se) || se.Ierrno != tc.ierrno {
				t.Errorf("%s: server error %v, want i_errno %d", body, err, tc.ierrno)
			}
		})
	}
	// The edges of every range, and the zero values iperf3 and blast
	// clients leave out: each gets CREATE_STREAMS.
	for _, body := range []string{
		`{"tcp":true,"parallel":128,"time":86400,"omit":600,"MSS":32767,"window":536870912,"TOS":255,"flowlabel":1048575,` +
			`"pacing_timer":2147483647,"server_affinity":1024,"bandwidth":10000000000000,"fqrate":10000000000000,"burst":1000}`,
		`{"tcp":true,"parallel":1,"len":1048576,"num":9223372036854775807,"blockcount":0}`,
		`{"udp":true,"parallel":1,"time":1,"len":65507,"gso":1,"gso_dg_size":65507,"gso_bf_size":65507,"gro":1,"gro_bf_size":65507,` +
			`"server_affinity":0,"pacing_timer":0,"blockcount":1}`,
		`{"tcp":true,"parallel":1,"flowlabel":1,"burst":1,"omit":0,"time":1,"num":0,"MSS":0,"window":0,"TOS":0,"bandwidth":0,"gso":0,"gro":0}`,
		`{"tcp":true,"time":1,"pacing_timer":1000,"client_version":"3.12"}`, // iperf3 3.12's defaults, parallel left out
	} {
		rc := dialRaw(t, port)
		rc.expect(wire.ParamExchange)
		rc.ctrl.Write(frame([]byte(body)))
		if s, err := wire.ReadState(rc.ctrl); err != nil || s != wire.CreateStreams {
			t.Errorf("%s: state %v, %v; want CREATE_STREAMS", body, s, err)
		}
		rc.ctrl.Close()
	}
}
