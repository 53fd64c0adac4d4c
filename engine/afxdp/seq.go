package afxdp

// Seq counts the sequence numbers one receiver saw: how many, the lowest
// and highest, and how many came after a higher one (reordered, as
// iperf3's "out of order").
type Seq struct {
	Received  int64
	Reordered int64
	Lo, Hi    uint32
	last      uint32
	seen      bool
}

// Add records one sequence number (0: a datagram without one, counted
// only as received).
func (s *Seq) Add(seq uint32) {
	s.Received++
	if seq == 0 {
		return
	}
	if !s.seen {
		s.Lo, s.Hi, s.last, s.seen = seq, seq, seq, true
		return
	}
	if seq <= s.last {
		s.Reordered++
	}
	s.last = seq
	s.Hi = max(s.Hi, seq)
	s.Lo = min(s.Lo, seq)
}

// Merge combines the counts of several receivers of one flow (several
// queues, or a socket and a queue).
func Merge(parts ...Seq) Seq {
	var t Seq
	for _, p := range parts {
		t.Received += p.Received
		t.Reordered += p.Reordered
		if !p.seen {
			continue
		}
		if !t.seen {
			t.Lo, t.Hi, t.seen = p.Lo, p.Hi, true
			continue
		}
		t.Lo, t.Hi = min(t.Lo, p.Lo), max(t.Hi, p.Hi)
	}
	return t
}

// Lost is the number of sequence numbers between the lowest and the
// highest seen that never arrived (datagrams lost before the first or
// after the last one received cannot be told).
func (s Seq) Lost() int64 {
	if !s.seen {
		return 0
	}
	return max(int64(s.Hi)-int64(s.Lo)+1-s.Received, 0)
}
