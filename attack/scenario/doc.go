// Package scenario reads, validates and builds attack profiles: the YAML
// scenario files of ratecheck attack (LoadProfile, validated on their
// types, every error naming its file, line and field), the per-surface
// policies and credentials, the ceilings that bound a profile's size, and
// the profile verify runs (VerifyProfile: the probe plan of package method
// laid out as streams per surface and source).
package scenario
