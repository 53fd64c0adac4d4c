// Package backends is the one place that registers every data-path
// backend with the engine, so that every mode of the binary knows every
// name. On a system that lacks one, the name is registered as
// engine.Unsupported and says why.
//
// Import it for its effect, once, where a program or a test starts:
//
//	import _ "github.com/blastnet/blast/engine/backends"
package backends

// Names are the backends blast ships: off Linux each is registered as
// engine.Unsupported.
var Names = []string{"readwrite", "sendfile", "splice", "zerocopy", "trunc", "mmsg", "iouring", "afxdp"}
