package store

import (
	"context"
	"sync"
	"time"
)

// Meter adds up what the requests of one item of work cost: the request
// units Cosmos DB charged them and the time they spent waiting for the
// budget (the request-unit pacer's waits, and every retry's back-off)
// rather than on the network. An engine puts one in the context of each
// item it writes (WithMeter); the clients that send the requests add to
// the meter of their request's context (MeterOf). It is what lets the
// engine size its requests in flight from the latency it observes
// without counting the budget's own waits as latency (SPEC §14,
// Latency). Its methods are safe for concurrent use.
type Meter struct {
	mu     sync.Mutex
	ru     float64
	waited time.Duration
}

type meterKey struct{}

// WithMeter returns ctx carrying m.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// MeterOf returns the meter ctx carries, or nil; the methods of a nil
// Meter do nothing.
func MeterOf(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// Charge adds the request units of one answer.
func (m *Meter) Charge(ru float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.ru += ru
	m.mu.Unlock()
}

// Wait adds a wait for the budget or a back-off.
func (m *Meter) Wait(d time.Duration) {
	if m == nil || d <= 0 {
		return
	}
	m.mu.Lock()
	m.waited += d
	m.mu.Unlock()
}

// Read returns the request units and the waits added so far.
func (m *Meter) Read() (ru float64, waited time.Duration) {
	if m == nil {
		return 0, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ru, m.waited
}
