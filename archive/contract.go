package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
)

// BuiltinContract names the documented API's limits contract, the one a
// run whose run.json records no other was made against.
const BuiltinContract = "built-in"

// ContractInfo records a limits contract in run.json: the file as given,
// the contract in its canonical form (the file as the contract reader
// writes it back: no comments, fields in one order) and that form's
// SHA-256, so that two files saying the same limits are one contract
// however they are laid out. Credentials are references (${NAME},
// ${file:PATH}), never values: a contract with a value written inline is
// refused before anything is sent.
type ContractInfo struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// Route is the route a capacity search loaded ("" for other runs).
	Route string `json:"route,omitempty"`
	// Text is the canonical form.
	Text string `json:"text"`
}

// NewContractInfo records the contract read from file whose canonical
// form is text.
func NewContractInfo(file string, text []byte) *ContractInfo {
	sum := sha256.Sum256(text)
	return &ContractInfo{File: file, SHA256: hex.EncodeToString(sum[:]), Text: string(text)}
}

// ContractName is how history and compare name the contract of a run
// whose run.json recorded c: the file's base name and the first 12 hex
// digits of its hash (orders.yaml@3f2a9c01b7de), or BuiltinContract when
// c is nil.
func ContractName(c *ContractInfo) string {
	if c == nil {
		return BuiltinContract
	}
	return filepath.Base(c.File) + "@" + c.SHA256[:min(12, len(c.SHA256))]
}
