package ledger

import "testing"

func TestIndex(t *testing.T) {
	x, err := NewIndex()
	if err != nil {
		t.Fatal(err)
	}
	r := sampleRecord()
	if err := x.Put(r, 55); err != nil {
		t.Fatal(err)
	}
	other := sampleRecord()
	other.Issue, other.State = 8, AwaitingApproval
	if err := x.Put(other, 56); err != nil {
		t.Fatal(err)
	}
	got, cid, ok := x.Get(r.ID())
	if !ok || cid != 55 || got.State != Running {
		t.Fatalf("Get = %+v, %d, %v", got, cid, ok)
	}
	got.State = Done
	if again, _, _ := x.Get(r.ID()); again.State != Running {
		t.Fatal("changing a returned record changed the index")
	}
	tests := []struct {
		name string
		got  []*Record
		want int
	}{
		{"by state running", x.ByState(Running), 1},
		{"by state awaiting", x.ByState(AwaitingApproval), 1},
		{"by state done", x.ByState(Done), 0},
		{"by repository, any case", x.ByRepository("ACME/widgets"), 2},
		{"other repository", x.ByRepository("acme/gadgets"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.got) != tt.want {
				t.Fatalf("%d records, want %d", len(tt.got), tt.want)
			}
		})
	}
	if x.Len() != 2 {
		t.Fatalf("Len %d", x.Len())
	}
	t.Run("deliveries", func(t *testing.T) {
		if x.SeenDelivery("d1") {
			t.Fatal("new delivery reported as seen")
		}
		if !x.SeenDelivery("d1") {
			t.Fatal("repeated delivery not reported as seen")
		}
		x.ForgetDelivery("d1")
		if x.SeenDelivery("d1") {
			t.Fatal("forgotten delivery still seen")
		}
	})
	t.Run("dispatches", func(t *testing.T) {
		if err := x.PutDispatch(Dispatch{Key: "7-abc-1", ItemID: r.ID(), RunID: 99}); err != nil {
			t.Fatal(err)
		}
		d, ok := x.DispatchByRun(99)
		if !ok || d.ItemID != r.ID() {
			t.Fatalf("DispatchByRun = %+v, %v", d, ok)
		}
		if _, ok := x.DispatchByRun(100); ok {
			t.Fatal("unknown run found")
		}
	})
}
