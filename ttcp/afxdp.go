package ttcp

// The afxdp backend registers itself with the engine: importing it here
// makes `--backend afxdp` available wherever ttcp mode is.
import _ "github.com/blastnet/blast/engine/afxdp"
