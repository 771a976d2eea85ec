package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// yamlToJSON turns a YAML scenario into the JSON document it stands for,
// so that Parse checks one form and names bad fields by the same JSON
// paths. A YAML file is hostile input as a JSON one is: one document,
// string keys, no anchors or aliases (an alias is a reference that can
// multiply a small file into a huge tree), no tags but the core schema's
// (a mapping only !!map, a sequence only !!seq: !!set, !!omap or a local
// tag would be read as a plain collection),
// nesting no deeper than the JSON bound; and a number is a JSON number
// (no .inf or .nan). Problems name the line and column.
func yamlToJSON(data []byte) ([]byte, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := safeDecode(dec, &root); errors.Is(err, io.EOF) {
		return nil, errors.New("an empty YAML document")
	} else if err != nil {
		return nil, err
	}
	var more yaml.Node
	if err := safeDecode(dec, &more); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 {
		return nil, errors.New("an empty YAML document")
	}
	v, err := yamlValue(root.Content[0], 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// safeDecode is dec.Decode that turns a panic of the YAML library on odd
// input into an error.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("not a YAML document (the YAML reader failed: %v)", r)
		}
	}()
	if err := dec.Decode(n); err != nil {
		if errors.Is(err, io.EOF) {
			return err
		}
		return fmt.Errorf("not a YAML document: %v", err)
	}
	return nil
}

func yamlValue(n *yaml.Node, depth int) (any, error) {
	at := func(format string, args ...any) error {
		return fmt.Errorf("YAML line %d column %d: %s", n.Line, n.Column, fmt.Sprintf(format, args...))
	}
	if depth > maxDepth {
		return nil, at("nested too deep")
	}
	if n.Anchor != "" {
		return nil, at("an anchor (&%s): anchors and aliases are not allowed", n.Anchor)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return nil, at("an alias (*%s): anchors and aliases are not allowed", n.Value)
	case yaml.MappingNode:
		if n.ShortTag() != "!!map" { // !!set, !!omap, a local tag: not the JSON object it looks like
			return nil, at("the tag %s is not allowed", n.Tag)
		}
		obj := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case k.Kind == yaml.AliasNode || k.Anchor != "":
				return nil, fmt.Errorf("YAML line %d column %d: anchors and aliases are not allowed", k.Line, k.Column)
			case k.Kind != yaml.ScalarNode:
				return nil, fmt.Errorf("YAML line %d column %d: a key must be a string", k.Line, k.Column)
			case k.ShortTag() == "!!merge":
				return nil, fmt.Errorf("YAML line %d column %d: a merge key (<<) is not allowed", k.Line, k.Column)
			}
			if _, dup := obj[k.Value]; dup {
				return nil, fmt.Errorf("YAML line %d column %d: the key %q given twice", k.Line, k.Column, k.Value)
			}
			val, err := yamlValue(v, depth+1)
			if err != nil {
				return nil, err
			}
			obj[k.Value] = val
		}
		return obj, nil
	case yaml.SequenceNode:
		if n.ShortTag() != "!!seq" {
			return nil, at("the tag %s is not allowed", n.Tag)
		}
		arr := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			val, err := yamlValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, val)
		}
		return arr, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!timestamp", "!!binary":
			return n.Value, nil // a date is text to a scenario (and a type error where a string is not wanted)
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, at("%v", err)
			}
			return b, nil
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				return nil, at("the integer %s: %v", n.Value, err)
			}
			return json.Number(strconv.FormatInt(i, 10)), nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, at("the number %s: %v", n.Value, err)
			}
			if math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, at("%s is not a JSON number", n.Value)
			}
			return json.Number(floatText(n.Value, f)), nil
		}
		return nil, at("the tag %s is not allowed", n.Tag)
	}
	return nil, at("unsupported YAML node")
}

// floatText is the JSON text of the YAML float written text (value f): the
// text itself when it is a JSON number, else f formatted, still with a
// point or an exponent, so that a float stays a float (JSON refuses 3.0
// where an integer is wanted, and so must the YAML scenario's 3.0, +3. or
// !!float 3).
func floatText(text string, f float64) string {
	if text != "" && (text[0] == '-' || text[0] >= '0' && text[0] <= '9') && strings.ContainsAny(text, ".eE") && json.Valid([]byte(text)) {
		return text
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
