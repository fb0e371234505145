package azure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/bifrost/bifrost-migrate/store"
)

// ErrBadChangePosition is wrapped by the error of Changes when its
// position is not one that ChangeFeedSince or Changes made, or was made
// for another container.
var ErrBadChangePosition = errors.New("not a change feed position of this container")

// ErrNoChangeFeed is wrapped by Changes' error when the account answers
// the change feed's requests in a format that is not the service's (the
// local Cosmos DB stand-in has no change feed).
var ErrNoChangeFeed = errors.New("no change feed")

// positionVersion is the version of the format of change feed positions.
const positionVersion = 1

// changePosition is what the opaque position strings of Changes hold.
type changePosition struct {
	// V is the format's version (positionVersion).
	V int `json:"v"`
	// Container is "database/container"; empty until Changes first used
	// the position.
	Container string `json:"container,omitempty"`
	// Since, when not nil, is the start time in Unix seconds
	// (If-Modified-Since, whose precision is a second). It is sent on
	// every request, as the SDKs do, so that a range that has no
	// continuation yet starts there and not at the beginning.
	Since *int64 `json:"since,omitempty"`
	// Ranges are the container's feed ranges as ReadFeedRanges gave them
	// at the first pass; empty until then.
	Ranges []rangePosition `json:"ranges,omitempty"`
}

// rangePosition is where the change feed of one feed range stands.
type rangePosition struct {
	Min string `json:"min"`
	Max string `json:"max"`
	// Feed is the SDK's continuation token for this range, stored as the
	// SDK wrote it: the service's etag of each physical range it covers
	// (of the children, once the range split); empty until the range
	// first answered.
	Feed json.RawMessage `json:"feed,omitempty"`
}

// ChangeFeedSince returns the position of a container's change feed at
// t: Changes from it reads the docs whose latest change (_ts) is at or
// after t, t rounded down to the second (the precision of the service's
// If-Modified-Since header, so a doc changed up to a second before t may
// come too). The zero time is the beginning of the feed: every doc. The
// position is not yet tied to a container; Changes ties the one it
// returns.
func ChangeFeedSince(t time.Time) string {
	if t.IsZero() {
		return fmt.Sprintf(`{"v":%d}`, positionVersion)
	}
	// Truncate rounds down; t.Unix() alone would round toward 1970.
	return fmt.Sprintf(`{"v":%d,"since":%d}`, positionVersion, t.Truncate(time.Second).Unix())
}

// Changes reads the change feed of container in its "latest version"
// mode: each doc created or changed after position from, once, at its
// latest version (deleted docs are not in it). from is a position from
// ChangeFeedSince or from an earlier Changes on the same container ("" is
// ChangeFeedSince of the zero time: every doc). It reads the container's
// feed ranges (as ReadFeedRanges lists them at the position's first pass)
// one after the other, each page by page (pageSize docs at most per page;
// 0 means store.DefaultQueryPageSize) until the range answers that it has
// nothing more (304 Not Modified), calls fn with each doc's raw JSON,
// system properties included (each slice is fn's to keep), and returns
// the position to resume from: a later Changes from it reads only what
// changed after this pass. Positions are opaque strings (JSON) meant to be
// stored; they hold no secret.
//
// A range that splits (a container that grows) is followed into its
// children, during a pass or between passes, by the SDK (azcosmos
// v1.5.0, ContainerClient.ReadChangeFeed): a read of the split range
// answered 410 Gone with substatus 1002 makes it read the partition key
// ranges again and go on in each child from the range's continuation, as
// does a client whose first read of the ranges already lists the
// children; the position then holds each child's continuation.
// TestChangesFollowASplit holds Changes to that against the fault
// proxy's split (a split between two pages of a pass, positions saved
// before a split, with the client's ranges stale or fresh: nothing lost,
// nothing repeated), and cmd's TestReverseFollowThroughASplit holds
// reverse --follow to it.
//
// A pass ends once every range has caught up once, so it ends even while
// the application keeps writing (unless it writes into one range faster
// than the pass reads it). A doc changed again while a pass runs can come a
// second time in the same pass, at its newer version; one changed several
// times between two passes comes once. Callers therefore apply docs
// idempotently.
//
// Every request goes through the client's pipeline: the client's retry
// policy (RetryOptions: 429, 408, 449, 5xx and dropped connections are
// retried until --retry-timeout) and its RU pacer apply.
//
// On error nothing is returned but the error, and the pass can be started
// again from from (the docs fn already got come again). fn's error is
// returned as it is; a position that is not valid for container wraps
// ErrBadChangePosition; a failed request returns a *ResourceError naming
// the container (a missing database or container: 404), which wraps
// store.ErrRetriesExhausted when transient failures outlasted the retry
// timeout. No error contains a secret. Changes is safe for concurrent
// use, also on the same container (each call has its own position).
func (r *DocReader) Changes(ctx context.Context, container, from string, pageSize int, fn func(doc []byte) error) (next string, err error) {
	name := r.database + "/" + container
	pos := changePosition{V: positionVersion}
	if from != "" {
		dec := json.NewDecoder(bytes.NewReader([]byte(from)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&pos); err != nil || pos.V != positionVersion {
			return "", fmt.Errorf("container %s: %w: %.40q", name, ErrBadChangePosition, from)
		}
		if pos.Container != "" && pos.Container != name {
			return "", fmt.Errorf("container %s: %w: it is a position of %s", name, ErrBadChangePosition, pos.Container)
		}
	}
	pos.Container = name
	c, err := r.db.NewContainer(container)
	if err != nil {
		return "", fmt.Errorf("container %s: %w", container, err)
	}
	if len(pos.Ranges) == 0 {
		frs, err := r.feedRanges(ctx, c, container)
		if err != nil {
			return "", err
		}
		for _, fr := range frs {
			pos.Ranges = append(pos.Ranges, rangePosition{Min: fr.MinInclusive, Max: fr.MaxExclusive})
		}
	}
	if pageSize <= 0 {
		pageSize = store.DefaultQueryPageSize
	}
	for i := range pos.Ranges {
		if err := r.drainRange(ctx, c, container, &pos.Ranges[i], pos.Since, pageSize, fn); err != nil {
			return "", err
		}
	}
	b, err := json.Marshal(pos)
	if err != nil {
		return "", fmt.Errorf("container %s: change feed position: %w", name, err)
	}
	return string(b), nil
}

// feedRanges reads the feed ranges of container c (named container), the
// first request of the change feed. An account that answers in a format
// that is not the service's (the local Cosmos DB stand-in has no change
// feed) is an error wrapping ErrNoChangeFeed, whose text carries no
// decoder message; a failed request a *ResourceError naming the
// container.
func (r *DocReader) feedRanges(ctx context.Context, c *azcosmos.ContainerClient, container string) ([]azcosmos.FeedRange, error) {
	op := "read the feed ranges of container " + container
	frs, err := c.ReadFeedRanges(ctx, nil)
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax) || errors.As(err, &typ):
		return nil, r.fail(container, op, fmt.Errorf("%w: the account does not serve the change feed as Azure Cosmos DB does; reverse needs Azure Cosmos DB or its emulator", ErrNoChangeFeed))
	case err != nil:
		return nil, r.fail(container, op, ScrubError(err))
	case len(frs) == 0:
		return nil, r.fail(container, op, errors.New("the service announced no feed range"))
	}
	return frs, nil
}

// CheckChangeFeed tells, with one request, whether the account serves the
// change feed of container, as Changes needs: nil when it does, and when
// the container (or its database) does not exist, which is the caller's
// to report; an error wrapping ErrNoChangeFeed when the account answers
// in a format that is not the service's (the local Cosmos DB stand-in);
// else the request's *ResourceError. It is safe for concurrent use.
func (r *DocReader) CheckChangeFeed(ctx context.Context, container string) error {
	c, err := r.db.NewContainer(container)
	if err != nil {
		return fmt.Errorf("container %s: %w", container, err)
	}
	_, err = r.feedRanges(ctx, c, container)
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return nil
	}
	return err
}

// drainRange reads the change feed of one feed range from rp until the
// range answers that it has nothing more, calling fn with each doc, and
// advances rp.
func (r *DocReader) drainRange(ctx context.Context, c *azcosmos.ContainerClient, container string, rp *rangePosition, since *int64, pageSize int, fn func(doc []byte) error) error {
	for {
		opts := azcosmos.ChangeFeedOptions{MaxItemCount: int32(pageSize)}
		if since != nil {
			t := time.Unix(*since, 0).UTC()
			opts.StartFrom = &t
		}
		if len(rp.Feed) > 0 {
			token := string(rp.Feed)
			opts.Continuation = &token
		} else {
			opts.FeedRange = &azcosmos.FeedRange{MinInclusive: rp.Min, MaxExclusive: rp.Max}
		}
		// One call reads the range (or, after a split, each of its
		// children in turn) until it finds docs, which it returns, or
		// every part answers 304: an empty page.
		resp, err := c.ReadChangeFeed(ctx, &opts)
		if err != nil {
			return r.fail(container, fmt.Sprintf("read the change feed of container %s (feed range %s-%s)", container, rp.Min, rp.Max), ScrubError(err))
		}
		if resp.ContinuationToken != "" {
			rp.Feed = json.RawMessage(resp.ContinuationToken)
		}
		for _, item := range resp.Items {
			if err := fn(item); err != nil {
				return err
			}
		}
		if len(resp.Items) == 0 {
			return nil
		}
	}
}
