package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CreateTable creates the store's table (on-demand, GSI1 projecting the
// list fields only, the sparse GSI3 of outbox items, the sparse KEYS_ONLY
// GSI4 of the reaper, a stream of new images for the notifier, TTL on ttl)
// and waits until it is active. A table that exists already is left as it
// is, its TTL and stream turned on and GSI3 and GSI4 added if they are
// missing (an older table's GSI1 keeps projecting every attribute, which
// reads the same).
func CreateTable(ctx context.Context, client *dynamodb.Client, name string) (err error) {
	defer wrap(&err, "CreateTable", name)
	str := types.ScalarAttributeTypeS
	_, err = client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   &name,
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: str},
			{AttributeName: aws.String(attrSK), AttributeType: str},
			{AttributeName: aws.String(attrGSI1PK), AttributeType: str},
			{AttributeName: aws.String(attrGSI1SK), AttributeType: str},
			{AttributeName: aws.String(attrGSI3PK), AttributeType: str},
			{AttributeName: aws.String(attrGSI3SK), AttributeType: str},
			{AttributeName: aws.String(attrGSI4PK), AttributeType: str},
			{AttributeName: aws.String(attrGSI4SK), AttributeType: str},
		},
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(gsi1),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrGSI1PK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrGSI1SK), KeyType: types.KeyTypeRange},
			},
			// The list fields only (the task's JSON and its ttl): a lease
			// renewal, which changes version and lease_until alone, writes
			// no index at all.
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude,
				NonKeyAttributes: []string{attrData, attrTTL}},
		}, gsi3Index(), gsi4Index()},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return err
	}
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: &name}, 5*time.Minute); err != nil {
		return fmt.Errorf("wait for the table: %w", err)
	}
	if err := upgradeTable(ctx, client, name); err != nil {
		return err
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &name})
	if err != nil {
		return err
	}
	if d := ttl.TimeToLiveDescription; d != nil && (d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               &name,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attrTTL), Enabled: aws.Bool(true)},
	})
	return err
}

func gsi3Index() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(gsi3),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrGSI3PK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrGSI3SK), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
	}
}

// gsi4Index is the reaper's index (ListDue): sparse, keys only.
func gsi4Index() types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName: aws.String(gsi4),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrGSI4PK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrGSI4SK), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
	}
}

// upgradeTable turns on the stream and adds GSI3 and GSI4 on a table made
// before the outbox or the reaper (a developer's local table).
func upgradeTable(ctx context.Context, client *dynamodb.Client, name string) error {
	d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name})
	if err != nil {
		return err
	}
	t := d.Table
	if s := t.StreamSpecification; s == nil || s.StreamEnabled == nil || !*s.StreamEnabled {
		if _, err := client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: &name,
			StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewImage}}); err != nil {
			return fmt.Errorf("turn on the stream: %w", err)
		}
	}
	has := map[string]bool{}
	for _, g := range t.GlobalSecondaryIndexes {
		has[aws.ToString(g.IndexName)] = true
	}
	str := types.ScalarAttributeTypeS
	for _, add := range []struct {
		idx    types.GlobalSecondaryIndex
		pk, sk string
	}{{gsi3Index(), attrGSI3PK, attrGSI3SK}, {gsi4Index(), attrGSI4PK, attrGSI4SK}} {
		if has[aws.ToString(add.idx.IndexName)] {
			continue
		}
		// One index at a time: DynamoDB creates one per UpdateTable.
		_, err = client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: &name,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String(add.pk), AttributeType: str},
				{AttributeName: aws.String(add.sk), AttributeType: str},
			},
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
				IndexName: add.idx.IndexName, KeySchema: add.idx.KeySchema, Projection: add.idx.Projection}}},
		})
		if err != nil {
			return fmt.Errorf("add %s: %w", aws.ToString(add.idx.IndexName), err)
		}
		if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: &name}, 5*time.Minute); err != nil {
			return fmt.Errorf("wait for the table: %w", err)
		}
	}
	return nil
}
