package wire

// iperf3's error numbers (i_errno, iperf_api.h) that blast sends with
// SERVER_ERROR, or names, when it refuses or ends a test itself.
const (
	IETotalRate       = 27  // IETOTALRATE
	IEMaxDuration     = 37  // IEMAXSERVERTESTDURATIONEXCEEDED
	IENewTest         = 100 // IENEWTEST: a test the server will not run (too much memory, too many bytes)
	IERecvParams      = 114 // IERECVPARAMS: a value iperf3 refuses without a number of its own
	IESetFlow         = 127 // IESETFLOW
	IEAffinity        = 132 // IEAFFINITY
	IEAuthTest        = 142 // IEAUTHTEST: the credentials do not pass
	IENoMsg           = 144 // IENOMSG
	IEDurationExpired = 160 // IESERVERTESTDURATIONEXPIRED
)
