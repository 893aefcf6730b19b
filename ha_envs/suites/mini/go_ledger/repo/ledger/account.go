// Package ledger implements accounts, transactions and a double-entry ledger.
package ledger

import (
	"fmt"
	"strings"
)

// Separator separates the components of an account name.
const Separator = ":"

// AccountType is the kind of an account, given by the first component of its name.
type AccountType int

const (
	Asset AccountType = iota + 1
	Liability
	Equity
	Income
	Expense
)

var rootTypes = map[string]AccountType{
	"Assets":      Asset,
	"Liabilities": Liability,
	"Equity":      Equity,
	"Income":      Income,
	"Expenses":    Expense,
}

func (t AccountType) String() string {
	switch t {
	case Asset:
		return "Asset"
	case Liability:
		return "Liability"
	case Equity:
		return "Equity"
	case Income:
		return "Income"
	case Expense:
		return "Expense"
	}
	return fmt.Sprintf("AccountType(%d)", int(t))
}

// Account is an open account of the ledger.
type Account struct {
	Name string
	Type AccountType
	// Currencies, when not empty, restricts the currencies that may be posted.
	Currencies []string
}

// ValidateName checks that `name` is a well-formed account name:
// non-empty components separated by ":", starting with a known root.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("ledger: empty account name")
	}
	parts := strings.Split(name, Separator)
	if _, ok := rootTypes[parts[0]]; !ok {
		return fmt.Errorf("ledger: account %q must start with one of Assets, Liabilities, Equity, Income, Expenses", name)
	}
	for _, p := range parts {
		if strings.TrimSpace(p) == "" || strings.TrimSpace(p) != p {
			return fmt.Errorf("ledger: account %q has an empty or padded component", name)
		}
	}
	return nil
}

// TypeOf returns the account type of a valid account name.
func TypeOf(name string) AccountType {
	root := name
	if i := strings.Index(name, Separator); i >= 0 {
		root = name[:i]
	}
	return rootTypes[root]
}

// Parent returns the parent account name ("" for a root account).
func Parent(name string) string {
	i := strings.LastIndex(name, Separator)
	if i < 0 {
		return ""
	}
	return name[:i]
}

// Depth returns the number of components below the root (0 for "Assets").
func Depth(name string) int {
	return strings.Count(name, Separator)
}

// Ancestors returns the parents of `name`, nearest first.
func Ancestors(name string) []string {
	var out []string
	for p := Parent(name); p != ""; p = Parent(p) {
		out = append(out, p)
	}
	return out
}

// IsDescendant reports whether `name` is `ancestor` or lies below it.
func IsDescendant(name, ancestor string) bool {
	return name == ancestor || strings.HasPrefix(name, ancestor+Separator)
}
