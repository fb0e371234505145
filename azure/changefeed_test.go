package azure_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/faultproxy"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
)

// feedFixture is a cosmosFixture whose proxy simulates the change feed,
// and a DocReader through it whose requests are recorded and paced.
type feedFixture struct {
	*cosmosFixture
	reader  *azure.DocReader
	client  *azcosmos.Client
	pacer   *azure.Pacer
	trace   *recorder.Transport
	mu      sync.Mutex
	retries []azure.RetryEvent
}

func newFeedFixture(t *testing.T, cfg faultproxy.Config) *feedFixture {
	t.Helper()
	if cfg.ChangeFeed == nil {
		cfg.ChangeFeed = &faultproxy.ChangeFeed{}
	}
	f := &feedFixture{cosmosFixture: newCosmosFixture(t, &cfg), pacer: azure.NewPacer(azure.PacerOptions{}), trace: recorder.New(nil)}
	acct := testenv.Cosmos(t)
	acct.Endpoint = f.proxy.URL()
	client, err := azure.NewCosmosClient(acct, azure.Options{Transport: f.trace, Pacer: f.pacer, Retry: azure.RetryOptions{
		BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		OnRetry: func(e azure.RetryEvent) {
			f.mu.Lock()
			f.retries = append(f.retries, e)
			f.mu.Unlock()
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	f.client = client
	if f.reader, err = azure.NewDocReader(client, f.db); err != nil {
		t.Fatal(err)
	}
	return f
}

// put writes a doc straight to the stand-in (as the application would).
func (f *feedFixture) put(t *testing.T, id string, n int) {
	t.Helper()
	c, _ := f.direct.NewContainer(f.db, "entities")
	scope := "org-" + id[len(id)-1:]
	if _, err := c.UpsertItem(context.Background(), azcosmos.NewPartitionKeyString(scope), testDoc(id, scope, n), nil); err != nil {
		t.Fatalf("upsert %s: %v", id, err)
	}
}

// changes runs one pass and returns the ids it got (sorted), the n of each,
// and the position to resume from.
func (f *feedFixture) changes(t *testing.T, from string, pageSize int) (ids []string, ns map[string]float64, next string) {
	t.Helper()
	ns = map[string]float64{}
	next, err := f.reader.Changes(context.Background(), "entities", from, pageSize, func(doc []byte) error {
		var d struct {
			ID   string  `json:"id"`
			N    float64 `json:"n"`
			ETag string  `json:"_etag"`
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			return err
		}
		if d.ETag == "" {
			return fmt.Errorf("doc %s without its system properties: %s", d.ID, doc)
		}
		if _, dup := ns[d.ID]; dup {
			return fmt.Errorf("doc %s twice in one pass", d.ID)
		}
		ids = append(ids, d.ID)
		ns[d.ID] = d.N
		return nil
	})
	if err != nil {
		t.Fatalf("changes from %.60s: %v", from, err)
	}
	if next == "" {
		t.Fatal("no position to resume from")
	}
	slices.Sort(ids)
	return ids, ns, next
}

// untilNextSecond sleeps to the start of the next second and returns it:
// _ts and If-Modified-Since have one-second precision.
func untilNextSecond() time.Time {
	t := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(t) + 20*time.Millisecond)
	return t
}

func TestChangesSinceThenFromTheContinuation(t *testing.T) {
	f := newFeedFixture(t, faultproxy.Config{Budget: &faultproxy.Budget{RUPerSecond: 1e6}})
	for i := range 3 {
		f.put(t, fmt.Sprintf("old-%d", i), i)
	}
	since := untilNextSecond()
	for i := range 4 {
		f.put(t, fmt.Sprintf("new-%d", i), 10+i)
	}
	// A start time within a second is rounded down to it (the precision of
	// _ts and If-Modified-Since): the new docs, written in that second,
	// come; the old ones, written before it, do not.
	ids, _, pos := f.changes(t, azure.ChangeFeedSince(since.Add(900*time.Millisecond)), 0)
	if fmt.Sprint(ids) != "[new-0 new-1 new-2 new-3]" {
		t.Fatalf("changes since %s: %v, want the four new docs", since.Format(time.RFC3339), ids)
	}

	f.put(t, "new-4", 14)
	f.put(t, "old-1", 100) // an old doc changed
	f.put(t, "new-5", 15)
	ids, ns, pos2 := f.changes(t, pos, 0)
	if fmt.Sprint(ids) != "[new-4 new-5 old-1]" || ns["old-1"] != 100 {
		t.Fatalf("changes from the continuation: %v %v, want [new-4 new-5 old-1] with old-1 at n=100", ids, ns)
	}

	ids, _, pos3 := f.changes(t, pos2, 0)
	if len(ids) != 0 {
		t.Fatalf("an idle pass got %v", ids)
	}
	// The position of an idle pass goes on from where it was.
	f.put(t, "new-6", 16)
	if ids, _, _ := f.changes(t, pos3, 0); fmt.Sprint(ids) != "[new-6]" {
		t.Errorf("after an idle pass: %v, want [new-6]", ids)
	}
	// An old position reads again what followed it.
	if ids, _, _ := f.changes(t, pos, 0); fmt.Sprint(ids) != "[new-4 new-5 new-6 old-1]" {
		t.Errorf("from the first pass's position again: %v", ids)
	}

	// The pacer saw every request (it sits in the same pipeline as the
	// recorder), and every change-feed read was charged by the simulated
	// account and counted for the container.
	feedReads := f.trace.CountPath(http.MethodGet, "/dbs/"+f.db+"/colls/entities/docs")
	st := f.pacer.Stats()
	if st.Requests != int64(len(f.trace.Requests())) || feedReads < 5 {
		t.Errorf("pacer counted %d requests, the transport carried %d (%d change-feed reads)", st.Requests, len(f.trace.Requests()), feedReads)
	}
	ru, charged, _, _, _ := faultproxy.Totals(f.proxy.Ledger(), "client", false)
	if charged != feedReads || st.ByContainer["entities"] < ru {
		t.Errorf("the account charged %v RU for %d reads (%d change-feed reads sent); the pacer counted %v for the container",
			ru, charged, feedReads, st.ByContainer["entities"])
	}
}

// Several feed ranges, pages smaller than the changes: every doc once per
// pass, over every range, and the next pass only what changed.
func TestChangesOverSeveralRangesAndPages(t *testing.T) {
	f := newFeedFixture(t, faultproxy.Config{ChangeFeed: &faultproxy.ChangeFeed{Ranges: 3}})
	c, _ := f.client.NewContainer(f.db, "entities")
	frs, err := c.ReadFeedRanges(context.Background(), nil)
	if err != nil || len(frs) != 3 || frs[0].MinInclusive != "" || frs[2].MaxExclusive != "FF" {
		t.Fatalf("ReadFeedRanges through the proxy: %+v, %v; want 3 ranges from \"\" to FF", frs, err)
	}
	var want []string
	for i := range 15 {
		id := fmt.Sprintf("d%02d", i)
		f.put(t, id, i)
		want = append(want, id)
	}
	ids, _, pos := f.changes(t, "", 2)
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("from the beginning in pages of 2: %v, want %v", ids, want)
	}
	if n := f.trace.CountPath(http.MethodGet, "/dbs/"+f.db+"/colls/entities/docs"); n < 8+3 {
		t.Errorf("%d change-feed reads for 15 docs in pages of 2 over 3 ranges, want ≥ 11", n)
	}
	changed := []string{"d03", "d07", "d11", "d14"}
	for i, id := range changed {
		f.put(t, id, 100+i)
	}
	if ids, ns, _ := f.changes(t, pos, 2); fmt.Sprint(ids) != fmt.Sprint(changed) || ns["d14"] != 103 {
		t.Errorf("after changing %v: %v %v", changed, ids, ns)
	}
}

// A throttled change-feed read is retried by our retry policy (not failed),
// and the pacer hears the 429s.
func TestChangesRetriesThrottledReads(t *testing.T) {
	f := newFeedFixture(t, faultproxy.Config{
		Match: faultproxy.IsChangeFeedRead,
		Rules: []faultproxy.Rule{{Kind: faultproxy.Throttle, Share: 1, Count: 6, RetryAfter: 5 * time.Millisecond}},
	})
	f.put(t, "a1", 1)
	f.put(t, "b2", 2)
	ids, _, _ := f.changes(t, "", 0)
	if fmt.Sprint(ids) != "[a1 b2]" {
		t.Fatalf("through six 429s: %v", ids)
	}
	f.mu.Lock()
	retries := slices.Clone(f.retries)
	f.mu.Unlock()
	if len(retries) != 6 || !strings.Contains(retries[0].Op, "Cosmos DB GET") || !strings.HasSuffix(retries[0].Op, "/colls/entities/docs") {
		t.Errorf("retries %+v, want 6 of the change-feed GET", retries)
	}
	if st := f.pacer.Stats(); st.Throttled != 6 {
		t.Errorf("pacer heard %d 429s, want 6", st.Throttled)
	}
}

func TestChangesErrors(t *testing.T) {
	f := newFeedFixture(t, faultproxy.Config{})
	f.put(t, "a1", 1)
	ctx := context.Background()
	_, _, pos := f.changes(t, "", 0)

	// A position of another container, or not a position at all.
	for _, bad := range []string{`{"v":1,"container":"other/entities"}`, "etag-7", `{"v":2}`} {
		_, err := f.reader.Changes(ctx, "entities", bad, 0, func([]byte) error { return nil })
		if !errors.Is(err, azure.ErrBadChangePosition) {
			t.Errorf("position %s: %v, want ErrBadChangePosition", bad, err)
		}
	}
	_, err := f.reader.Changes(ctx, "executions", pos, 0, func([]byte) error { return nil })
	if !errors.Is(err, azure.ErrBadChangePosition) || !strings.Contains(err.Error(), "entities") {
		t.Errorf("the position of entities used for executions: %v", err)
	}

	// A missing container: a *ResourceError naming it, with the 404.
	_, err = f.reader.Changes(ctx, "nope", "", 0, func([]byte) error { return nil })
	var re *azure.ResourceError
	if !errors.As(err, &re) || re.Kind != azure.KindContainer || re.Name != f.db+"/nope" || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing container: %v (%#v)", err, re)
	}

	// fn's error is returned as it is, with no position.
	stop := errors.New("stop")
	f.put(t, "b2", 2)
	next, err := f.reader.Changes(ctx, "entities", pos, 0, func([]byte) error { return stop })
	if err != stop || next != "" {
		t.Errorf("fn failed: %q, %v; want \"\" and fn's error", next, err)
	}
	// ... and the pass can be run again from the same position.
	if ids, _, _ := f.changes(t, pos, 0); fmt.Sprint(ids) != "[b2]" {
		t.Errorf("again after fn's error: %v, want [b2]", ids)
	}
}

// CheckChangeFeed: through the proxy that serves a change feed it finds
// one; on the stand-in itself (no change feed) it says so with an error
// wrapping ErrNoChangeFeed that names the container and carries no Go
// decoder message; a container that does not exist is not its to
// report.
func TestCheckChangeFeed(t *testing.T) {
	f := newFeedFixture(t, faultproxy.Config{})
	ctx := context.Background()
	if err := f.reader.CheckChangeFeed(ctx, "entities"); err != nil {
		t.Errorf("through the change-feed proxy: %v", err)
	}
	direct, err := azure.NewDocReader(f.direct, f.db)
	if err != nil {
		t.Fatal(err)
	}
	err = direct.CheckChangeFeed(ctx, "entities")
	var re *azure.ResourceError
	if !errors.Is(err, azure.ErrNoChangeFeed) || !errors.As(err, &re) || re.Name != f.db+"/entities" {
		t.Fatalf("on the stand-in: %v, want ErrNoChangeFeed naming %s/entities", err, f.db)
	}
	if msg := err.Error(); strings.Contains(msg, "json") || strings.Contains(msg, "Go struct") || strings.Contains(msg, "unmarshal") {
		t.Errorf("the error shows a decoder message: %s", msg)
	}
	if err := direct.CheckChangeFeed(ctx, "no-such-container"); err != nil {
		t.Errorf("a missing container: %v, want nil", err)
	}
}

// reopen closes f's client and reads through a new one, as a process
// started again does: the SDK's partition key range cache, shared by the
// clients of an endpoint in a process, starts empty.
func (f *feedFixture) reopen(t *testing.T) {
	t.Helper()
	f.client.Close()
	acct := testenv.Cosmos(t)
	acct.Endpoint = f.proxy.URL()
	client, err := azure.NewCosmosClient(acct, azure.Options{Transport: f.trace, Pacer: f.pacer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	f.client = client
	if f.reader, err = azure.NewDocReader(client, f.db); err != nil {
		t.Fatal(err)
	}
}

// putIn writes n new docs named prefix-00, … and returns their ids, and
// for each partition key range the ids that fell into it.
func (f *feedFixture) putIn(t *testing.T, prefix string, n int) (ids []string, byRange map[string][]string) {
	t.Helper()
	byRange = map[string][]string{}
	for i := range n {
		id := fmt.Sprintf("%s-%02d", prefix, i)
		f.put(t, id, i)
		rng, err := f.proxy.RangeOf(f.db, "entities", id)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		byRange[rng] = append(byRange[rng], id)
	}
	return ids, byRange
}

// Changes follows a container's partition key ranges through splits
// (the service answers a read of a split range 410 with substatus 1002):
// a split in the middle of a pass, between two pages of the range, loses
// and repeats nothing; the next pass, from the position saved before the
// split, reads each later change once, in both children; a position saved
// before a further split goes on in the new children whether the client
// still knows the old ranges (it gets the 410) or starts afresh (its
// first read of the ranges lists the children).
func TestChangesFollowASplit(t *testing.T) {
	f := newFeedFixture(t, faultproxy.Config{ChangeFeed: &faultproxy.ChangeFeed{Ranges: 2, PageBytes: 1}})
	want, dByRange := f.putIn(t, "d", 24)
	if len(dByRange["0"]) < 6 || len(dByRange["1"]) == 0 {
		t.Fatalf("docs by range %v: the test wants at least 6 in range 0 and some in range 1", dByRange)
	}

	// A pass a doc a page: range 0 splits after its third page.
	split, err := f.proxy.SplitAfter(f.db, "entities", "0", 3)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, pos := f.changes(t, "", 0)
	var children [2]string
	select {
	case children = <-split:
	default:
	}
	if children[0] == "" || f.proxy.Gone() == 0 {
		t.Fatalf("the split during the pass: children %v, %d reads answered 410", children, f.proxy.Gone())
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("the pass through the split got (each once)\n%v\nwant\n%v", ids, want)
	}

	// After it: new docs in both children and in range 1, and a change to
	// a doc of the split range.
	added, nByRange := f.putIn(t, "n", 24)
	for _, c := range children {
		if len(nByRange[c]) == 0 {
			t.Fatalf("no new doc in child %s: %v", c, nByRange)
		}
	}
	changed := dByRange["0"][0]
	f.put(t, changed, 100)
	want = append(slices.Clone(added), changed)
	slices.Sort(want)
	ids, ns, pos2 := f.changes(t, pos, 0)
	if !slices.Equal(ids, want) || ns[changed] != 100 {
		t.Fatalf("from the position before the split: %v, want %v (%s at n=100)", ids, want, changed)
	}

	// A further split between passes: the client's ranges are stale, the
	// child's read is answered 410, and the pass goes on in its children.
	if _, err := f.proxy.Split(f.db, "entities", children[0]); err != nil {
		t.Fatal(err)
	}
	gone := f.proxy.Gone()
	added, mByRange := f.putIn(t, "m", 16)
	changed = nByRange[children[0]][0]
	f.put(t, changed, 101)
	want = append(slices.Clone(added), changed)
	slices.Sort(want)
	ids, _, pos3 := f.changes(t, pos2, 0)
	if !slices.Equal(ids, want) || f.proxy.Gone() == gone {
		t.Fatalf("from a position before a split the client did not know of: %v (%d reads answered 410 before, %d after), want %v",
			ids, gone, f.proxy.Gone(), want)
	}

	// And started afresh after one more: the first read of the ranges
	// lists the children, no read is answered 410.
	f.reopen(t)
	if _, err := f.proxy.Split(f.db, "entities", children[1]); err != nil {
		t.Fatal(err)
	}
	if len(mByRange[children[1]]) == 0 {
		t.Fatalf("no doc m-… in range %s: %v", children[1], mByRange)
	}
	gone = f.proxy.Gone()
	added, _ = f.putIn(t, "k", 16)
	changed = mByRange[children[1]][0]
	f.put(t, changed, 103)
	want = append(slices.Clone(added), changed)
	slices.Sort(want)
	if ids, _, _ := f.changes(t, pos3, 0); !slices.Equal(ids, want) || f.proxy.Gone() != gone {
		t.Errorf("a new client from a position before the split: %v (%d reads answered 410), want %v and none", ids, f.proxy.Gone()-gone, want)
	}
}
