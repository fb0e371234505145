package azure

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	provision "github.com/bifrost/bifrost-migrate/init"
)

// NewProvisionCosmos adapts a Cosmos DB client (see NewCosmosClient) to
// provision.Cosmos, what init needs to create and converge the database
// and its containers. Failed requests return a *ResourceError wrapping
// the SDK's error; a missing database or container is not an error. It is
// safe for concurrent use.
func NewProvisionCosmos(client *azcosmos.Client) provision.Cosmos {
	return provisionCosmos{client}
}

// NewProvisionBlobs adapts the blob containers of an account to
// provision.Blobs; o is as for NewBlobContainerClient. Failed requests
// return a *ResourceError wrapping the SDK's error; a missing container is
// not an error. It is safe for concurrent use.
func NewProvisionBlobs(acct StorageAccount, o Options) provision.Blobs {
	return provisionBlobs{acct, o}
}

// isStatus reports whether err is a response with the status code.
func isStatus(err error, code int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == code
}

type provisionCosmos struct{ client *azcosmos.Client }

// fail wraps a failed request about a database or container in a
// *ResourceError; nil stays nil.
func (s provisionCosmos) fail(kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return &ResourceError{Resource: Resource{Service: ServiceCosmos, Kind: kind, Name: name, Endpoint: s.client.Endpoint()}, Err: withFault(ScrubError(err))}
}

func (s provisionCosmos) DatabaseExists(ctx context.Context, database string) (bool, error) {
	db, err := s.client.NewDatabase(database)
	if err != nil {
		return false, err
	}
	if _, err := db.Read(ctx, nil); err != nil {
		if isStatus(err, http.StatusNotFound) {
			return false, nil
		}
		return false, s.fail(KindDatabase, database, err)
	}
	return true, nil
}

func (s provisionCosmos) CreateDatabase(ctx context.Context, database string) error {
	_, err := s.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: database}, nil)
	return s.fail(KindDatabase, database, err)
}

func (s provisionCosmos) container(database, id string) (*azcosmos.ContainerClient, error) {
	return s.client.NewContainer(database, id)
}

func (s provisionCosmos) ReadContainer(ctx context.Context, database, id string) (*provision.Container, error) {
	cc, err := s.container(database, id)
	if err != nil {
		return nil, err
	}
	resp, err := cc.Read(ctx, nil)
	if err != nil {
		if isStatus(err, http.StatusNotFound) {
			return nil, nil
		}
		return nil, s.fail(KindContainer, database+"/"+id, err)
	}
	c := containerFromSDK(*resp.ContainerProperties)
	return &c, nil
}

func (s provisionCosmos) CreateContainer(ctx context.Context, database string, c provision.Container) error {
	db, err := s.client.NewDatabase(database)
	if err != nil {
		return err
	}
	var opts *azcosmos.CreateContainerOptions
	if c.Throughput != nil {
		tp := azcosmos.NewManualThroughputProperties(*c.Throughput)
		opts = &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}
	}
	_, err = db.CreateContainer(ctx, containerToSDK(c), opts)
	return s.fail(KindContainer, database+"/"+c.ID, err)
}

func (s provisionCosmos) ReplaceContainer(ctx context.Context, database string, c provision.Container) error {
	cc, err := s.container(database, c.ID)
	if err != nil {
		return err
	}
	resp, err := cc.Read(ctx, nil)
	if err != nil {
		return s.fail(KindContainer, database+"/"+c.ID, err)
	}
	// Keep what the definition does not cover (unique keys, conflict
	// resolution, …); replace the indexing policy and TTL.
	props := *resp.ContainerProperties
	want := containerToSDK(c)
	props.IndexingPolicy = want.IndexingPolicy
	props.DefaultTimeToLive = want.DefaultTimeToLive
	_, err = cc.Replace(ctx, props, nil)
	return s.fail(KindContainer, database+"/"+c.ID, err)
}

// containerToSDK converts a (valid) definition to the SDK's container
// properties, filling in this tool's defaults: kind Hash (MultiHash for
// more than one path), version 2, mode consistent, automatic indexing.
func containerToSDK(c provision.Container) azcosmos.ContainerProperties {
	pk := azcosmos.PartitionKeyDefinition{Paths: c.PartitionKey.Paths, Kind: azcosmos.PartitionKeyKind(c.PartitionKey.EffectiveKind()), Version: c.PartitionKey.EffectiveVersion(2)}
	props := azcosmos.ContainerProperties{ID: c.ID, PartitionKeyDefinition: pk}
	if c.DefaultTTL != nil {
		ttl := int32(*c.DefaultTTL) // Validate bounds it to int32
		props.DefaultTimeToLive = &ttl
	}
	ip := &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingMode(c.IndexingPolicy.EffectiveMode()), Automatic: c.IndexingPolicy.EffectiveAutomatic()}
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

// containerFromSDK converts what the service returned into a definition
// for comparison.
func containerFromSDK(p azcosmos.ContainerProperties) provision.Container {
	c := provision.Container{
		ID: p.ID,
		PartitionKey: provision.PartitionKey{
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
		c.IndexingPolicy = provision.IndexingPolicy{IndexingMode: string(ip.IndexingMode), Automatic: &auto}
		for _, x := range ip.IncludedPaths {
			c.IndexingPolicy.IncludedPaths = append(c.IndexingPolicy.IncludedPaths, provision.Path{Path: x.Path})
		}
		for _, x := range ip.ExcludedPaths {
			c.IndexingPolicy.ExcludedPaths = append(c.IndexingPolicy.ExcludedPaths, provision.Path{Path: x.Path})
		}
		for _, ci := range ip.CompositeIndexes {
			var cps []provision.CompositePath
			for _, x := range ci {
				cps = append(cps, provision.CompositePath{Path: x.Path, Order: string(x.Order)})
			}
			c.IndexingPolicy.CompositeIndexes = append(c.IndexingPolicy.CompositeIndexes, cps)
		}
	}
	return c
}

type provisionBlobs struct {
	acct StorageAccount
	o    Options
}

func (s provisionBlobs) ContainerExists(ctx context.Context, name string) (bool, error) {
	c, err := NewBlobContainerClient(s.acct, name, s.o)
	if err != nil {
		return false, err
	}
	if _, err := c.GetProperties(ctx, nil); err != nil {
		if bloberror.HasCode(err, bloberror.ContainerNotFound) || isStatus(err, http.StatusNotFound) {
			return false, nil
		}
		return false, blobFail(c, name, "", err)
	}
	return true, nil
}

func (s provisionBlobs) CreateContainer(ctx context.Context, name string) error {
	c, err := NewBlobContainerClient(s.acct, name, s.o)
	if err != nil {
		return err
	}
	return createContainer(ctx, c, name)
}
