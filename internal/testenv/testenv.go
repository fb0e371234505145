// Package testenv gives integration tests the emulators that test.sh
// started. test.sh exports BIFROST_INTEGRATION=1 with the connection
// settings; under it a missing setting fails the test instead of skipping,
// so CI can never pass by skipping everything.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/bifrost/bifrost-migrate/azure"
)

func required(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("BIFROST_INTEGRATION") == "1" {
			t.Fatalf("BIFROST_INTEGRATION=1 but %s is not set", name)
		}
		t.Skipf("integration test: %s not set (run ./test.sh)", name)
	}
	return v
}

// StorageConnection returns the Azurite connection string.
func StorageConnection(t testing.TB) string {
	return required(t, "BIFROST_TABLES_CONNECTION")
}

// Storage returns the parsed Azurite account.
func Storage(t testing.TB) azure.StorageAccount {
	t.Helper()
	a, err := azure.ParseStorageConnection(StorageConnection(t))
	if err != nil {
		t.Fatalf("BIFROST_TABLES_CONNECTION: %v", err)
	}
	return a
}

// CosmosConnection returns the Cosmos DB stand-in's connection string.
func CosmosConnection(t testing.TB) string {
	return required(t, "CosmosDBConnection")
}

// Cosmos returns the parsed Cosmos DB stand-in account.
func Cosmos(t testing.TB) azure.CosmosAccount {
	t.Helper()
	a, err := azure.ParseCosmosConnection(CosmosConnection(t))
	if err != nil {
		t.Fatalf("CosmosDBConnection: %v", err)
	}
	return a
}

// Rates returns the connection strings (storage, Cosmos DB) of the
// emulators that test.sh started for the tests that measure rates
// (BIFROST_RATES_TABLES_CONNECTION, BIFROST_RATES_COSMOS_CONNECTION), or
// of the shared ones when it started none.
func Rates(t testing.TB) (storage, cosmos string) {
	t.Helper()
	storage, cosmos = os.Getenv("BIFROST_RATES_TABLES_CONNECTION"), os.Getenv("BIFROST_RATES_COSMOS_CONNECTION")
	if storage == "" || cosmos == "" {
		return StorageConnection(t), CosmosConnection(t)
	}
	return storage, cosmos
}

// Name returns a fresh name usable as a table, blob container or database
// name: prefix (lower-case letters) followed by 12 random hex digits. Tests
// share one emulator, so every test works in names of its own.
func Name(prefix string) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return strings.ToLower(prefix) + hex.EncodeToString(b)
}
