// Package method is the vocabulary of ratecheck's verification method, the
// one list that the attack side and the analysis side both read: the
// documented contract's surfaces, limits and window; the stream names the
// probe plan sends and the analyzer keys on; verify's probe plan; the rows
// of the failure table with their expected answers; and the checks with
// their groups and the evidence each needs. docs/method.md explains the
// method and docs/contract.md the contract; tests hold the JSON Schema, the
// documentation's check tables and profiles/errors.yaml to these lists.
package method
