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

// CreateTable creates the store's table (on-demand, GSI1 projecting every
// attribute, the sparse GSI3 of outbox items, a stream of new images for the
// notifier, TTL on ttl) and waits until it is active. A table that exists
// already is left as it is, its TTL and stream turned on and GSI3 added if
// they are missing.
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
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}, gsi3Index()},
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

// upgradeTable turns on the stream and adds GSI3 on a table made before
// the outbox (a developer's local table).
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
	for _, g := range t.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == gsi3 {
			return nil
		}
	}
	str := types.ScalarAttributeTypeS
	idx := gsi3Index()
	_, err = client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: &name,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrGSI3PK), AttributeType: str},
			{AttributeName: aws.String(attrGSI3SK), AttributeType: str},
		},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: idx.IndexName, KeySchema: idx.KeySchema, Projection: idx.Projection}}},
	})
	if err != nil {
		return fmt.Errorf("add %s: %w", gsi3, err)
	}
	return nil
}
