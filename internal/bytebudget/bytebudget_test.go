package bytebudget

import (
	"sync"
	"testing"
)

func TestBudget(t *testing.T) {
	b := New(100)
	if ok, _ := b.TryTake(60); !ok {
		t.Fatal("60 of 100 refused")
	}
	if ok, used := b.TryTake(41); ok || used != 60 {
		t.Fatalf("41 more fit (ok %v, in use %d)", ok, used)
	}
	if ok, _ := b.TryTake(-1); ok {
		t.Fatal("a negative reservation was taken")
	}
	b.Give(60)
	if b.InUse() != 0 || b.Peak() != 60 {
		t.Fatalf("in use %d peak %d", b.InUse(), b.Peak())
	}
	if ok, _ := New(0).TryTake(1 << 40); !ok {
		t.Fatal("an unlimited budget refused")
	}
}

// Concurrent reservations never pass the total.
func TestBudgetConcurrent(t *testing.T) {
	b := New(1000)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if ok, _ := b.TryTake(70); ok {
					b.Give(70)
				}
			}
		}()
	}
	wg.Wait()
	if b.InUse() != 0 || b.Peak() > 1000 {
		t.Fatalf("in use %d peak %d", b.InUse(), b.Peak())
	}
}
