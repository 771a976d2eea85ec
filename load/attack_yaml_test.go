package load

import (
	"errors"
	"strings"
	"testing"
)

// TestAttack_YAML_CollectionTagsRefused: "no tags but the core schema's"
// held for scalars only; a tag on a mapping or a sequence (!foo, !!set,
// !!omap, !!seq on a mapping) was dropped silently and the collection read
// as a plain one. Now a collection may carry only its own core tag.
func TestAttack_YAML_CollectionTagsRefused(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"local tag on a mapping", "agents:", "agents: !foo", "the tag !foo"},
		{"set", "agents:", "agents: !!set", "the tag !!set"},
		{"omap", "tools:\n", "tools: !!omap\n", "the tag !!omap"},
		{"local tag on a sequence", "levels:", "levels: !bar", "the tag !bar"},
		{"map tag is fine", "agents:", "agents: !!map", ""},
		{"seq tag is fine", "tools:\n", "tools: !!seq\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(baseYAML, c.from, c.to, 1)
			_, err := Parse([]byte(doc))
			if c.want == "" {
				if err != nil {
					t.Fatalf("%v", err)
				}
				return
			}
			var se *ScenarioError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}
