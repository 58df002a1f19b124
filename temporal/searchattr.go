package temporal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/vigil-soc/vigil/temporal/searchattr"
)

// SearchAttributeNames lists the names RegisterSearchAttributes makes sure exist.
func SearchAttributeNames() []string {
	keys := searchattr.Keys()
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.GetName()
	}
	return names
}

// searchAttrLimit bounds RegisterSearchAttributes when ctx has no deadline.
const searchAttrLimit = 30 * time.Second

// RegisterSearchAttributes makes sure Vigil's Keyword search attributes exist in namespace. It
// adds only the missing ones, tolerates a concurrent registration by another process, and returns
// once they can be used: the server lists all of them and accepts a visibility query naming them.
// An attribute that exists with another type is an error.
//
// Listed is not usable: a server caches each namespace's attributes (a dev server does not by
// default; devstack.StartTemporal turns the cache on) and until its cache refreshes it refuses a
// start that sets a new attribute ("no mapping defined for search attribute").
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, searchAttrLimit)
		defer cancel()
	}
	ops := c.OperatorService()
	added := false
	for {
		resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
		if err != nil {
			return fmt.Errorf("list search attributes of %s: %w", namespace, err)
		}
		missing, err := missingKeywords(resp.GetCustomAttributes(), SearchAttributeNames())
		if err != nil {
			return fmt.Errorf("search attributes of %s: %w", namespace, err)
		}
		if len(missing) == 0 {
			err := queryableAttributes(ctx, c, namespace)
			if err == nil {
				return nil
			}
			if !isInvalidArgument(err) {
				return fmt.Errorf("query search attributes of %s: %w", namespace, err)
			}
		}
		if !added && len(missing) > 0 {
			_, err := ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
				Namespace:        namespace,
				SearchAttributes: missing,
			})
			var exists *serviceerror.AlreadyExists
			if err != nil && !errors.As(err, &exists) {
				return fmt.Errorf("add search attributes to %s: %w", namespace, err)
			}
			// Added by us or by someone racing us: either way, wait until they are listed. An
			// AlreadyExists for part of the set makes the next round add the rest.
			added = err == nil
		}
		select {
		case <-ctx.Done():
			if len(missing) == 0 {
				return fmt.Errorf("search attributes of %s listed but not usable yet: %w", namespace, ctx.Err())
			}
			return fmt.Errorf("search attributes %v of %s not listed yet: %w", slices.Sorted(maps.Keys(missing)), namespace, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// queryableAttributes asks the server to count the workflows with any of Vigil's attributes set
// to "": a server that does not know one of them yet answers InvalidArgument.
func queryableAttributes(ctx context.Context, c client.Client, namespace string) error {
	var q strings.Builder
	for i, name := range SearchAttributeNames() {
		if i > 0 {
			q.WriteString(" OR ")
		}
		fmt.Fprintf(&q, "%s = ''", name)
	}
	_, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: q.String()})
	return err
}

func isInvalidArgument(err error) bool {
	var invalid *serviceerror.InvalidArgument
	return errors.As(err, &invalid)
}

// missingKeywords returns the wanted names absent from existing, as Keyword attributes to add;
// a wanted name that exists with another type is an error (the server would reject its values).
func missingKeywords(existing map[string]enumspb.IndexedValueType, want []string) (map[string]enumspb.IndexedValueType, error) {
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range want {
		typ, ok := existing[name]
		switch {
		case !ok:
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		case typ != enumspb.INDEXED_VALUE_TYPE_KEYWORD:
			return nil, fmt.Errorf("%s exists as %s, want Keyword", name, typ)
		}
	}
	return missing, nil
}
