package provision

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// TestDefaultLayoutIsSpec4 checks the embedded definitions against SPEC §4
// written out by hand, including the root path "/*" that the migration
// plan's executions policy forgot.
func TestDefaultLayoutIsSpec4(t *testing.T) {
	l, err := DefaultLayout()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Fatalf("embedded definitions are invalid: %v", err)
	}
	pk := PartitionKey{Paths: []string{"/scope"}, Kind: "Hash", Version: 2}
	paths := func(ps ...string) []Path {
		var out []Path
		for _, p := range ps {
			out = append(out, Path{Path: p})
		}
		return out
	}
	want := Layout{
		Containers: []Container{{
			ID:           "entities",
			PartitionKey: pk,
			IndexingPolicy: IndexingPolicy{
				IndexingMode:  "consistent",
				Automatic:     ptr(true),
				IncludedPaths: paths("/*"),
				ExcludedPaths: paths("/formSchema/*", `/"_etag"/?`),
			},
		}, {
			ID:           "executions",
			PartitionKey: pk,
			DefaultTTL:   ptr[int64](1209600),
			IndexingPolicy: IndexingPolicy{
				IndexingMode:  "consistent",
				Automatic:     ptr(true),
				IncludedPaths: paths("/scope/*", "/type/*", "/status/*", "/workflowName/*", "/executedBy/*", "/startedAt/*", "/completedAt/*", "/formId/*"),
				ExcludedPaths: paths("/inputData/*", "/result/*", "/variables/*", `/"_etag"/?`, "/*"),
			},
		}},
		BlobContainers: []string{"execution-data"},
	}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("embedded layout:\n%+v\nwant:\n%+v", l, want)
	}
}

func TestAgentPlatformExample(t *testing.T) {
	data, err := os.ReadFile("examples/agent-platform.json")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Validate(); err != nil {
		t.Fatalf("example is invalid: %v", err)
	}
	type summary struct {
		id, pk     string
		ttlDays    int64
		composites int
	}
	var got []summary
	for _, c := range l.Containers {
		got = append(got, summary{c.ID, strings.Join(c.PartitionKey.Paths, ","), *c.DefaultTTL / 86400, len(c.IndexingPolicy.CompositeIndexes)})
		if *c.DefaultTTL%86400 != 0 {
			t.Errorf("%s: defaultTtl %d is not whole days", c.ID, *c.DefaultTTL)
		}
	}
	want := []summary{
		{"workflow_runs", "/workflow_id", 30, 2},
		{"agent_sessions", "/agent_id", 90, 1},
		{"metrics_daily", "/metric_date", 180, 1},
		{"tool_calls", "/tool_date", 90, 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("example containers:\n%v\nwant\n%v", got, want)
	}
	if len(l.BlobContainers) != 0 {
		t.Errorf("example has blob containers %v, want none", l.BlobContainers)
	}
}

func parseFile(t *testing.T, path string) Layout {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestAgentPlatformStateRewrite: an agent platform's definitions as first
// written (testdata/) are refused, each problem named; the example
// (examples/) is the same layout with the root path "/*" added and the
// mid-path wildcards rewritten as array elements "[]", and is accepted.
func TestAgentPlatformStateRewrite(t *testing.T) {
	original := parseFile(t, "testdata/agent-platform-state.json")
	err := original.Validate()
	ve, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("Validate() = %v, want a *ValidationError", err)
	}
	want := []string{
		`container "agent_runs": indexingPolicy.excludedPaths: path "/agents/*/result/*" has a wildcard before its last segment: "*" and "?" may only end a path ("/path/*" or "/path/?"); array elements are "[]"`,
		`container "agent_runs": indexingPolicy: the root path "/*" must be in includedPaths or excludedPaths`,
		`container "agent_state": indexingPolicy.excludedPaths: path "/checkpoints/*/state/*" has a wildcard before its last segment: "*" and "?" may only end a path ("/path/*" or "/path/?"); array elements are "[]"`,
	}
	if !slices.Equal(ve.Problems, want) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(ve.Problems, "\n"), strings.Join(want, "\n"))
	}

	example := parseFile(t, "examples/agent-platform-state.json")
	if err := example.Validate(); err != nil {
		t.Fatalf("example is invalid: %v", err)
	}
	rewritten := parseFile(t, "testdata/agent-platform-state.json")
	runs, state := &rewritten.Containers[0].IndexingPolicy, &rewritten.Containers[1].IndexingPolicy
	runs.ExcludedPaths = append([]Path{{"/*"}}, runs.ExcludedPaths...)
	runs.ExcludedPaths[1].Path = "/agents/[]/result/*"
	state.ExcludedPaths[0].Path = "/checkpoints/[]/state/*"
	if !reflect.DeepEqual(example, rewritten) {
		t.Errorf("the example is not the original with only the root path added and the wildcards rewritten:\n%+v\nwant\n%+v", example, rewritten)
	}
}

// validExecutions returns a valid definition to break one rule at a time.
func validContainer() Container {
	return Container{
		ID:           "executions",
		PartitionKey: PartitionKey{Paths: []string{"/scope"}, Kind: "Hash", Version: 2},
		DefaultTTL:   ptr[int64](1209600),
		IndexingPolicy: IndexingPolicy{
			IndexingMode:  "consistent",
			IncludedPaths: []Path{{"/status/*"}, {"/startedAt/?"}},
			ExcludedPaths: []Path{{"/*"}},
			CompositeIndexes: [][]CompositePath{
				{{Path: "/workspace_id", Order: "ascending"}, {Path: "/startedAt", Order: "descending"}},
			},
		},
	}
}

// TestValidateRules has one case per §4 rule (and the tool's own), each
// with the exact message, which names the container and the rule.
func TestValidateRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Container)
		want   string
	}{
		{"missing root path", func(c *Container) { c.IndexingPolicy.ExcludedPaths = []Path{{"/result/*"}} },
			`container "executions": indexingPolicy: the root path "/*" must be in includedPaths or excludedPaths`},
		{"composite index with one path", func(c *Container) { c.IndexingPolicy.CompositeIndexes[0] = c.IndexingPolicy.CompositeIndexes[0][:1] },
			`container "executions": indexingPolicy.compositeIndexes[0]: a composite index needs at least 2 paths, it has 1`},
		{"composite index with a wildcard path", func(c *Container) { c.IndexingPolicy.CompositeIndexes[0][1].Path = "/startedAt/?" },
			`container "executions": indexingPolicy.compositeIndexes[0]: path "/startedAt/?" must be a property path without wildcards such as "/workspace_id" (no "/?" or "/*"; array elements as "[]")`},
		{"composite index with a subtree path", func(c *Container) { c.IndexingPolicy.CompositeIndexes[0][0].Path = "/result/*" },
			`container "executions": indexingPolicy.compositeIndexes[0]: path "/result/*" must be a property path without wildcards such as "/workspace_id" (no "/?" or "/*"; array elements as "[]")`},
		{"composite index with a bad order", func(c *Container) { c.IndexingPolicy.CompositeIndexes[0][1].Order = "desc" },
			`container "executions": indexingPolicy.compositeIndexes[0]: path "/startedAt" has order "desc", it must be ascending or descending`},
		{"TTL 0", func(c *Container) { c.DefaultTTL = ptr[int64](0) },
			`container "executions": defaultTtl 0: must be absent (no expiry), -1 (expiry per item) or 1..2147483647 seconds`},
		{"TTL -2", func(c *Container) { c.DefaultTTL = ptr[int64](-2) },
			`container "executions": defaultTtl -2: must be absent (no expiry), -1 (expiry per item) or 1..2147483647 seconds`},
		{"TTL beyond int32", func(c *Container) { c.DefaultTTL = ptr[int64](2147483648) },
			`container "executions": defaultTtl 2147483648: must be absent (no expiry), -1 (expiry per item) or 1..2147483647 seconds`},
		{"bad indexing mode", func(c *Container) { c.IndexingPolicy.IndexingMode = "lazy" },
			`container "executions": indexingPolicy.indexingMode "lazy" must be consistent or none`},
		{"partition key path", func(c *Container) { c.PartitionKey.Paths = []string{"/scope/*"} },
			`container "executions": partitionKey path "/scope/*" must be a property path such as "/scope"`},
		{"throughput", func(c *Container) { c.Throughput = ptr[int32](450) },
			`container "executions": throughput 450: manual throughput must be at least 400 RU/s, in steps of 100`},
		{"bad id", func(c *Container) { c.ID = "a/b" },
			`container "a/b": id must be 1-255 characters without "/", "\", "?", "#" or surrounding spaces`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validContainer()
			tc.change(&c)
			err := wantOneProblem(t, c, tc.want)
			if got, want := err.Error(), "invalid container definitions:\n  "+tc.want; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
		})
	}
}

// TestValidateRefusesIndexPathsTheServiceRefuses has one case per form of
// included or excluded path that Cosmos DB refuses, each added to a valid
// definition, with the exact message: the container, the path and the
// rule.
func TestValidateRefusesIndexPathsTheServiceRefuses(t *testing.T) {
	const (
		inc = "includedPaths"
		exc = "excludedPaths"
	)
	for _, tc := range []struct {
		name, field, path, want string
	}{
		{"no leading slash", exc, "result/*",
			`container "executions": indexingPolicy.excludedPaths: path "result/*" must start with "/"`},
		{"no wildcard at the end", inc, "/status",
			`container "executions": indexingPolicy.includedPaths: path "/status" must end in "/?" (the value at the path) or "/*" (everything below it)`},
		{"wildcard glued to a name at the end", inc, "/status*",
			`container "executions": indexingPolicy.includedPaths: path "/status*" must end in "/?" (the value at the path) or "/*" (everything below it)`},
		{"trailing slash", inc, "/status/",
			`container "executions": indexingPolicy.includedPaths: path "/status/" must end in "/?" (the value at the path) or "/*" (everything below it)`},
		{"* in the middle", exc, "/agents/*/result/*",
			`container "executions": indexingPolicy.excludedPaths: path "/agents/*/result/*" has a wildcard before its last segment: "*" and "?" may only end a path ("/path/*" or "/path/?"); array elements are "[]"`},
		{"? in the middle", inc, "/agents/?/name/?",
			`container "executions": indexingPolicy.includedPaths: path "/agents/?/name/?" has a wildcard before its last segment: "*" and "?" may only end a path ("/path/*" or "/path/?"); array elements are "[]"`},
		{"wildcard inside a name in the middle", exc, "/agent*/result/*",
			`container "executions": indexingPolicy.excludedPaths: path "/agent*/result/*" has a wildcard before its last segment: "*" and "?" may only end a path ("/path/*" or "/path/?"); array elements are "[]"`},
		{"array wildcard [*]", exc, "/tags/[*]/?",
			`container "executions": indexingPolicy.excludedPaths: path "/tags/[*]/?" has a wildcard before its last segment: "*" and "?" may only end a path ("/path/*" or "/path/?"); array elements are "[]"`},
		{"array position outside a tuple", inc, "/tags/[0]/?",
			`container "executions": indexingPolicy.includedPaths: path "/tags/[0]/?" has the segment "[0]": the elements of an array are addressed all at once as "[]"`},
		{"empty segment", inc, "/a//b/?",
			`container "executions": indexingPolicy.includedPaths: path "/a//b/?" has an empty segment ("//")`},
		{"unclosed quote", exc, `/"path-abc/?`,
			`container "executions": indexingPolicy.excludedPaths: path "/\"path-abc/?" has an unclosed '"' or '{'`},
		{"both included and excluded", exc, "/status/*",
			`container "executions": indexingPolicy: path "/status/*" is in both includedPaths and excludedPaths: a path is either indexed or not`},
		{"the root both included and excluded", inc, "/*",
			`container "executions": indexingPolicy: path "/*" is in both includedPaths and excludedPaths: a path is either indexed or not`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validContainer()
			if tc.field == inc {
				c.IndexingPolicy.IncludedPaths = append(c.IndexingPolicy.IncludedPaths, Path{tc.path})
			} else {
				c.IndexingPolicy.ExcludedPaths = append(c.IndexingPolicy.ExcludedPaths, Path{tc.path})
			}
			wantOneProblem(t, c, tc.want)
		})
	}
}

// wantOneProblem checks that a layout of the one container c fails
// validation with exactly the problem want, and returns the error.
func wantOneProblem(t *testing.T, c Container, want string) error {
	t.Helper()
	err := Layout{Containers: []Container{c}}.Validate()
	ve, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("Validate() = %v, want a *ValidationError", err)
	}
	if !slices.Equal(ve.Problems, []string{want}) {
		t.Errorf("problems:\n%q\nwant\n%q", ve.Problems, want)
	}
	return err
}

// TestValidateAcceptsIndexPathsTheServiceAccepts: the forms of Cosmos DB's
// indexing policy documentation, which the rules above must not refuse.
func TestValidateAcceptsIndexPathsTheServiceAccepts(t *testing.T) {
	for _, path := range []string{
		"/headquarters/employees/?",
		"/locations/[]/country/?",
		"/agents/[]/result/*",
		"/headquarters/*",
		`/"_etag"/?`,
		`/"path-abc"/?`,
		`/"a/b*"/?`,
		"/events/[]/{name, category}/?",
		"/events/[]/{name/first, name/last}/?",
		"/city/[1]/events/[]/{name, category}/?",
	} {
		t.Run(path, func(t *testing.T) {
			c := validContainer()
			c.IndexingPolicy.IncludedPaths = append(c.IndexingPolicy.IncludedPaths, Path{path})
			if err := (Layout{Containers: []Container{c}}).Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
		})
	}
	c := validContainer()
	c.IndexingPolicy.CompositeIndexes = append(c.IndexingPolicy.CompositeIndexes,
		[]CompositePath{{Path: "/familyname"}, {Path: "/children/[]/age", Order: "descending"}})
	if err := (Layout{Containers: []Container{c}}).Validate(); err != nil {
		t.Errorf("composite index over an array: Validate() = %v, want nil", err)
	}
}

func TestValidateAcceptsTheEdgesOfEachRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Container)
	}{
		{"no TTL", func(c *Container) { c.DefaultTTL = nil }},
		{"TTL -1", func(c *Container) { c.DefaultTTL = ptr[int64](-1) }},
		{"TTL 1", func(c *Container) { c.DefaultTTL = ptr[int64](1) }},
		{"TTL max", func(c *Container) { c.DefaultTTL = ptr[int64](2147483647) }},
		{"root path included", func(c *Container) {
			c.IndexingPolicy.IncludedPaths = []Path{{"/*"}}
			c.IndexingPolicy.ExcludedPaths = []Path{{"/result/*"}}
		}},
		{"nested composite path, order defaulted", func(c *Container) {
			c.IndexingPolicy.CompositeIndexes[0][0] = CompositePath{Path: "/address/city"}
		}},
		{"order case", func(c *Container) { c.IndexingPolicy.CompositeIndexes[0][1].Order = "Descending" }},
		{"mode case", func(c *Container) { c.IndexingPolicy.IndexingMode = "Consistent" }},
		{"mode none", func(c *Container) {
			c.IndexingPolicy = IndexingPolicy{IndexingMode: "none", Automatic: ptr(false)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validContainer()
			tc.change(&c)
			if err := (Layout{Containers: []Container{c}}).Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
		})
	}
}

func TestValidateLayout(t *testing.T) {
	a, b := validContainer(), validContainer()
	b.DefaultTTL = ptr[int64](0)
	err := Layout{Containers: []Container{a, b, {}}, BlobContainers: []string{"Execution_Data"}}.Validate()
	ve, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("Validate() = %v, want a *ValidationError", err)
	}
	want := []string{
		`container "executions": defined twice`,
		`container "executions": defaultTtl 0: must be absent (no expiry), -1 (expiry per item) or 1..2147483647 seconds`,
		`container #3: id is missing`,
		`container #3: partitionKey.paths is empty`,
		`container #3: indexingPolicy: the root path "/*" must be in includedPaths or excludedPaths`,
		`blob container "Execution_Data": name must be 3-63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit`,
	}
	if !slices.Equal(ve.Problems, want) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(ve.Problems, "\n"), strings.Join(want, "\n"))
	}
	if err := (Layout{}).Validate(); err == nil || err.Error() != "invalid container definitions:\n  no containers defined" {
		t.Errorf("empty layout: %v", err)
	}
}

func TestParseRejectsUnknownFields(t *testing.T) {
	_, err := Parse([]byte(`{"containers":[{"id":"a","partitionKey":{"paths":["/a"]},"ttl":5}]}`))
	if err == nil || err.Error() != `container definitions: json: unknown field "ttl"` {
		t.Errorf("Parse() = %v", err)
	}
	_, err = Parse([]byte(`{"containers":[]} {}`))
	if err == nil || err.Error() != "container definitions: more than one JSON value" {
		t.Errorf("Parse() = %v", err)
	}
}
