// Package trust judges sellers for the directory's advisory trust block: it probes
// endpoints without paying and reads their offers with the x402 package (probe.go),
// runs probe rounds (rounds.go), and turns probes, settlement stats and overrides into
// scores and verdicts (score.go), from the records a snapshot is built from
// (records.go).
package trust
