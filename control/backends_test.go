package control

import _ "github.com/blastnet/blast/engine/backends" // every backend, for the tests
