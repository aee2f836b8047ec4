package ledger

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// Index is the fast, in-memory view of the ledger: work items by repository and by
// state, the delivery IDs already handled, and the dispatches made. GitHub stays the
// durable store; Rebuild fills the index from it at start-up.
type Index struct{ db *memdb.MemDB }

const (
	tableItems      = "items"
	tableDeliveries = "deliveries"
	tableDispatches = "dispatches"
)

// item is a stored record plus where it lives on GitHub.
type item struct {
	ID        string
	Repo      string
	State     string
	CommentID int64
	Record    *Record
}

type delivery struct{ ID string }

// Dispatch is one workflow_dispatch the App made (or saw another replica make).
type Dispatch struct {
	Key    string // the dispatch ref's last segment: <issue>-<revision>-<attempt>
	ItemID string
	RunID  int64
}

// NewIndex creates an empty index.
func NewIndex() (*Index, error) {
	schema := &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		tableItems: {Name: tableItems, Indexes: map[string]*memdb.IndexSchema{
			"id":    {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
			"repo":  {Name: "repo", Indexer: &memdb.StringFieldIndex{Field: "Repo", Lowercase: true}},
			"state": {Name: "state", Indexer: &memdb.StringFieldIndex{Field: "State"}},
		}},
		tableDeliveries: {Name: tableDeliveries, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		}},
		tableDispatches: {Name: tableDispatches, Indexes: map[string]*memdb.IndexSchema{
			"id":    {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
			"item":  {Name: "item", Indexer: &memdb.StringFieldIndex{Field: "ItemID"}},
			"runid": {Name: "runid", AllowMissing: true, Indexer: &memdb.IntFieldIndex{Field: "RunID"}},
		}},
	}}
	db, err := memdb.NewMemDB(schema)
	if err != nil {
		return nil, fmt.Errorf("failed to create the ledger index: %w", err)
	}
	return &Index{db: db}, nil
}

// Put stores (a copy of) a record and the ID of the comment holding it.
func (x *Index) Put(r *Record, commentID int64) error {
	txn := x.db.Txn(true)
	defer txn.Abort()
	it := &item{ID: r.ID(), Repo: r.Repository, State: string(r.State), CommentID: commentID, Record: r.Clone()}
	if err := txn.Insert(tableItems, it); err != nil {
		return fmt.Errorf("failed to index %s: %w", r.ID(), err)
	}
	txn.Commit()
	return nil
}

// Delete drops a work item from the index (its repository left the installation).
func (x *Index) Delete(id string) {
	txn := x.db.Txn(true)
	defer txn.Abort()
	if _, err := txn.DeleteAll(tableItems, "id", id); err == nil {
		txn.Commit()
	}
}

// Get returns a copy of the record of a work item and its comment ID; ok is false when
// the item is not known.
func (x *Index) Get(id string) (rec *Record, commentID int64, ok bool) {
	raw, err := x.db.Txn(false).First(tableItems, "id", id)
	if err != nil || raw == nil {
		return nil, 0, false
	}
	it := raw.(*item)
	return it.Record.Clone(), it.CommentID, true
}

// ByState lists the records in one state.
func (x *Index) ByState(s State) []*Record { return x.list("state", string(s)) }

// ByRepository lists the records of one repository ("owner/name").
func (x *Index) ByRepository(repo string) []*Record { return x.list("repo", repo) }

func (x *Index) list(index, value string) []*Record {
	it, err := x.db.Txn(false).Get(tableItems, index, value)
	if err != nil {
		return nil
	}
	var out []*Record
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*item).Record.Clone())
	}
	return out
}

// Len is the number of indexed work items.
func (x *Index) Len() int {
	it, err := x.db.Txn(false).Get(tableItems, "id")
	if err != nil {
		return 0
	}
	n := 0
	for raw := it.Next(); raw != nil; raw = it.Next() {
		n++
	}
	return n
}

// SeenDelivery records a webhook delivery ID and reports whether it had been seen.
func (x *Index) SeenDelivery(id string) bool {
	txn := x.db.Txn(true)
	defer txn.Abort()
	if raw, _ := txn.First(tableDeliveries, "id", id); raw != nil {
		return true
	}
	if err := txn.Insert(tableDeliveries, &delivery{ID: id}); err != nil {
		return false
	}
	txn.Commit()
	return false
}

// ForgetDelivery removes a delivery ID, so a delivery whose handling failed is handled
// again when GitHub redelivers it.
func (x *Index) ForgetDelivery(id string) {
	txn := x.db.Txn(true)
	defer txn.Abort()
	if _, err := txn.DeleteAll(tableDeliveries, "id", id); err == nil {
		txn.Commit()
	}
}

// PutDispatch records a dispatch.
func (x *Index) PutDispatch(d Dispatch) error {
	txn := x.db.Txn(true)
	defer txn.Abort()
	if err := txn.Insert(tableDispatches, &d); err != nil {
		return fmt.Errorf("failed to index dispatch %s: %w", d.Key, err)
	}
	txn.Commit()
	return nil
}

// DispatchByRun finds the dispatch that started a workflow run.
func (x *Index) DispatchByRun(runID int64) (Dispatch, bool) {
	raw, err := x.db.Txn(false).First(tableDispatches, "runid", runID)
	if err != nil || raw == nil {
		return Dispatch{}, false
	}
	return *raw.(*Dispatch), true
}
