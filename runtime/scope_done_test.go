package runtime_test

import (
	"context"
	"testing"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Scope.Done is closed once the handle's teardown is complete: by its own
// Dispose, a group's by the group's Dispose, a scope's by Close; asked for
// before or after, it is the same channel; a live handle's stays open.
func TestScope_DoneClosedOnceDisposed(t *testing.T) {
	reg := mustNew(t)
	a, _ := reg.NewScope("a")
	b, _ := reg.NewScope("b")
	g, err := a.Group()
	if err != nil {
		t.Fatal(err)
	}
	done := a.Done()
	if closed(done) || closed(g.Done()) || closed(b.Done()) || closed(reg.Global().Done()) {
		t.Fatal("a live handle's Done is closed")
	}
	g.Dispose()
	if !closed(g.Done()) || closed(done) {
		t.Fatal("a group's Dispose closes the group's Done only")
	}
	a.Dispose()
	if !closed(done) || a.Done() != done {
		t.Fatal("Dispose did not close the Done asked for before it")
	}
	bd := b.Done()
	if err := reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !closed(bd) {
		t.Fatal("Close did not close a scope's Done")
	}
}
