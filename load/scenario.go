package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds on a scenario, so a file cannot ask for unbounded work or memory
// before anything runs.
const (
	MaxScenarioBytes = 1 << 20        // the scenario document
	MaxAgents        = 1_000_000      // scopes in the whole agent forest
	MaxTurns         = 100_000_000    // turns in the whole run
	MaxCallsPerTurn  = 1000           // calls in one turn
	MaxTools         = 10_000         // tools
	MaxOutputBytes   = 16 << 20       // one call's output
	MaxLatency       = 24 * time.Hour // any sampled or configured duration
	maxDepth         = 64             // JSON nesting of the document
	maxNameRunes     = 200            // the scenario's name, shown on terminals and pages
)

// Scenario is one workload: see the package doc and scenario.schema.json.
type Scenario struct {
	// Name labels the run in reports.
	Name string `json:"name"`
	// Description is free text.
	Description string `json:"description,omitempty"`
	// Seed seeds every random draw (default 1).
	Seed *int64 `json:"seed,omitempty"`
	// Registry configures the registry under test.
	Registry *RegistryConfig `json:"registry,omitempty"`
	// Agents is the shape of the agent forest.
	Agents Agents `json:"agents"`
	// Tools are the simulated tools, registered in the global scope.
	Tools []Tool `json:"tools"`
	// Turns describes each agent's turns.
	Turns Turns `json:"turns"`
	// Load is the load model.
	Load LoadModel `json:"load"`
}

// RegistryConfig configures the registry under test.
type RegistryConfig struct {
	// MaxParallel bounds a turn's overlapping dispatches (runtime.WithMaxParallel);
	// 0 keeps the registry's default.
	MaxParallel int `json:"maxParallel,omitempty"`
}

// Agents is the shape of the agent forest: Count top-level scopes, each with
// SubAgents children per scope, Depth levels deep.
type Agents struct {
	Count     int `json:"count"`
	SubAgents int `json:"subAgents,omitempty"`
	Depth     int `json:"depth,omitempty"`
	// Levels[i] restricts every scope at depth i (0: the top-level agents).
	Levels []Level `json:"levels,omitempty"`
}

// Level is the restriction of one level of the forest (runtime.Restriction).
type Level struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// The classifications of a Tool.
const (
	ModeParallel   = "parallel"
	ModeExclusive  = "exclusive"
	ModeByArgument = "by-argument"
)

// Tool is one simulated tool.
type Tool struct {
	Name string `json:"name"`
	// Mode is parallel, exclusive or by-argument.
	Mode string `json:"mode"`
	// ParallelFraction (by-argument only) is the fraction of calls whose
	// argument classifies them parallel; the rest are exclusive.
	ParallelFraction *float64 `json:"parallelFraction,omitempty"`
	// Latency is the body's running time.
	Latency Distribution `json:"latency"`
	// FailureRate is the fraction of calls failing with CodeInjectedFailure.
	FailureRate float64 `json:"failureRate,omitempty"`
	// TimeoutRate is the fraction of calls that run past Timeout (and so end
	// TOOL_TIMEOUT); it requires Timeout.
	TimeoutRate float64 `json:"timeoutRate,omitempty"`
	// Timeout is the tool's declared, enforced timeout (0: none).
	Timeout Duration `json:"timeout,omitempty"`
	// OutputBytes is the size of a successful call's text output.
	OutputBytes int `json:"outputBytes,omitempty"`
}

// Turns describes each agent's turns.
type Turns struct {
	// PerAgent is how many turns each agent runs.
	PerAgent int `json:"perAgent"`
	// CallsPerTurn is drawn uniformly from [Min, Max].
	CallsPerTurn IntRange `json:"callsPerTurn"`
	// Mix weighs the tools a call picks among (those visible to the agent);
	// absent, every visible tool weighs 1.
	Mix map[string]float64 `json:"mix,omitempty"`
	// ThinkTime is the pause before each of an agent's turns in the closed
	// loop (absent: none). The open loop's arrivals replace it.
	ThinkTime *Distribution `json:"thinkTime,omitempty"`
}

// IntRange is an inclusive range of integers.
type IntRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// The load models.
const (
	ModelClosed = "closed"
	ModelOpen   = "open"
)

// The arrival processes of the open loop.
const (
	ArrivalUniform = "uniform"
	ArrivalPoisson = "poisson"
)

// LoadModel is the load model.
type LoadModel struct {
	// Model is closed or open.
	Model string `json:"model"`
	// Rate is the open loop's arrival rate in turns per second.
	Rate float64 `json:"rate,omitempty"`
	// Arrival is the open loop's arrival process: uniform (default) or poisson.
	Arrival string `json:"arrival,omitempty"`
	// MaxInFlight bounds the open loop's turns in flight (default 10000):
	// the generator waits for one to finish, and the wait still counts in
	// the latency of the turns it delays.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// Duration stops the run after this long (0: when every turn is done).
	Duration Duration `json:"duration,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("15ms").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"15ms\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration string such as \"15ms\": %q", s)
	}
	*d = Duration(v)
	return nil
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// FieldError is one problem of a scenario: the JSON path of the field
// ("$.tools[1].latency.kind") and why it is refused.
type FieldError struct {
	Path   string
	Reason string
}

func (e FieldError) Error() string { return e.Path + ": " + e.Reason }

// ScenarioError lists the problems Parse found, in document order: every
// one, up to 100 (then a last one says how many more).
type ScenarioError struct{ Problems []FieldError }

func (e *ScenarioError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Error()
	}
	return "load: bad scenario: " + strings.Join(parts, "; ")
}

// maxProblems bounds the problems a ScenarioError lists: a 1 MiB document
// of unknown keys made a hundred thousand, each naming every known field.
const maxProblems = 100

// scenarioError lists probs, the first maxProblems of them and how many
// more there were.
func scenarioError(probs []FieldError) *ScenarioError {
	if len(probs) > maxProblems {
		more := len(probs) - maxProblems
		probs = append(probs[:maxProblems:maxProblems], FieldError{"$", fmt.Sprintf("and %d more problems", more)})
	}
	return &ScenarioError{probs}
}

// Parse decodes and checks a scenario, a JSON object or a YAML document
// (anything not starting with '{'; read as the JSON it stands for, without
// anchors, aliases or tags beyond the core ones). Unknown fields, values of
// the wrong type and semantic errors are refused with a *ScenarioError
// naming the JSON path of every bad field. Defaults are filled in
// (Defaults).
func Parse(data []byte) (*Scenario, error) {
	if len(data) > MaxScenarioBytes {
		return nil, &ScenarioError{[]FieldError{{"$", fmt.Sprintf("the document is %d bytes, more than %d", len(data), MaxScenarioBytes)}}}
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, &ScenarioError{[]FieldError{{"$", "an empty document (want a JSON or YAML scenario)"}}}
	}
	// asYAML: why a document starting with '{' that is not JSON is no YAML
	// flow mapping either.
	var asYAML error
	if trimmed[0] != '{' { // not a JSON object: YAML, read into the JSON it stands for
		j, err := yamlToJSON(data)
		if err != nil {
			return nil, &ScenarioError{[]FieldError{{"$", err.Error()}}}
		}
		data = j
	} else if !json.Valid(data) { // a YAML flow mapping ({name: x, ...}), or bad JSON: its error below
		if j, err := yamlToJSON(data); err == nil {
			data = j
		} else {
			asYAML = err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		msg := "not a JSON document: " + err.Error()
		if asYAML != nil { // name both readings: which one the author meant is theirs to say
			msg += "; read as YAML: " + asYAML.Error()
		}
		return nil, &ScenarioError{[]FieldError{{"$", msg}}}
	}
	if _, err := dec.Token(); err == nil {
		return nil, &ScenarioError{[]FieldError{{"$", "more than one JSON value"}}}
	}
	var probs []FieldError
	checkShape(tree, reflect.TypeFor[Scenario](), "$", 0, &probs)
	if len(probs) > 0 {
		return nil, scenarioError(probs)
	}
	if probs := checkLoadKeys(tree); len(probs) > 0 {
		return nil, scenarioError(probs)
	}
	var sc Scenario
	if err := json.Unmarshal(data, &sc); err != nil {
		// checkShape accepted every value, so this is a value the shape
		// check cannot see (a duration it parsed differently): report it.
		return nil, &ScenarioError{[]FieldError{{"$", err.Error()}}}
	}
	sc.Defaults()
	if probs := sc.check(); len(probs) > 0 {
		return nil, scenarioError(probs)
	}
	return &sc, nil
}

// Defaults fills in the defaults: seed 1, uniform arrivals, 10000 turns in
// flight in the open loop.
func (sc *Scenario) Defaults() {
	if sc.Seed == nil {
		one := int64(1)
		sc.Seed = &one
	}
	if sc.Load.Model == ModelOpen {
		if sc.Load.Arrival == "" {
			sc.Load.Arrival = ArrivalUniform
		}
		if sc.Load.MaxInFlight == 0 {
			sc.Load.MaxInFlight = 10000
		}
	}
}

var (
	durationType     = reflect.TypeFor[Duration]()
	distributionType = reflect.TypeFor[Distribution]()
)

// checkShape walks the decoded document along the Go type t: every object
// key must name a field (json tag, exact case), every value must have the
// field's JSON type. Problems are appended with their paths, in document
// order (object keys sorted).
func checkShape(v any, t reflect.Type, path string, depth int, probs *[]FieldError) {
	if depth > maxDepth {
		*probs = append(*probs, FieldError{path, "nested too deep"})
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	bad := func(want string) {
		*probs = append(*probs, FieldError{path, fmt.Sprintf("want %s, got %s", want, jsonKind(v))})
	}
	if t == durationType {
		s, ok := v.(string)
		if !ok {
			bad("a duration string such as \"15ms\"")
			return
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			*probs = append(*probs, FieldError{path, fmt.Sprintf("not a duration: %q (want e.g. \"15ms\", \"1.5s\")", s)})
		} else if d < 0 || strings.HasPrefix(s, "-") { // "-0s" too: the schema has no sign but +
			*probs = append(*probs, FieldError{path, "a duration must not be negative"})
		} else if d > MaxLatency {
			*probs = append(*probs, FieldError{path, fmt.Sprintf("more than %v", MaxLatency)})
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			bad("an object")
			return
		}
		fields := map[string]reflect.StructField{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" {
				fields[name] = f
			}
		}
		takes, isDist := []string(nil), t == distributionType
		if kind, ok := obj["kind"].(string); ok && isDist {
			takes = distFields[kind]
		}
		for _, k := range sortedKeys(obj) {
			f, ok := fields[k]
			if !ok {
				*probs = append(*probs, FieldError{path + "." + k, "unknown field" + suggest(k, fields)})
				continue
			}
			if takes != nil && k != "kind" && !contains(takes, k) { // even at its zero value, as the schema says
				*probs = append(*probs, FieldError{path + "." + k, fmt.Sprintf("not a field of a %s distribution (it takes %v)", obj["kind"], takes)})
				continue
			}
			if obj[k] == nil { // the schema has no null either
				*probs = append(*probs, FieldError{path + "." + k, "null is not a value here: leave the field out for its default"})
				continue
			}
			checkShape(obj[k], f.Type, path+"."+k, depth+1, probs)
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			bad("an array")
			return
		}
		for i, e := range arr {
			checkShape(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1, probs)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			bad("an object")
			return
		}
		for _, k := range sortedKeys(obj) {
			checkShape(obj[k], t.Elem(), path+"["+strconv.Quote(k)+"]", depth+1, probs)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			bad("a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			bad("true or false")
		}
	case reflect.Int, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			bad("an integer")
			return
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			*probs = append(*probs, FieldError{path, fmt.Sprintf("want an integer, got %s", n)})
		}
	case reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			bad("a number")
			return
		}
		if f, err := strconv.ParseFloat(string(n), 64); err != nil || math.IsInf(f, 0) {
			*probs = append(*probs, FieldError{path, fmt.Sprintf("want a finite number, got %s", n)})
		}
	default:
		*probs = append(*probs, FieldError{path, "unsupported field type " + t.String()})
	}
}

// checkLoadKeys refuses what the decoded struct cannot tell from an
// absent field, as the schema does: the open model's arrival given as ""
// and maxInFlight as 0 (absent, they default to uniform and 10000), and
// the closed model given rate, arrival or maxInFlight at all (even 0).
func checkLoadKeys(tree any) []FieldError {
	l, _ := tree.(map[string]any)["load"].(map[string]any)
	var probs []FieldError
	switch l["model"] {
	case ModelOpen:
		if v, ok := l["arrival"]; ok && v == "" {
			probs = append(probs, FieldError{"$.load.arrival", `want uniform or poisson, got "" (leave it out for uniform)`})
		}
		if v, ok := l["maxInFlight"].(json.Number); ok && v == "0" {
			probs = append(probs, FieldError{"$.load.maxInFlight", fmt.Sprintf("must be in [1, %d], got 0 (leave it out for 10000)", MaxAgents)})
		}
	case ModelClosed:
		for _, k := range []string{"arrival", "maxInFlight", "rate"} {
			if _, ok := l[k]; ok {
				probs = append(probs, FieldError{"$.load." + k, "only for the open model"})
			}
		}
	}
	return probs
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func suggest(k string, fields map[string]reflect.StructField) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		if strings.EqualFold(n, k) {
			return fmt.Sprintf(" (did you mean %q?)", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return " (known: " + strings.Join(names, ", ") + ")"
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + string(v)
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// check validates the meaning of a decoded scenario.
func (sc *Scenario) check() []FieldError {
	var probs []FieldError
	add := func(path, format string, args ...any) {
		probs = append(probs, FieldError{path, fmt.Sprintf(format, args...)})
	}
	if sc.Name == "" {
		add("$.name", "required")
	} else if n := utf8.RuneCountInString(sc.Name); n > maxNameRunes {
		add("$.name", "at most %d characters, got %d", maxNameRunes, n)
	} else if i := strings.IndexFunc(sc.Name, unicode.IsControl); i >= 0 {
		add("$.name", "a control character (%q at byte %d): the name is shown on terminals and pages", sc.Name[i:i+utf8.RuneLen([]rune(sc.Name[i:])[0])], i)
	}
	if sc.Registry != nil && sc.Registry.MaxParallel < 0 {
		add("$.registry.maxParallel", "must be ≥ 0 (0: the registry's default)")
	}

	// Agents.
	a := sc.Agents
	if a.Count < 1 {
		add("$.agents.count", "must be ≥ 1, got %d", a.Count)
	}
	if a.SubAgents < 0 {
		add("$.agents.subAgents", "must be ≥ 0, got %d", a.SubAgents)
	}
	if a.Depth < 0 {
		add("$.agents.depth", "must be ≥ 0, got %d", a.Depth)
	}
	if a.Depth > 0 && a.SubAgents == 0 {
		add("$.agents.depth", "a depth of %d needs subAgents ≥ 1", a.Depth)
	}
	if a.SubAgents > 0 && a.Depth == 0 {
		add("$.agents.subAgents", "subAgents needs depth ≥ 1")
	}
	if len(a.Levels) > a.Depth+1 {
		add("$.agents.levels", "%d levels for a forest %d deep (at most depth+1)", len(a.Levels), a.Depth)
	}
	if a.Count >= 1 && a.SubAgents >= 0 && a.Depth >= 0 {
		if n, ok := forestSize(a.Count, a.SubAgents, a.Depth); !ok {
			add("$.agents", "more than %d agent scopes in the forest", MaxAgents)
		} else if sc.Turns.PerAgent > 0 && int64(n)*int64(sc.Turns.PerAgent) > MaxTurns {
			add("$.turns.perAgent", "%d agents × %d turns is more than %d turns", n, sc.Turns.PerAgent, MaxTurns)
		}
	}

	// Tools.
	names := map[string]int{}
	if len(sc.Tools) == 0 {
		add("$.tools", "at least one tool is required")
	}
	if len(sc.Tools) > MaxTools {
		add("$.tools", "more than %d tools", MaxTools)
	}
	for i, t := range sc.Tools {
		p := fmt.Sprintf("$.tools[%d]", i)
		if !toolNameRe.MatchString(t.Name) {
			add(p+".name", "a tool name is 1–64 of [a-zA-Z0-9_-], got %q", t.Name)
		} else if j, dup := names[t.Name]; dup {
			add(p+".name", "duplicate of $.tools[%d].name %q", j, t.Name)
		} else {
			names[t.Name] = i
		}
		switch t.Mode {
		case ModeParallel, ModeExclusive:
			if t.ParallelFraction != nil {
				add(p+".parallelFraction", "only for mode %q", ModeByArgument)
			}
		case ModeByArgument:
			if t.ParallelFraction == nil {
				add(p+".parallelFraction", "required for mode %q", ModeByArgument)
			} else if !rate(*t.ParallelFraction) {
				add(p+".parallelFraction", "must be in [0, 1], got %v", *t.ParallelFraction)
			}
		case "":
			add(p+".mode", "required: one of parallel, exclusive, by-argument")
		default:
			add(p+".mode", "want one of parallel, exclusive, by-argument, got %q", t.Mode)
		}
		probs = append(probs, t.Latency.check(p+".latency")...)
		if !rate(t.FailureRate) {
			add(p+".failureRate", "must be in [0, 1], got %v", t.FailureRate)
		}
		if !rate(t.TimeoutRate) {
			add(p+".timeoutRate", "must be in [0, 1], got %v", t.TimeoutRate)
		}
		if rate(t.FailureRate) && rate(t.TimeoutRate) && t.FailureRate+t.TimeoutRate > 1 {
			add(p+".timeoutRate", "failureRate + timeoutRate must be ≤ 1, got %v", t.FailureRate+t.TimeoutRate)
		}
		if t.TimeoutRate > 0 && t.Timeout == 0 {
			add(p+".timeout", "required when timeoutRate > 0")
		}
		if t.OutputBytes < 0 || t.OutputBytes > MaxOutputBytes {
			add(p+".outputBytes", "must be in [0, %d], got %d", MaxOutputBytes, t.OutputBytes)
		}
	}
	for i, l := range a.Levels {
		for j, n := range l.Allow {
			if _, ok := names[n]; !ok {
				add(fmt.Sprintf("$.agents.levels[%d].allow[%d]", i, j), "no tool is named %q", n)
			}
		}
		for j, n := range l.Deny {
			if _, ok := names[n]; !ok {
				add(fmt.Sprintf("$.agents.levels[%d].deny[%d]", i, j), "no tool is named %q", n)
			}
		}
	}

	// Turns.
	tu := sc.Turns
	if tu.PerAgent < 1 {
		add("$.turns.perAgent", "must be ≥ 1, got %d", tu.PerAgent)
	}
	if tu.CallsPerTurn.Min < 1 || tu.CallsPerTurn.Min > MaxCallsPerTurn {
		add("$.turns.callsPerTurn.min", "must be in [1, %d], got %d", MaxCallsPerTurn, tu.CallsPerTurn.Min)
	}
	if tu.CallsPerTurn.Max < tu.CallsPerTurn.Min || tu.CallsPerTurn.Max > MaxCallsPerTurn {
		add("$.turns.callsPerTurn.max", "must be in [min, %d], got %d", MaxCallsPerTurn, tu.CallsPerTurn.Max)
	}
	for _, k := range sortedWeights(tu.Mix) {
		p := "$.turns.mix[" + strconv.Quote(k) + "]"
		if _, ok := names[k]; !ok {
			add(p, "no tool is named %q", k)
		}
		if w := tu.Mix[k]; w < 0 || math.IsNaN(w) {
			add(p, "a weight must be ≥ 0, got %v", w)
		}
	}
	if tu.ThinkTime != nil {
		probs = append(probs, tu.ThinkTime.check("$.turns.thinkTime")...)
	}
	// Every level must see a tool the mix can pick.
	if len(probs) == 0 {
		for d := 0; d <= a.Depth; d++ {
			if len(sc.pickable(d)) == 0 {
				add("$.agents.levels", "the agents at depth %d see no tool with a weight > 0 in $.turns.mix", d)
			}
		}
	}

	// Load.
	l := sc.Load
	switch l.Model {
	case ModelClosed:
		if l.Rate != 0 {
			add("$.load.rate", "only for the open model")
		}
		if l.Arrival != "" {
			add("$.load.arrival", "only for the open model")
		}
		if l.MaxInFlight != 0 {
			add("$.load.maxInFlight", "only for the open model")
		}
	case ModelOpen:
		if !(l.Rate > 0) || l.Rate > 1e7 {
			add("$.load.rate", "the open model needs a rate in (0, 1e7] turns per second, got %v", l.Rate)
		}
		if l.Arrival != ArrivalUniform && l.Arrival != ArrivalPoisson {
			add("$.load.arrival", "want uniform or poisson, got %q", l.Arrival)
		}
		if l.MaxInFlight < 1 || l.MaxInFlight > MaxAgents {
			add("$.load.maxInFlight", "must be in [1, %d], got %d", MaxAgents, l.MaxInFlight)
		}
		if tu.ThinkTime != nil {
			add("$.turns.thinkTime", "only for the closed model: the open model's arrivals pace the turns")
		}
	case "":
		add("$.load.model", "required: closed or open")
	default:
		add("$.load.model", "want closed or open, got %q", l.Model)
	}
	return probs
}

func rate(f float64) bool { return f >= 0 && f <= 1 }

func sortedWeights(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// forestSize is the number of scopes in the forest, false past MaxAgents.
// No product is formed that could overflow (a huge count or subAgents
// wrapped round to a small size), and a depth without sub-agents adds no
// level (it counted to the depth, 2^62 of them).
func forestSize(count, sub, depth int) (int, bool) {
	if count < 0 || sub < 0 || depth < 0 {
		return 0, false
	}
	per, level := 1, 1
	for range depth {
		if sub == 0 {
			break
		}
		if level > MaxAgents/sub {
			return 0, false
		}
		level *= sub
		per += level
		if per > MaxAgents {
			return 0, false
		}
	}
	if count > MaxAgents/per {
		return 0, false
	}
	return per * count, true
}

// AgentCount is the number of agent scopes in the forest.
func (sc *Scenario) AgentCount() int {
	n, _ := forestSize(sc.Agents.Count, sc.Agents.SubAgents, sc.Agents.Depth)
	return n
}

// visible reports whether a scope at depth d sees the global tool name
// through the restrictions of levels 0..d (they intersect, R25).
func (sc *Scenario) visible(d int, name string) bool {
	for i := 0; i <= d && i < len(sc.Agents.Levels); i++ {
		l := sc.Agents.Levels[i]
		if l.Allow != nil && !contains(l.Allow, name) {
			return false
		}
		if contains(l.Deny, name) {
			return false
		}
	}
	return true
}

func contains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

// pickable lists the indexes of the tools a scope at depth d may call, with
// a weight > 0, in the order of Tools.
func (sc *Scenario) pickable(d int) []int {
	var out []int
	for i, t := range sc.Tools {
		if sc.weight(t.Name) > 0 && sc.visible(d, t.Name) {
			out = append(out, i)
		}
	}
	return out
}

func (sc *Scenario) weight(name string) float64 {
	if sc.Turns.Mix == nil {
		return 1
	}
	return sc.Turns.Mix[name]
}
