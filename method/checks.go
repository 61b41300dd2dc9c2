package method

// Check names, as the verdict's checks[].name carries them.
const (
	CheckOnset         = "onset"
	CheckRolling       = "rolling"
	CheckRejectedCount = "rejected-count"
	CheckShape         = "shape"
	CheckHeaders       = "headers"
	CheckIsolation     = "isolation"
	CheckSpoof         = "spoof"
	CheckIndependence  = "independence"
	CheckContract      = "contract"
)

// Check groups, as --checks selects them.
const (
	groupLimits    = "limits"
	groupIsolation = "isolation"
	groupContract  = "contract"
)

// A Check is one check of a surface: its name, the group --checks selects
// it by, and the evidence it needs (said when a run did not produce it).
type Check struct {
	Name, Group, Needs string
}

// checks lists the checks of a surface in report order.
var checks = []Check{
	{CheckOnset, groupLimits, "L requests admitted and a refusal from one address within one window"},
	{CheckRolling, groupLimits, "a window's worth of requests from one address, admitted or refused, whose outcome the timing decides"},
	{CheckRejectedCount, groupLimits, "a request that only one reading of refused requests explains (the probe plan's flood of refusals)"},
	{CheckShape, groupLimits, "a 429 to inspect"},
	{CheckHeaders, groupLimits, "an advertised quota, remaining count, reset or Retry-After that a request of the limit address tests"},
	{CheckIsolation, groupIsolation, "a request from a second address while the first is provably over its limit"},
	{CheckSpoof, groupIsolation, "forged-header and plain probes from one address in one span, some refused, enough for the exact test to tell them apart"},
	{CheckIndependence, groupIsolation, "refusals, and traffic on the other surface from the limit address"},
	{CheckContract, groupContract, "an answer to each failure-table probe"},
}

// Checks returns the checks of a surface in report order.
func Checks() []Check { return append([]Check(nil), checks...) }

// CheckNames returns the names of a surface's checks, in report order.
func CheckNames() []string {
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.Name
	}
	return names
}

// CheckGroups returns the check groups --checks selects (limits,
// isolation, contract) and the checks of each, in report order.
func CheckGroups() map[string][]string {
	groups := map[string][]string{}
	for _, c := range checks {
		groups[c.Group] = append(groups[c.Group], c.Name)
	}
	return groups
}
