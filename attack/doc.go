// Package attack provides the load of ratecheck: it turns scenario profiles
// and the built-in probe plan of verify into Vegeta attacks, with targeters
// for the REST and MCP surfaces, pacers whose durations may be written in
// units of the window, one attacker per source address, fleets of retrying
// clients, and an archive writer whose results stay readable by Vegeta's own
// tools.
//
// The probe plan and its schedule are described in docs/method.md at the
// root of the repository; the profile format in profiles/README.md.
package attack
