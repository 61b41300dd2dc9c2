package attack

import "syscall"

// raiseDescriptorLimit raises the soft limit on open file descriptors to
// the hard one, and returns both (ok false: they could not be read).
func raiseDescriptorLimit() (soft, hard uint64, ok bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, 0, false
	}
	if l.Cur < l.Max {
		raised := l
		raised.Cur = l.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			l = raised
		}
	}
	return l.Cur, l.Max, true
}
