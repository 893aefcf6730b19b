// Package importer reads ledger transactions from CSV exports.
package importer

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"example.com/ledger/ledger"
	"example.com/ledger/money"
)

// Options control the import.
type Options struct {
	// DefaultCurrency is used when the file has no currency column or the
	// cell is empty.
	DefaultCurrency string
	// Comma is the field separator (',' when zero).
	Comma rune
	// DateLayout is the layout of the date column (ledger.DateLayout when empty).
	DateLayout string
}

// LineError is an error about one line of the input.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("importer: line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

var requiredColumns = []string{"id", "date", "account", "amount"}

type columns map[string]int

func readHeader(header []string) (columns, error) {
	cols := columns{}
	for i, name := range header {
		key := strings.ToLower(strings.TrimSpace(name))
		if key == "" {
			continue
		}
		if _, dup := cols[key]; dup {
			return nil, fmt.Errorf("duplicate column %q", key)
		}
		cols[key] = i
	}
	for _, name := range requiredColumns {
		if _, ok := cols[name]; !ok {
			return nil, fmt.Errorf("missing column %q", name)
		}
	}
	return cols, nil
}

func (c columns) get(record []string, name string) string {
	i, ok := c[name]
	if !ok || i >= len(record) {
		return ""
	}
	return strings.TrimSpace(record[i])
}

// Import reads transactions from CSV. The first row is a header naming the
// columns (id, date, account and amount are required; description and
// currency are optional). Each row is one posting; consecutive or not, rows
// with the same id form one transaction. Transactions are returned in the
// order their id first appears, and each one is validated.
func Import(r io.Reader, opts Options) ([]ledger.Transaction, error) {
	reader := csv.NewReader(r)
	if opts.Comma != 0 {
		reader.Comma = opts.Comma
	}
	reader.FieldsPerRecord = -1
	reader.TrimLeadingSpace = true
	layout := opts.DateLayout
	if layout == "" {
		layout = ledger.DateLayout
	}

	header, err := reader.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, &LineError{Line: 1, Err: err}
	}
	cols, err := readHeader(header)
	if err != nil {
		return nil, &LineError{Line: 1, Err: err}
	}

	var order []string
	byID := map[string]*ledger.Transaction{}
	firstLine := map[string]int{}
	for {
		record, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &LineError{Line: pe.Line, Err: pe.Err}
			}
			return nil, err
		}
		line, _ := reader.FieldPos(0)
		if isBlankRecord(record) {
			continue
		}
		posting, date, err := readPosting(record, cols, opts, layout)
		if err != nil {
			return nil, &LineError{Line: line, Err: err}
		}
		id := cols.get(record, "id")
		if id == "" {
			return nil, &LineError{Line: line, Err: errors.New("empty id")}
		}
		tx, ok := byID[id]
		if !ok {
			tx = &ledger.Transaction{ID: id, Date: date, Description: cols.get(record, "description")}
			byID[id] = tx
			order = append(order, id)
			firstLine[id] = line
		} else if !tx.Date.Equal(date) {
			return nil, &LineError{Line: line, Err: fmt.Errorf("transaction %q has two dates", id)}
		}
		tx.Postings = append(tx.Postings, posting)
	}

	out := make([]ledger.Transaction, 0, len(order))
	for _, id := range order {
		tx := *byID[id]
		if err := tx.Validate(); err != nil {
			return nil, &LineError{Line: firstLine[id], Err: err}
		}
		out = append(out, tx)
	}
	return out, nil
}

func readPosting(record []string, cols columns, opts Options, layout string) (ledger.Posting, time.Time, error) {
	date, err := time.Parse(layout, cols.get(record, "date"))
	if err != nil {
		return ledger.Posting{}, time.Time{}, fmt.Errorf("bad date %q", cols.get(record, "date"))
	}
	account := cols.get(record, "account")
	if err := ledger.ValidateName(account); err != nil {
		return ledger.Posting{}, time.Time{}, err
	}
	code := cols.get(record, "currency")
	if code == "" {
		code = opts.DefaultCurrency
	}
	if code == "" {
		return ledger.Posting{}, time.Time{}, errors.New("no currency and no default currency")
	}
	amount, err := money.ParseCode(cols.get(record, "amount"), code)
	if err != nil {
		return ledger.Posting{}, time.Time{}, err
	}
	return ledger.Posting{Account: account, Amount: amount}, date, nil
}

func isBlankRecord(record []string) bool {
	for _, f := range record {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

// ImportInto imports transactions and posts them to the ledger. It stops at
// the first transaction the ledger rejects and returns how many were posted.
func ImportInto(l *ledger.Ledger, r io.Reader, opts Options) (int, error) {
	txs, err := Import(r, opts)
	if err != nil {
		return 0, err
	}
	for i, tx := range txs {
		if err := l.Post(tx); err != nil {
			return i, err
		}
	}
	return len(txs), nil
}
