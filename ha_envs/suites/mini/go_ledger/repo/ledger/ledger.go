package ledger

import (
	"fmt"
	"sort"

	"example.com/ledger/money"
)

// Ledger holds open accounts and posted transactions.
type Ledger struct {
	accounts     map[string]*Account
	transactions []Transaction
	// AutoOpen opens unknown accounts when a transaction posts to them.
	AutoOpen bool
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{accounts: map[string]*Account{}}
}

// Open opens an account. Opening an account twice is an error.
func (l *Ledger) Open(name string, currencies ...string) (*Account, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if _, ok := l.accounts[name]; ok {
		return nil, fmt.Errorf("ledger: account %q is already open", name)
	}
	for _, code := range currencies {
		if _, err := money.Lookup(code); err != nil {
			return nil, err
		}
	}
	acct := &Account{Name: name, Type: TypeOf(name), Currencies: currencies}
	l.accounts[name] = acct
	return acct, nil
}

// Account returns an open account.
func (l *Ledger) Account(name string) (*Account, bool) {
	a, ok := l.accounts[name]
	return a, ok
}

// AccountNames returns the names of the open accounts, sorted.
func (l *Ledger) AccountNames() []string {
	names := make([]string, 0, len(l.accounts))
	for name := range l.accounts {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Post validates a transaction and records it.
func (l *Ledger) Post(t Transaction) error {
	if err := t.Validate(); err != nil {
		return err
	}
	for _, p := range t.Postings {
		acct, ok := l.accounts[p.Account]
		if !ok {
			if !l.AutoOpen {
				return fmt.Errorf("ledger: transaction %s posts to unopened account %q", t.label(), p.Account)
			}
			continue
		}
		if len(acct.Currencies) > 0 && !contains(acct.Currencies, p.Amount.Currency.Code) {
			return fmt.Errorf("ledger: account %q does not accept %s", p.Account, p.Amount.Currency.Code)
		}
	}
	for _, name := range t.Accounts() {
		if _, ok := l.accounts[name]; !ok {
			if _, err := l.Open(name); err != nil {
				return err
			}
		}
	}
	l.transactions = append(l.transactions, t)
	return nil
}

// Transactions returns the posted transactions sorted by date (stable).
func (l *Ledger) Transactions() []Transaction {
	out := append([]Transaction(nil), l.transactions...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Date.Before(out[j].Date) })
	return out
}

// Balances returns the own balance of every open account (postings made to
// the account itself, not to its sub-accounts).
func (l *Ledger) Balances() map[string]money.Balance {
	out := make(map[string]money.Balance, len(l.accounts))
	for name := range l.accounts {
		out[name] = money.Balance{}
	}
	for _, t := range l.transactions {
		for _, p := range t.Postings {
			out[p.Account].Add(p.Amount)
		}
	}
	return out
}

// BalanceOf returns the own balance of one account.
func (l *Ledger) BalanceOf(name string) money.Balance {
	b := money.Balance{}
	for _, t := range l.transactions {
		for _, p := range t.Postings {
			if p.Account == name {
				b.Add(p.Amount)
			}
		}
	}
	return b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
