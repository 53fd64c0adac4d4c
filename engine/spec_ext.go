package engine

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Options are the knobs of the syscall-strategy backends (batch size, UDP
// GSO and GRO, the file to send, io_uring variants). The zero value asks
// for every backend's defaults.
//
// Go cannot add a field to Spec from another file, so options travel with
// the backend instead: Configure returns a copy of a registered backend that
// applies them, and refuses options the backend does not have, so a mistake
// fails before any socket is opened.
type Options struct {
	// Batch is the number of datagrams per sendmmsg/recvmmsg call (mmsg)
	// or of operations per io_uring submission (iouring); 0: the default.
	Batch int
	// GSO sends UDP with UDP_SEGMENT (mmsg): one message carries a train
	// of BufLen-byte datagrams that the kernel or NIC cuts up.
	GSO bool
	// GRO receives UDP with UDP_GRO (mmsg): one message may carry several
	// datagrams of one size.
	GRO bool
	// File is the file a sendfile or splice sender sends (ttcp's -F)
	// instead of the pattern or Spec.Source.
	File string
	// ZeroCopy makes iouring send with IORING_OP_SEND_ZC.
	ZeroCopy bool
	// Multishot makes iouring receive with one multishot receive into a
	// ring of provided buffers.
	Multishot bool
	// Queues is the number of queues afxdp transmits on, one AF_XDP
	// socket and locked thread each; 0: one.
	Queues int
	// Threads is the number of afxdp sending threads, spread over the
	// queues; 0: afxdp's default.
	Threads int
	// DstMAC is the destination MAC address of afxdp's frames, in the
	// form net.ParseMAC reads (ttcp's --dst-mac); empty: from the
	// neighbour table.
	DstMAC string
}

// IsZero reports whether o asks for nothing beyond the defaults.
func (o Options) IsZero() bool { return o == Options{} }

// String renders o in the form ParseOptions reads.
func (o Options) String() string {
	var s []string
	if o.Batch != 0 {
		s = append(s, "batch="+strconv.Itoa(o.Batch))
	}
	if o.GSO {
		s = append(s, "gso")
	}
	if o.GRO {
		s = append(s, "gro")
	}
	if o.File != "" {
		s = append(s, "file="+o.File)
	}
	if o.ZeroCopy {
		s = append(s, "zc")
	}
	if o.Multishot {
		s = append(s, "multishot")
	}
	if o.Queues != 0 {
		s = append(s, "queues="+strconv.Itoa(o.Queues))
	}
	if o.Threads != 0 {
		s = append(s, "threads="+strconv.Itoa(o.Threads))
	}
	if o.DstMAC != "" {
		s = append(s, "dstmac="+o.DstMAC)
	}
	return strings.Join(s, ",")
}

// set lists the names of the options o sets, for refusals.
func (o Options) set() []string {
	var s []string
	for _, kv := range strings.Split(o.String(), ",") {
		if kv != "" {
			s = append(s, strings.SplitN(kv, "=", 2)[0])
		}
	}
	return s
}

// ParseOptions reads options written as comma-separated words:
// "batch=64,gso,gro", "file=/tmp/x", "zc", "multishot",
// "queues=2,threads=4,dstmac=02:00:00:00:00:01".
func ParseOptions(s string) (Options, error) {
	var o Options
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		k, v, hasV := strings.Cut(w, "=")
		switch k {
		case "batch":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return Options{}, fmt.Errorf("backend option %q: batch takes a count of at least 1", w)
			}
			o.Batch = n
		case "queues":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return Options{}, fmt.Errorf("backend option %q: queues takes a count of at least 1", w)
			}
			o.Queues = n
		case "threads":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return Options{}, fmt.Errorf("backend option %q: threads takes a count of at least 1", w)
			}
			o.Threads = n
		case "dstmac":
			mac, err := net.ParseMAC(v)
			if err != nil || len(mac) != 6 {
				return Options{}, fmt.Errorf("backend option %q: dstmac takes an Ethernet address such as 02:00:00:00:00:01", w)
			}
			o.DstMAC = mac.String()
		case "file":
			if v == "" {
				return Options{}, fmt.Errorf("backend option %q: file takes a path", w)
			}
			o.File = v
		case "gso", "gro", "zc", "multishot":
			if hasV {
				return Options{}, fmt.Errorf("backend option %q: %s takes no value", w, k)
			}
			switch k {
			case "gso":
				o.GSO = true
			case "gro":
				o.GRO = true
			case "zc":
				o.ZeroCopy = true
			case "multishot":
				o.Multishot = true
			}
		default:
			return Options{}, fmt.Errorf("unknown backend option %q: known are batch=N, gso, gro, file=PATH, zc, multishot, queues=N, threads=N, dstmac=MAC", k)
		}
	}
	return o, nil
}

// Configurable is a Backend with options.
type Configurable interface {
	Backend
	// Configure returns a copy of the backend that applies o, or an error
	// naming the option it does not have or cannot honour.
	Configure(o Options) (Backend, error)
}

// Configure applies o to b: b itself when o is zero, a configured copy when
// b is Configurable, an error naming the options otherwise.
func Configure(b Backend, o Options) (Backend, error) {
	if o.IsZero() {
		return b, nil
	}
	c, ok := b.(Configurable)
	if !ok {
		return nil, fmt.Errorf("backend %s takes no options (given: %s)", b.Name(), strings.Join(o.set(), ", "))
	}
	return c.Configure(o)
}

// Refuse returns the error a Configure method gives for the options in o
// beyond those the backend has (nil when there are none). allowed is what
// the backend keeps of o, zeroing the rest.
func Refuse(backend string, o, allowed Options) error {
	var extra []string
	have := map[string]bool{}
	for _, n := range allowed.set() {
		have[n] = true
	}
	for _, n := range o.set() {
		if !have[n] {
			extra = append(extra, n)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	return fmt.Errorf("backend %s has no option %s", backend, strings.Join(extra, ", "))
}
