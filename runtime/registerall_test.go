package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolscope/toolscope/runtime"
)

// R15, RegisterAll: a batch is all or nothing, appears with one change
// notification, and its one disposer removes exactly the batch.
func TestRegister_R15_RegisterAll(t *testing.T) {
	t.Run("AllAppearWithOneNotification", func(t *testing.T) {
		reg := rrNew(t)
		changes := rrChanges(t, reg.Global())
		d, err := reg.Global().RegisterAll(rrDef("a", "A"), rrDef("b", "B"), rrDef("c", "C"))
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b", "c"}, reg.Global().Tools())
		assert.Equal(t, int64(1), changes.Load())
		assert.Equal(t, "B", rrExec(reg.Global(), "b").Text())
		d()
		assert.Empty(t, reg.Global().Tools())
		assert.Equal(t, int64(2), changes.Load())
		d()
		assert.Equal(t, int64(2), changes.Load(), "the second call is a no-op")
	})
	t.Run("InvalidDefinitionRegistersNothing", func(t *testing.T) {
		reg := rrNew(t)
		changes := rrChanges(t, reg.Global())
		bad := rrDef("b", "B")
		bad.Execute = nil
		_, err := reg.Global().RegisterAll(rrDef("a", "A"), bad)
		require.ErrorIs(t, err, runtime.ErrInvalidDefinition)
		assert.Contains(t, err.Error(), `definition 1 ("b")`)
		assert.Empty(t, reg.Global().Tools())
		assert.Equal(t, int64(0), changes.Load())
	})
	t.Run("ClashRegistersNothing", func(t *testing.T) {
		reg := rrNew(t)
		rrReg(t, reg.Global(), "b", "old")
		changes := rrChanges(t, reg.Global())
		_, err := reg.Global().RegisterAll(rrDef("a", "A"), rrDef("b", "B"))
		require.ErrorIs(t, err, runtime.ErrDuplicate)
		assert.Equal(t, []string{"b"}, reg.Global().Tools())
		assert.Equal(t, "old", rrExec(reg.Global(), "b").Text())
		assert.Equal(t, int64(0), changes.Load())
	})
	t.Run("DuplicateInsideTheBatch", func(t *testing.T) {
		reg := rrNew(t)
		s := rrScope(t, reg, "p")
		_, err := s.RegisterAll(rrDef("a", "A"), rrDef("a", "A2"))
		require.ErrorIs(t, err, runtime.ErrDuplicate)
		assert.Empty(t, reg.Global().Tools())
		_, ok := s.Get("a")
		assert.False(t, ok)
	})
	t.Run("DisposerRemovesOnlyItsOwn", func(t *testing.T) {
		reg := rrNew(t)
		s := rrScope(t, reg, "p")
		d, err := s.RegisterAll(rrDef("a", "A"), rrDef("b", "B"))
		require.NoError(t, err)
		rrReg(t, s, "c", "C")
		d()
		assert.Equal(t, []string{"c"}, s.Tools())
	})
	t.Run("ScopeDisposeRemovesTheBatch", func(t *testing.T) {
		reg := rrNew(t)
		s := rrScope(t, reg, "p")
		_, err := s.RegisterAll(rrDef("a", "A"), rrDef("b", "B"))
		require.NoError(t, err)
		s.Dispose()
		_, err = reg.NewScope("p")
		require.NoError(t, err)
		_, ok := reg.Global().Get("a")
		assert.False(t, ok)
	})
	t.Run("Empty", func(t *testing.T) {
		reg := rrNew(t)
		changes := rrChanges(t, reg.Global())
		d, err := reg.Global().RegisterAll()
		require.NoError(t, err)
		d()
		assert.Equal(t, int64(0), changes.Load())
	})
}

// N5: after Close, the mutating methods of every handle — the global
// scope, an agent scope, an owner group — return ErrClosed (the docs'
// "every method"), not the ErrScopeDisposed of a handle the user disposed.
func TestLifecycle_N5_MutationsAfterCloseReturnErrClosed(t *testing.T) {
	reg, err := runtime.New()
	require.NoError(t, err)
	s := rrScope(t, reg, "p")
	g, err := s.Group()
	require.NoError(t, err)
	require.NoError(t, reg.Close(context.Background()))
	for name, h := range map[string]*runtime.Scope{"global": reg.Global(), "scope": s, "group": g} {
		_, err := h.Register(rrDef("x", "X"))
		assert.ErrorIs(t, err, runtime.ErrClosed, "%s Register", name)
		_, err = h.RegisterAll(rrDef("x", "X"))
		assert.ErrorIs(t, err, runtime.ErrClosed, "%s RegisterAll", name)
		_, err = h.OnChange(func(context.Context) error { return nil })
		assert.ErrorIs(t, err, runtime.ErrClosed, "%s OnChange", name)
		_, err = h.Group()
		assert.ErrorIs(t, err, runtime.ErrClosed, "%s Group", name)
		_, err = h.NewScope("q")
		assert.ErrorIs(t, err, runtime.ErrClosed, "%s NewScope", name)
	}
	_, err = s.Restrict(runtime.Restriction{Deny: []string{"nothing"}})
	assert.True(t, err != nil && !errors.Is(err, runtime.ErrScopeDisposed), "Restrict: %v", err)
}

// RegisterAll is the form for setup code: one error to check for a
// toolset, and one disposer that removes it.
func ExampleScope_RegisterAll() {
	reg, err := runtime.New()
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())

	remove, err := reg.Global().RegisterAll(exampleTool("read"), exampleTool("write"), exampleTool("search"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reg.Global().Tools())

	// All or nothing: "read" is taken, so "grep" is not registered either.
	_, err = reg.Global().RegisterAll(exampleTool("grep"), exampleTool("read"))
	fmt.Println(errors.Is(err, runtime.ErrDuplicate), reg.Global().Tools())

	remove()
	fmt.Println(reg.Global().Tools())
	// Output:
	// [read write search]
	// true [read write search]
	// []
}
