package provision

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// NewCosmos adapts an azcosmos client to Cosmos.
func NewCosmos(client *azcosmos.Client) Cosmos { return sdkCosmos{client} }

type sdkCosmos struct{ client *azcosmos.Client }

func isStatus(err error, code int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == code
}

func (s sdkCosmos) DatabaseExists(ctx context.Context, database string) (bool, error) {
	db, err := s.client.NewDatabase(database)
	if err != nil {
		return false, err
	}
	if _, err := db.Read(ctx, nil); err != nil {
		if isStatus(err, http.StatusNotFound) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func (s sdkCosmos) CreateDatabase(ctx context.Context, database string) error {
	_, err := s.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: database}, nil)
	return err
}

func (s sdkCosmos) container(database, id string) (*azcosmos.ContainerClient, error) {
	return s.client.NewContainer(database, id)
}

func (s sdkCosmos) ReadContainer(ctx context.Context, database, id string) (*Container, error) {
	cc, err := s.container(database, id)
	if err != nil {
		return nil, err
	}
	resp, err := cc.Read(ctx, nil)
	if err != nil {
		if isStatus(err, http.StatusNotFound) {
			return nil, nil
		}
		return nil, err
	}
	c := fromSDK(*resp.ContainerProperties)
	return &c, nil
}

func (s sdkCosmos) CreateContainer(ctx context.Context, database string, c Container) error {
	db, err := s.client.NewDatabase(database)
	if err != nil {
		return err
	}
	var opts *azcosmos.CreateContainerOptions
	if c.Throughput != nil {
		tp := azcosmos.NewManualThroughputProperties(*c.Throughput)
		opts = &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}
	}
	_, err = db.CreateContainer(ctx, toSDK(c), opts)
	return err
}

func (s sdkCosmos) ReplaceContainer(ctx context.Context, database string, c Container) error {
	cc, err := s.container(database, c.ID)
	if err != nil {
		return err
	}
	resp, err := cc.Read(ctx, nil)
	if err != nil {
		return err
	}
	// Keep what the definition does not cover (unique keys, conflict
	// resolution, …); replace the indexing policy and TTL.
	props := *resp.ContainerProperties
	want := toSDK(c)
	props.IndexingPolicy = want.IndexingPolicy
	props.DefaultTimeToLive = want.DefaultTimeToLive
	_, err = cc.Replace(ctx, props, nil)
	return err
}

// toSDK converts a (valid) definition to the SDK's container properties,
// filling in this tool's defaults: kind Hash, version 2, mode consistent,
// automatic indexing.
func toSDK(c Container) azcosmos.ContainerProperties {
	pk := azcosmos.PartitionKeyDefinition{Paths: c.PartitionKey.Paths, Kind: azcosmos.PartitionKeyKind(pkKind(c.PartitionKey)), Version: pkVersion(c.PartitionKey, 2)}
	props := azcosmos.ContainerProperties{ID: c.ID, PartitionKeyDefinition: pk}
	if c.DefaultTTL != nil {
		ttl := int32(*c.DefaultTTL) // Validate bounds it to int32
		props.DefaultTimeToLive = &ttl
	}
	n := normalize(c.IndexingPolicy)
	ip := &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingMode(n.mode), Automatic: n.automatic}
	for _, p := range c.IndexingPolicy.IncludedPaths {
		ip.IncludedPaths = append(ip.IncludedPaths, azcosmos.IncludedPath{Path: p.Path})
	}
	for _, p := range c.IndexingPolicy.ExcludedPaths {
		ip.ExcludedPaths = append(ip.ExcludedPaths, azcosmos.ExcludedPath{Path: p.Path})
	}
	for _, ci := range c.IndexingPolicy.CompositeIndexes {
		var sdkCI []azcosmos.CompositeIndex
		for _, p := range ci {
			order := azcosmos.CompositeIndexAscending
			if p.Order != "" {
				order = azcosmos.CompositeIndexOrder(strings.ToLower(p.Order))
			}
			sdkCI = append(sdkCI, azcosmos.CompositeIndex{Path: p.Path, Order: order})
		}
		ip.CompositeIndexes = append(ip.CompositeIndexes, sdkCI)
	}
	props.IndexingPolicy = ip
	return props
}

// fromSDK converts what the service returned into a definition for
// comparison.
func fromSDK(p azcosmos.ContainerProperties) Container {
	c := Container{
		ID: p.ID,
		PartitionKey: PartitionKey{
			Paths:   p.PartitionKeyDefinition.Paths,
			Kind:    string(p.PartitionKeyDefinition.Kind),
			Version: p.PartitionKeyDefinition.Version,
		},
	}
	if p.DefaultTimeToLive != nil {
		ttl := int64(*p.DefaultTimeToLive)
		c.DefaultTTL = &ttl
	}
	if ip := p.IndexingPolicy; ip != nil {
		auto := ip.Automatic
		c.IndexingPolicy = IndexingPolicy{IndexingMode: string(ip.IndexingMode), Automatic: &auto}
		for _, x := range ip.IncludedPaths {
			c.IndexingPolicy.IncludedPaths = append(c.IndexingPolicy.IncludedPaths, Path{Path: x.Path})
		}
		for _, x := range ip.ExcludedPaths {
			c.IndexingPolicy.ExcludedPaths = append(c.IndexingPolicy.ExcludedPaths, Path{Path: x.Path})
		}
		for _, ci := range ip.CompositeIndexes {
			var cps []CompositePath
			for _, x := range ci {
				cps = append(cps, CompositePath{Path: x.Path, Order: string(x.Order)})
			}
			c.IndexingPolicy.CompositeIndexes = append(c.IndexingPolicy.CompositeIndexes, cps)
		}
	}
	return c
}

// BlobContainerClient returns a client for one blob container, e.g.
// azure.NewBlobContainerClient bound to an account and transport.
type BlobContainerClient func(name string) (*container.Client, error)

// NewBlobs adapts a blob container client constructor to Blobs.
func NewBlobs(newClient BlobContainerClient) Blobs { return sdkBlobs{newClient} }

type sdkBlobs struct{ newClient BlobContainerClient }

func (s sdkBlobs) ContainerExists(ctx context.Context, name string) (bool, error) {
	c, err := s.newClient(name)
	if err != nil {
		return false, err
	}
	if _, err := c.GetProperties(ctx, nil); err != nil {
		if bloberror.HasCode(err, bloberror.ContainerNotFound) || isStatus(err, http.StatusNotFound) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func (s sdkBlobs) CreateContainer(ctx context.Context, name string) error {
	c, err := s.newClient(name)
	if err != nil {
		return err
	}
	if _, err := c.Create(ctx, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return err
	}
	return nil
}
