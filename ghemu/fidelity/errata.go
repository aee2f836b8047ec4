package fidelity

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
)

// applyErrata corrects the few places where GitHub's description contradicts what GitHub
// sends, each narrowly, after loading. An erratum whose target is no longer as described
// here fails the load, so that updating the embedded description makes someone look at
// it again (GitHub may have fixed it, or changed it differently).
func applyErrata(doc *openapi3.T) error {
	return installationsAccountAnyOf(doc)
}

// installationsAccountAnyOf: GET /app/installations describes each installation's
// account as allOf [Simple User, Enterprise], which no real account satisfies (a user has
// no slug, an organization no created_at in that shape). GitHub sends one or the other,
// as the shared #/components/schemas/installation says with anyOf, which GET
// /app/installations/{installation_id} uses. The erratum turns that allOf into anyOf.
func installationsAccountAnyOf(doc *openapi3.T) error {
	const where = "GET /app/installations 200 items.account"
	item := doc.Paths.Value("/app/installations")
	if item == nil || item.Get == nil {
		return nil // not loaded
	}
	resp := item.Get.Responses.Status(200)
	if resp == nil || resp.Value == nil || resp.Value.Content.Get("application/json") == nil {
		return fmt.Errorf("failed to apply the erratum to %s: the response is no longer described; revisit errata.go", where)
	}
	schema := resp.Value.Content.Get("application/json").Schema
	if schema == nil || schema.Value == nil || schema.Value.Items == nil || schema.Value.Items.Value == nil {
		return fmt.Errorf("failed to apply the erratum to %s: the response is no longer an array; revisit errata.go", where)
	}
	account := schema.Value.Items.Value.Properties["account"]
	if account == nil || account.Value == nil || len(account.Value.AnyOf) != 0 ||
		len(account.Value.AllOf) != 2 || title(account.Value.AllOf[0]) != "Simple User" || title(account.Value.AllOf[1]) != "Enterprise" {
		return fmt.Errorf("failed to apply the erratum to %s: it is no longer allOf [Simple User, Enterprise]; revisit errata.go", where)
	}
	fixed := *account.Value
	fixed.AnyOf, fixed.AllOf = fixed.AllOf, nil
	account.Value = &fixed
	return nil
}

func title(ref *openapi3.SchemaRef) string {
	if ref == nil || ref.Value == nil {
		return ""
	}
	return ref.Value.Title
}
