package render

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/blastnet/blast/control/result"
)

// JSONStream writes iperf3's --json-stream output (iperf3 3.17 and
// later): one JSON object a line, {"event": NAME, "data": ...}, as the
// test runs: "start" once the streams are connected, "interval" for each
// interval, and at the end "error" (if the test failed),
// "server_output_json" or "server_output_text" (if the client asked for
// the server's output) and "end". Its methods may be called from several
// goroutines.
type JSONStream struct {
	W  io.Writer
	mu sync.Mutex
}

// Start writes the "start" event: the -J document's start object.
func (s *JSONStream) Start(r *result.Result) error { return s.event("start", jsonStartOf(r)) }

// Interval writes one "interval" event: an element of -J's intervals.
func (s *JSONStream) Interval(r *result.Result, iv *result.Interval) error {
	return s.event("interval", jsonIntervalOf(r, iv))
}

// End writes the events that close the stream: the error, the server's
// output, and "end" with the -J document's end object (empty when the
// test never connected, as iperf3's).
func (s *JSONStream) End(r *result.Result) error {
	if r.Err != nil {
		if err := s.event("error", r.Err.Error()); err != nil {
			return err
		}
	}
	if r.Role == "client" && r.Params.GetServerOutput != 0 {
		if len(r.ServerOutputJSON) > 0 {
			if err := s.event("server_output_json", r.ServerOutputJSON); err != nil {
				return err
			}
		}
		if r.ServerOutputText != "" {
			if err := s.event("server_output_text", r.ServerOutputText); err != nil {
				return err
			}
		}
	}
	if !r.Connected() {
		return s.event("end", struct{}{})
	}
	return s.event("end", jsonEndOf(r))
}

func (s *JSONStream) event(name string, data any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Event string `json:"event"`
		Data  any    `json:"data"`
	}{name, data}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.W.Write(b.Bytes())
	return err
}
