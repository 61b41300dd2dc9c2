//go:build !linux

package attack

// raiseDescriptorLimit does nothing off Linux: the limit is not known
// (ok false), and no plan is refused for it.
func raiseDescriptorLimit() (soft, hard uint64, ok bool) { return 0, 0, false }
