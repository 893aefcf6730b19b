package ledger

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"example.com/ledger/money"
)

// DateLayout is the layout of transaction dates.
const DateLayout = "2006-01-02"

// Posting moves an amount into (positive) or out of (negative) an account.
type Posting struct {
	Account string
	Amount  money.Amount
}

// Transaction is a dated set of postings that sums to zero in every currency.
type Transaction struct {
	ID          string
	Date        time.Time
	Description string
	Postings    []Posting
}

// Validate checks the transaction: at least two postings, valid account
// names, and postings that balance per currency.
func (t Transaction) Validate() error {
	if len(t.Postings) < 2 {
		return fmt.Errorf("ledger: transaction %s needs at least two postings", t.label())
	}
	sums := money.Balance{}
	for _, p := range t.Postings {
		if err := ValidateName(p.Account); err != nil {
			return fmt.Errorf("ledger: transaction %s: %w", t.label(), err)
		}
		if p.Amount.Currency.Code == "" {
			return fmt.Errorf("ledger: transaction %s: posting to %s has no currency", t.label(), p.Account)
		}
		sums.Add(p.Amount)
	}
	if !sums.IsZero() {
		var unbalanced []string
		for _, a := range sums.Amounts() {
			unbalanced = append(unbalanced, a.String())
		}
		sort.Strings(unbalanced)
		return fmt.Errorf("ledger: transaction %s does not balance: %s", t.label(), strings.Join(unbalanced, ", "))
	}
	return nil
}

func (t Transaction) label() string {
	if t.ID != "" {
		return fmt.Sprintf("%q", t.ID)
	}
	return fmt.Sprintf("%q", t.Description)
}

// Accounts returns the accounts the transaction posts to, in posting order
// without duplicates.
func (t Transaction) Accounts() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range t.Postings {
		if !seen[p.Account] {
			seen[p.Account] = true
			out = append(out, p.Account)
		}
	}
	return out
}
