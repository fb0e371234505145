package azure_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/azure"
	"github.com/bifrost/bifrost-migrate/internal/recorder"
	"github.com/bifrost/bifrost-migrate/internal/testenv"
	"github.com/bifrost/bifrost-migrate/store"
)

// newDocContainer creates a fresh database with one container partitioned
// on /scope, and writes n docs spread over three scopes.
func newDocContainer(t *testing.T, n int) (*azcosmos.Client, string) {
	t.Helper()
	client, err := azure.NewCosmosClient(testenv.Cosmos(t), azure.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dbName := testenv.Name("reader")
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: dbName}, nil); err != nil {
		t.Fatalf("create database: %v", err)
	}
	db, _ := client.NewDatabase(dbName)
	t.Cleanup(func() { _, _ = db.Delete(context.WithoutCancel(ctx), nil) })
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID:                     "docs",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/scope"}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
	}, nil)
	if err != nil {
		t.Fatalf("create container: %v", err)
	}
	c, _ := db.NewContainer("docs")
	for i := range n {
		scope := fmt.Sprintf("s%d", i%3)
		doc := fmt.Sprintf(`{"id":"d%03d","scope":%q,"n":%d,"big":9007199254740993,"d":5.0}`, i, scope, i)
		if _, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString(scope), []byte(doc), nil); err != nil {
			t.Fatalf("upsert: %v", err)
		}
	}
	return client, dbName
}

func TestDocReaderQueryAllFollowsContinuation(t *testing.T) {
	client, dbName := newDocContainer(t, 25)
	rec := recorder.New(nil)
	client, err := azure.NewCosmosClient(testenv.Cosmos(t), azure.Options{Transport: rec})
	if err != nil {
		t.Fatal(err)
	}
	r, err := azure.NewDocReader(client, dbName)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	err = r.QueryAll(context.Background(), "docs", "SELECT * FROM c", nil, 10, func(doc []byte) error {
		var d struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			return err
		}
		ids = append(ids, d.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ids)
	if len(ids) != 25 || ids[0] != "d000" || ids[24] != "d024" {
		t.Fatalf("got %d ids %v, want d000..d024", len(ids), ids)
	}
	if q := rec.CountPath(http.MethodPost, "/dbs/"+dbName+"/colls/docs/docs"); q != 3 {
		t.Errorf("%d query requests for 25 docs in pages of 10, want 3 (%v)", q, rec.Requests())
	}
}

func TestDocReaderQueryWithParameters(t *testing.T) {
	client, dbName := newDocContainer(t, 9)
	r, _ := azure.NewDocReader(client, dbName)
	var got []string
	err := r.QueryAll(context.Background(), "docs", "SELECT * FROM c WHERE c.scope = @scope", []store.QueryParam{{Name: "@scope", Value: "s1"}}, 0, func(doc []byte) error {
		got = append(got, string(doc))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("scope s1: %d docs, want 3", len(got))
	}
	for _, d := range got {
		if !strings.Contains(d, `"scope":"s1"`) {
			t.Errorf("doc of another scope: %s", d)
		}
	}
}

func TestDocReaderReadReturnsRawDocAndReportsMissing(t *testing.T) {
	client, dbName := newDocContainer(t, 3)
	r, _ := azure.NewDocReader(client, dbName)
	ctx := context.Background()
	doc, found, err := r.Read(ctx, "docs", "s1", "d001")
	if err != nil || !found {
		t.Fatalf("read d001: found %v, %v", found, err)
	}
	if !strings.Contains(string(doc), `"id":"d001"`) || !strings.Contains(string(doc), `"_etag"`) {
		t.Errorf("raw doc is not d001 with its system properties: %s", doc)
	}
	for _, k := range []struct{ scope, id string }{{"s1", "nope"}, {"s0", "d001"}} {
		_, found, err = r.Read(ctx, "docs", k.scope, k.id)
		if err != nil || found {
			t.Errorf("read %s/%s: found %v, err %v; want not found, no error", k.scope, k.id, found, err)
		}
	}
}
