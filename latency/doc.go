// Package latency is blast's request/response mode (`blast lat`): one flow
// of ping-pong round trips over TCP (TCP_NODELAY) or UDP, timed with the
// monotonic clock and recorded in an HDR histogram.
//
// Every figure it reports is a full round trip: from just before the
// request is written to just after the whole reply has been read. It is
// never halved (sockperf without --full-rtt and qperf report RTT/2; convert
// before comparing). Percentiles come from the histogram (three
// significant digits); min, max, mean and standard deviation are exact.
//
// The server (Serve) echoes on one port over both TCP and UDP: a TCP
// connection gets back every byte it sends; a UDP datagram is sent back to
// its sender as it came. A UDP request carries a 16-byte header with a
// sequence number, so the client matches replies, counts requests whose
// reply did not come within the timeout as lost and replies that came
// after it as late.
package latency
