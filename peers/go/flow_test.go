package echomq

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

func tid(n int) string { return fmt.Sprintf("job%011d", n) }

// goldenTree is the flow of testdata/plan-golden.txt: three queues, nested, with own options, a
// payload with HTML characters and one with U+2028 (JSON.stringify leaves both raw).
func goldenTree() FlowTree {
	return FlowTree{Q: "a", ID: tid(1), P: `{"root":true,"s":"<&>"}`, Pol: "fail", Key: "0", Kids: []FlowTree{
		{Q: "a", ID: tid(2), P: "1", A: 5, B: "e:100", Pol: "ignore", Key: "k1", Kids: []FlowTree{
			{Q: "b", ID: tid(3), P: `"x y"`, Pol: "continue", Key: "deep", Kids: []FlowTree{
				{Q: "b", ID: tid(4), P: "null", Pol: "fail", Key: "0"},
				{Q: "c", ID: tid(5), P: "{}", Pol: "fail", Key: "1", Kids: []FlowTree{}},
			}},
		}},
		{Q: "c", ID: tid(6), P: "[1,2]", B: "f:0", Pol: "fail", Key: "k2"},
		{Q: "a", ID: tid(7), P: "\"\u2028é\"", Pol: "fail", Key: "k3"},
	}}
}

// tsPlan is the JSON the TypeScript planQueue answers (src/queue/flows/flow-plan.ts).
type tsPlan struct {
	Nodes []struct {
		ID          string `json:"id"`
		Payload     string `json:"payload"`
		Parent      string `json:"parent"`
		MaxAttempts int    `json:"maxAttempts"`
		Backoff     string `json:"backoff"`
	} `json:"nodes"`
	Edges []struct {
		ParentID   string `json:"parentId"`
		ChildID    string `json:"childId"`
		ChildQueue string `json:"childQueue"`
		Policy     string `json:"policy"`
		Key        string `json:"key"`
		Entry      string `json:"entry"`
	} `json:"edges"`
	Crosses int `json:"crosses"`
}

func (p tsPlan) plan() FlowPlan {
	var out FlowPlan
	for _, n := range p.Nodes {
		out.Nodes = append(out.Nodes, FlowNode{ID: n.ID, Payload: n.Payload, Parent: n.Parent, MaxAttempts: n.MaxAttempts, Backoff: n.Backoff})
	}
	for _, e := range p.Edges {
		out.Edges = append(out.Edges, FlowEdge{ParentID: e.ParentID, ChildID: e.ChildID, ChildQueue: e.ChildQueue, Policy: e.Policy, Key: e.Key, Entry: e.Entry})
	}
	out.Crosses = p.Crosses
	return out
}

// PlanQueue answers exactly what the TypeScript planner answers for the same trees, creation
// entry texts byte for byte: the root's queue, and a relayed subtree in another queue.
func TestPlanQueueMatchesTypeScript(t *testing.T) {
	b, err := os.ReadFile("testdata/plan-golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	tree := goldenTree()
	cases := []struct {
		queue string
		root  FlowRoot
	}{
		{"a", FlowRoot{Tree: tree, Up: ""}},
		{"b", FlowRoot{Tree: tree.Kids[0].Kids[0], Up: "a " + tid(2)}},
	}
	for i, c := range cases {
		var want tsPlan
		if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
			t.Fatal(err)
		}
		got, err := PlanQueue(c.queue, []FlowRoot{c.root})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want.plan()) {
			t.Errorf("queue %s:\n got %+v\nwant %+v", c.queue, got, want.plan())
		}
	}
}

// A creation entry round-trips through ParseCreate, and the relayed subtree plans as the
// creator's edge said.
func TestParseCreate(t *testing.T) {
	tree := goldenTree()
	text, err := CreateEntryText("b", CreateEntry{Up: "a " + tid(2), Tree: tree.Kids[0].Kids[0]})
	if err != nil {
		t.Fatal(err)
	}
	q, e, err := ParseCreate(text)
	if err != nil || q != "b" || e.Up != "a "+tid(2) || e.Tree.ID != tid(3) || len(e.Tree.Kids) != 2 || e.Tree.Kids[0].Kids == nil {
		t.Fatalf("ParseCreate: %q %+v %v", q, e, err)
	}
	// Members it does not know are ignored; member order is not significant.
	q, e, err = ParseCreate(`c q1 {"tree":{"kids":[],"id":"` + tid(9) + `","q":"q1","p":"{}","pol":"fail","key":"0","later":1},"up":"q0 ` + tid(8) + `","x":[1]}`)
	if err != nil || q != "q1" || e.Tree.ID != tid(9) || e.Up != "q0 "+tid(8) {
		t.Fatalf("ParseCreate (reordered): %q %+v %v", q, e, err)
	}
	for _, bad := range []string{"", "c", "c q1", "c q1 ", "c q1 {", "c bad{name} {}", "d q1 {}", `c q1 {"up":"x"}`} {
		if _, _, err := ParseCreate(bad); err == nil {
			t.Errorf("ParseCreate(%q) accepted", bad)
		}
	}
}

// The last field of a delivery runs to the end of the text: spaces, newlines, empty.
func TestParseDeliver(t *testing.T) {
	cases := []struct {
		text string
		q    string
		d    Delivery
	}{
		{"d p " + tid(1) + " " + tid(2) + " done {\"a\": 1, \"b\": \"x y\"}", "p", Delivery{tid(1), tid(2), "done", "{\"a\": 1, \"b\": \"x y\"}"}},
		{"d p " + tid(1) + " " + tid(2) + " done ", "p", Delivery{tid(1), tid(2), "done", ""}},
		{"d p " + tid(1) + " " + tid(2) + " failed Error: boom\n  at line 2", "p", Delivery{tid(1), tid(2), "failed", "Error: boom\n  at line 2"}},
		{"d p " + tid(1) + " " + tid(2) + " cancelled cancelled", "p", Delivery{tid(1), tid(2), "cancelled", "cancelled"}},
		{"d p " + tid(1) + " " + tid(2) + " failed child x failed:  two  spaces ", "p", Delivery{tid(1), tid(2), "failed", "child x failed:  two  spaces "}},
	}
	for _, c := range cases {
		q, d, err := ParseDeliver(c.text)
		if err != nil || q != c.q || d != c.d {
			t.Errorf("ParseDeliver(%q) = %q %+v %v", c.text, q, d, err)
		}
	}
	for _, bad := range []string{"", "d", "d p a b done", "d p a b lost text", "x p a b done ", "d  a b done ", "d p{ a b done "} {
		if _, _, err := ParseDeliver(bad); err == nil {
			t.Errorf("ParseDeliver(%q) accepted", bad)
		}
	}
}

func TestParseCancel(t *testing.T) {
	q, id, err := ParseCancel("x q1 " + tid(4))
	if err != nil || q != "q1" || id != tid(4) {
		t.Fatalf("ParseCancel: %q %q %v", q, id, err)
	}
	for _, bad := range []string{"", "x", "x q1", "x q1 ", "x q1 a b", "c q1 a", "x q{1} a"} {
		if _, _, err := ParseCancel(bad); err == nil {
			t.Errorf("ParseCancel(%q) accepted", bad)
		}
	}
}

// A parent's row gives its children, sorted by key, with the outcomes that arrived.
func TestChildResults(t *testing.T) {
	row := map[string]string{
		"status": "active", "deps": "0",
		"k:" + tid(2): "b ignore k2", "r:" + tid(2): "failed Error: no",
		"k:" + tid(1): "a fail k1", "r:" + tid(1): "done {\"v\": 1}",
		"k:" + tid(3): "c continue k3", "r:" + tid(3): "done ",
		"k:" + tid(4): "c fail k4",
	}
	got := ChildResults(row)
	want := []ChildResult{
		{ID: tid(1), Queue: "a", Policy: "fail", Key: "k1", Outcome: "done", Text: "{\"v\": 1}"},
		{ID: tid(2), Queue: "b", Policy: "ignore", Key: "k2", Outcome: "failed", Text: "Error: no"},
		{ID: tid(3), Queue: "c", Policy: "continue", Key: "k3", Outcome: "done", Text: ""},
		{ID: tid(4), Queue: "c", Policy: "fail", Key: "k4"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ChildResults:\n got %+v\nwant %+v", got, want)
	}
}

func TestFlowFlags(t *testing.T) {
	for flow, want := range map[string][2]bool{"": {false, false}, "c": {true, false}, "p": {false, true}, "pc": {true, true}} {
		if IsChild(flow) != want[0] || IsReleasedParent(flow) != want[1] {
			t.Errorf("flags of %q", flow)
		}
	}
}

// A delayed leaf (the creation entry's "dl" / "at", docs/protocol.md §10) plans its run time.
func TestPlanQueueRunTimes(t *testing.T) {
	_, e, err := ParseCreate(`c q1 {"up":"q0 ` + tid(8) + `","tree":{"q":"q1","id":"` + tid(9) + `","p":"{}","pol":"fail","key":"0","dl":60000,"kids":[]}}`)
	if err != nil || e.Tree.Dl != 60000 {
		t.Fatalf("ParseCreate: %+v %v", e, err)
	}
	plan, err := PlanQueue("q1", []FlowRoot{{Tree: e.Tree, Up: e.Up}})
	if err != nil || plan.Nodes[0].Run != "d:60000" {
		t.Fatalf("PlanQueue: %+v %v", plan, err)
	}
	if runOf(FlowTree{At: 5}) != "t:5" || runOf(FlowTree{}) != "" || runOf(FlowTree{Dl: 7, Ln: "x"}) != "d:7 g:x" || runOf(FlowTree{Pr: 3}) != "p:3" {
		t.Fatal("runOf")
	}
}
