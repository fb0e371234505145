package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Cosmos is what provisioning needs from a Cosmos DB account.
// azure.NewProvisionCosmos adapts the Azure SDK client to it.
type Cosmos interface {
	// DatabaseExists reports whether the database exists.
	DatabaseExists(ctx context.Context, database string) (bool, error)
	// CreateDatabase creates the database.
	CreateDatabase(ctx context.Context, database string) error
	// ReadContainer returns the container's current definition (throughput
	// not included), or nil when it does not exist.
	ReadContainer(ctx context.Context, database, id string) (*Container, error)
	// CreateContainer creates the container as defined, with its
	// throughput when the definition has one.
	CreateContainer(ctx context.Context, database string, c Container) error
	// ReplaceContainer replaces the indexing policy and default TTL of an
	// existing container with the definition's, keeping everything else.
	ReplaceContainer(ctx context.Context, database string, c Container) error
}

// Blobs is what provisioning needs from a Blob Storage account.
// azure.NewProvisionBlobs adapts the Azure SDK client to it.
type Blobs interface {
	// ContainerExists reports whether the blob container exists.
	ContainerExists(ctx context.Context, name string) (bool, error)
	// CreateContainer creates the blob container; one that exists by now
	// is not an error.
	CreateContainer(ctx context.Context, name string) error
}

// Kind is the type of a provisioned resource.
type Kind string

// The resources init provisions.
const (
	KindDatabase      Kind = "database"
	KindContainer     Kind = "container"
	KindBlobContainer Kind = "blob container"
)

// Action is what Apply does to one resource.
type Action string

// The actions of a plan.
const (
	ActionCreate    Action = "create"
	ActionUpdate    Action = "update" // replace indexing policy and/or defaultTtl
	ActionUnchanged Action = "unchanged"
)

// Step is one resource of a plan and what Apply does to it.
type Step struct {
	Kind   Kind
	Name   string
	Action Action
	// Container is the definition (containers only).
	Container *Container
	// Differences are the lines of Diff for an update.
	Differences []string
}

// Plan is what init would do, computed from reads only.
type Plan struct {
	Database string
	Steps    []Step
}

// Changes returns the number of steps that write.
func (p *Plan) Changes() int {
	n := 0
	for _, s := range p.Steps {
		if s.Action != ActionUnchanged {
			n++
		}
	}
	return n
}

// PartitionKeyError reports containers whose partition key differs from
// their definition: it cannot be changed in place, so init writes nothing.
type PartitionKeyError struct {
	Mismatches []string // one message per container
}

func (e *PartitionKeyError) Error() string {
	return strings.Join(e.Mismatches, "\n")
}

// Provisioner plans and applies a Layout in one database. Blobs may be nil
// when the layout has no blob containers. It is safe for concurrent use if
// its clients are.
type Provisioner struct {
	Cosmos   Cosmos
	Blobs    Blobs
	Database string
}

// Plan reads the account (no writes) and returns what Apply must do for
// the account to match the layout, which must be valid. A container whose
// partition key differs makes it return a *PartitionKeyError naming every
// such container, and no plan. Other errors are the services'.
func (p Provisioner) Plan(ctx context.Context, l Layout) (*Plan, error) {
	plan := &Plan{Database: p.Database}
	dbExists, err := p.Cosmos.DatabaseExists(ctx, p.Database)
	if err != nil {
		return nil, fmt.Errorf("database %q: %w", p.Database, err)
	}
	plan.Steps = append(plan.Steps, Step{Kind: KindDatabase, Name: p.Database, Action: actionIf(!dbExists, ActionCreate)})

	var mismatches []string
	for i := range l.Containers {
		want := l.Containers[i]
		step := Step{Kind: KindContainer, Name: want.ID, Container: &want, Action: ActionCreate}
		if dbExists {
			cur, err := p.Cosmos.ReadContainer(ctx, p.Database, want.ID)
			if err != nil {
				return nil, fmt.Errorf("container %q: %w", want.ID, err)
			}
			if cur != nil {
				if !SamePartitionKey(cur.PartitionKey, want.PartitionKey) {
					mismatches = append(mismatches, fmt.Sprintf(
						"container %q: partition key is %s in the account but %s in the definition; a partition key cannot be changed in place (create a new container and copy the data)",
						want.ID, pkString(cur.PartitionKey, 1), pkString(want.PartitionKey, 2)))
				}
				step.Differences = Diff(*cur, want)
				step.Action = actionIf(len(step.Differences) > 0, ActionUpdate)
			}
		}
		plan.Steps = append(plan.Steps, step)
	}
	if len(mismatches) > 0 {
		return nil, &PartitionKeyError{Mismatches: mismatches}
	}

	for _, name := range l.BlobContainers {
		if p.Blobs == nil {
			return nil, fmt.Errorf("blob container %q: no blob storage account", name)
		}
		exists, err := p.Blobs.ContainerExists(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("blob container %q: %w", name, err)
		}
		plan.Steps = append(plan.Steps, Step{Kind: KindBlobContainer, Name: name, Action: actionIf(!exists, ActionCreate)})
	}
	return plan, nil
}

func actionIf(cond bool, a Action) Action {
	if cond {
		return a
	}
	return ActionUnchanged
}

// Apply carries out a plan's steps in order (database, containers, blob
// containers) and stops at the first error, which names the resource.
// Steps already applied stay applied; running init again converges.
func (p Provisioner) Apply(ctx context.Context, plan *Plan) error {
	for _, s := range plan.Steps {
		if s.Action == ActionUnchanged {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch {
		case s.Kind == KindDatabase:
			err = p.Cosmos.CreateDatabase(ctx, s.Name)
		case s.Kind == KindContainer && s.Action == ActionCreate:
			err = p.Cosmos.CreateContainer(ctx, plan.Database, *s.Container)
		case s.Kind == KindContainer && s.Action == ActionUpdate:
			err = p.Cosmos.ReplaceContainer(ctx, plan.Database, *s.Container)
		case s.Kind == KindBlobContainer:
			if p.Blobs == nil {
				err = errors.New("no blob storage account")
			} else {
				err = p.Blobs.CreateContainer(ctx, s.Name)
			}
		}
		if err != nil {
			return fmt.Errorf("%s %q: %s: %w", s.Kind, s.Name, s.Action, err)
		}
	}
	return nil
}
