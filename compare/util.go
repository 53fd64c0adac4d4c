package compare

import "syscall"

type syscallRawConn = syscall.RawConn

func (c CPU) sub(earlier CPU) CPU { return CPU{User: c.User - earlier.User, Sys: c.Sys - earlier.Sys} }
