// Package report builds reports over a ledger.
package report

import (
	"sort"

	"example.com/ledger/ledger"
	"example.com/ledger/money"
)

// Line is one account of the balance report.
type Line struct {
	Account string
	Depth   int
	// Own is the balance of postings made to the account itself.
	Own money.Balance
	// Total is Own plus the totals of every sub-account.
	Total money.Balance
}

// Options filter the balance report.
type Options struct {
	// Root, when set, limits the report to this account and its sub-accounts.
	Root string
	// HideZero drops accounts whose total is zero.
	HideZero bool
	// MaxDepth, when positive, drops accounts deeper than this (their
	// amounts are still included in their parents' totals).
	MaxDepth int
}

// Balances computes the balance report of the ledger: one line per account,
// including parent accounts that were never opened themselves (for
// "Assets:Bank:Checking" the report also has "Assets:Bank" and "Assets"),
// sorted by account name so that children follow their parent.
func Balances(l *ledger.Ledger, opts ...Options) []Line {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}

	own := l.Balances()
	totals := map[string]money.Balance{}
	for name, bal := range own {
		totals[name] = bal.Clone()
		for _, anc := range ledger.Ancestors(name) {
			if _, ok := totals[anc]; !ok {
				totals[anc] = money.Balance{}
			}
		}
	}

	// Roll the balances up the tree, deepest accounts first.
	names := make([]string, 0, len(totals))
	for name := range totals {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		di, dj := ledger.Depth(names[i]), ledger.Depth(names[j])
		if di != dj {
			return di > dj
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		for _, anc := range ledger.Ancestors(name) {
			totals[anc].Merge(totals[name])
		}
	}

	sort.Strings(names)
	lines := make([]Line, 0, len(names))
	for _, name := range names {
		if o.Root != "" && !ledger.IsDescendant(name, o.Root) {
			continue
		}
		if o.MaxDepth > 0 && ledger.Depth(name) >= o.MaxDepth {
			continue
		}
		if o.HideZero && totals[name].IsZero() {
			continue
		}
		ownBal := own[name]
		if ownBal == nil {
			ownBal = money.Balance{}
		}
		lines = append(lines, Line{
			Account: name,
			Depth:   ledger.Depth(name),
			Own:     ownBal,
			Total:   totals[name],
		})
	}
	return lines
}

// Total returns the rolled-up balance of one account ("" for the whole
// ledger, which balances to zero when every transaction does).
func Total(l *ledger.Ledger, account string) money.Balance {
	sum := money.Balance{}
	for _, line := range Balances(l) {
		if account == "" && line.Depth == 0 {
			sum.Merge(line.Total)
		}
		if line.Account == account {
			return line.Total.Clone()
		}
	}
	return sum
}
