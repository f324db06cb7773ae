package memo

import (
	"errors"
	"strconv"
	"sync"
	"testing"
)

func TestCache(t *testing.T) {
	c := New[int](3)
	made := 0
	get := func(k string) int {
		t.Helper()
		v, err := c.Get(k, func() (int, error) { made++; return len(k), nil })
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if get("ab") != 2 || get("ab") != 2 || made != 1 {
		t.Fatalf("a key made %d times", made)
	}
	if _, err := c.Get("bad", func() (int, error) { return 0, errors.New("no") }); err == nil {
		t.Fatal("the error was lost")
	}
	if v, err := c.Get("bad", func() (int, error) { return 7, nil }); err != nil || v != 7 {
		t.Fatalf("a failed value was kept: %d %v", v, err)
	}
	get("c")
	if c.Len() != 3 {
		t.Fatalf("len %d, want 3", c.Len())
	}
	get("dddd") // full: one value gives way
	if c.Len() != 3 || get("dddd") != 4 {
		t.Fatalf("a full cache holds %d", c.Len())
	}
}

// Keys used round and round, a few more than the cache holds, still
// mostly hit.
func TestCacheRoundAndRound(t *testing.T) {
	c := New[int](100)
	made := 0
	for range 50 {
		for k := range 110 {
			c.Get(strconv.Itoa(k), func() (int, error) { made++; return k, nil })
		}
	}
	misses := float64(made) / (50 * 110)
	t.Logf("%.0f %% missed", 100*misses)
	if misses > 0.5 {
		t.Fatalf("%.0f %% of the gets missed", 100*misses)
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := New[string](16)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				k := strconv.Itoa((g + i) % 40)
				v, _ := c.Get(k, func() (string, error) { return "v" + k, nil })
				if v != "v"+k {
					t.Errorf("key %s: %s", k, v)
					return
				}
			}
		})
	}
	wg.Wait()
	if c.Len() > 16 {
		t.Fatalf("len %d past its bound", c.Len())
	}
}
