package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/toolscope/toolscope/lossless"
	"github.com/toolscope/toolscope/runtime"
)

// ToolFactory builds a tool from its configuration: the JSON a Mount names
// it with. It runs on every member that hosts the tree (at Mount and again
// at every activation), so it must be deterministic code: the same config
// gives the same tool, and an error is a refusal of that config.
type ToolFactory func(config json.RawMessage) (runtime.Definition, error)

// GuardFactory builds a guard from its configuration, as ToolFactory builds
// a tool.
type GuardFactory func(config json.RawMessage) (runtime.Guard, error)

// MaxConfigBytes bounds one catalog entry's configuration (a Mount's or an
// AddGuard's config JSON): configuration is network input.
const MaxConfigBytes = 64 << 10

// ErrCatalog wraps every refusal of a catalog entry or of its
// configuration; the error's text names the entry.
var ErrCatalog = errors.New("cluster: catalog")

// Catalog is the code a tree may use at run time by name: tool factories
// and guard factories. Every member builds the same catalog at start (it is
// code, not data); a tree's state names entries and carries their config.
// It is safe for concurrent use; entries are added before the members serve
// trees and never removed.
type Catalog struct {
	mu     sync.RWMutex
	tools  map[string]ToolFactory
	guards map[string]GuardFactory
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	return &Catalog{tools: map[string]ToolFactory{}, guards: map[string]GuardFactory{}}
}

// AddTool adds a named tool factory. The name must be non-empty and not in
// use by another tool factory.
func (c *Catalog) AddTool(name string, f ToolFactory) error {
	if name == "" || f == nil {
		return fmt.Errorf("%w: AddTool needs a name and a factory (name %q)", ErrCatalog, name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.tools[name]; dup {
		return fmt.Errorf("%w: tool entry %q is already in the catalog", ErrCatalog, name)
	}
	c.tools[name] = f
	return nil
}

// AddGuard adds a named guard factory, as AddTool does.
func (c *Catalog) AddGuard(name string, f GuardFactory) error {
	if name == "" || f == nil {
		return fmt.Errorf("%w: AddGuard needs a name and a factory (name %q)", ErrCatalog, name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.guards[name]; dup {
		return fmt.Errorf("%w: guard entry %q is already in the catalog", ErrCatalog, name)
	}
	c.guards[name] = f
	return nil
}

// Tools lists the tool entries' names, sorted.
func (c *Catalog) Tools() []string { return c.names(true) }

// Guards lists the guard entries' names, sorted.
func (c *Catalog) Guards() []string { return c.names(false) }

func (c *Catalog) names(tools bool) []string {
	c.mu.RLock()
	var out []string
	if tools {
		for n := range c.tools {
			out = append(out, n)
		}
	} else {
		for n := range c.guards {
			out = append(out, n)
		}
	}
	c.mu.RUnlock()
	sort.Strings(out)
	return out
}

// Tool builds the tool of entry name with config. Any failure — an unknown
// entry, config that is not one JSON value or is too large, the factory's
// refusal, a panicking factory — is an error wrapping ErrCatalog that names
// the entry.
func (c *Catalog) Tool(name string, config json.RawMessage) (def runtime.Definition, err error) {
	c.mu.RLock()
	f := c.tools[name]
	c.mu.RUnlock()
	if f == nil {
		return def, fmt.Errorf("%w: no tool entry %q (the catalog has %q)", ErrCatalog, name, c.Tools())
	}
	cfg, err := checkConfig("tool", name, config)
	if err != nil {
		return def, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: tool entry %q: the factory panicked on this config: %v", ErrCatalog, name, p)
		}
	}()
	def, err = f(cfg)
	if err != nil {
		return def, fmt.Errorf("%w: tool entry %q refused its config: %w", ErrCatalog, name, err)
	}
	if def.Name == "" {
		return def, fmt.Errorf("%w: tool entry %q built a tool without a name", ErrCatalog, name)
	}
	return def, nil
}

// Guard builds the guard of entry name with config, as Tool does.
func (c *Catalog) Guard(name string, config json.RawMessage) (g runtime.Guard, err error) {
	c.mu.RLock()
	f := c.guards[name]
	c.mu.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("%w: no guard entry %q (the catalog has %q)", ErrCatalog, name, c.Guards())
	}
	cfg, err := checkConfig("guard", name, config)
	if err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			g, err = nil, fmt.Errorf("%w: guard entry %q: the factory panicked on this config: %v", ErrCatalog, name, p)
		}
	}()
	g, err = f(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: guard entry %q refused its config: %w", ErrCatalog, name, err)
	}
	if g == nil {
		return nil, fmt.Errorf("%w: guard entry %q built no guard", ErrCatalog, name)
	}
	return g, nil
}

// checkConfig bounds and checks a config: empty is JSON null; otherwise it
// must be exactly one lossless JSON value. The factory gets its canonical
// text (its own copy), which is also what the tree's state stores.
func checkConfig(kind, name string, config json.RawMessage) (json.RawMessage, error) {
	if len(config) == 0 {
		return json.RawMessage("null"), nil
	}
	if len(config) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: %s entry %q: config is %d bytes, over the bound of %d", ErrCatalog, kind, name, len(config), MaxConfigBytes)
	}
	canon, err := lossless.Canonical(config)
	if err != nil {
		return nil, fmt.Errorf("%w: %s entry %q: config is not one JSON value: %w", ErrCatalog, kind, name, err)
	}
	return canon, nil
}
