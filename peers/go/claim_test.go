package echomq

import "testing"

// claim's reply declares its width: the fields beyond the six this peer knows are skipped, a
// width below six (or a length that is not whole jobs) is refused.
func TestParseClaimWidth(t *testing.T) {
	wait, jobs, err := parseClaim([]any{int64(-1), int64(6), "a", int64(7), int64(1), "{}", "", "c", "b", int64(8), int64(2), "{}", "{\"t\":5}", "pc"})
	if err != nil || wait != -1 || len(jobs) != 2 {
		t.Fatalf("parseClaim: %v %v %v", wait, jobs, err)
	}
	if jobs[0] != (Claimed{ID: "a", Token: 7, Attempt: 1, Payload: "{}", Flow: "c"}) || jobs[1].Flow != "pc" || jobs[1].Extras != "{\"t\":5}" {
		t.Fatalf("parseClaim: %+v", jobs)
	}
	_, jobs, err = parseClaim([]any{int64(-2), int64(7), "a", int64(7), int64(1), "{}", "", "p", "later"})
	if err != nil || len(jobs) != 1 || jobs[0].Flow != "p" {
		t.Fatalf("a wider reply: %+v %v", jobs, err)
	}
	if _, jobs, err = parseClaim([]any{int64(-2), int64(6)}); err != nil || len(jobs) != 0 {
		t.Fatalf("no jobs: %v %v", jobs, err)
	}
	for _, bad := range [][]any{{int64(-2)}, {int64(-2), int64(5)}, {int64(-1), int64(6), "a"}, {int64(-1), "a", int64(1), int64(1), "{}", ""}} {
		if _, _, err := parseClaim(bad); err == nil {
			t.Errorf("parseClaim(%v) accepted", bad)
		}
	}
}

func TestJobName(t *testing.T) {
	cases := map[string]string{"": "", `{"t":5}`: "", `{"n":"charge"}`: "charge", `{"t":5,"n":"refund é","x":1}`: "refund é", `not json`: ""}
	for extras, want := range cases {
		if got := jobName(extras); got != want {
			t.Fatalf("jobName(%q) = %q, want %q", extras, got, want)
		}
	}
}
