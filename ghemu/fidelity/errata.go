package fidelity

import (
	"fmt"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
)

// applyErrata corrects the few places where GitHub's description contradicts what GitHub
// sends, each narrowly, after loading. An erratum whose target is no longer as described
// here fails the load, so that updating the embedded description makes someone look at
// it again (GitHub may have fixed it, or changed it differently).
func applyErrata(doc *openapi3.T) error {
	if err := installationsAccountAnyOf(doc); err != nil {
		return err
	}
	return replyWithoutPath(doc)
}

// replyWithoutPath: POST /repos/{owner}/{repo}/pulls/{pull_number}/comments requires
// body, commit_id and path, yet its in_reply_to says that "all parameters other than
// body in the request body are ignored" when it is given, and GitHub takes a reply of
// {body, in_reply_to} alone (go-github's CreateCommentInReplyTo sends that). The
// erratum accepts either the described body or a reply: anyOf [described, {body,
// in_reply_to}].
func replyWithoutPath(doc *openapi3.T) error {
	const where = "POST /repos/{owner}/{repo}/pulls/{pull_number}/comments request body"
	item := doc.Paths.Value("/repos/{owner}/{repo}/pulls/{pull_number}/comments")
	if item == nil || item.Post == nil {
		return nil // not loaded
	}
	rb := item.Post.RequestBody
	if rb == nil || rb.Value == nil || rb.Value.Content.Get("application/json") == nil {
		return fmt.Errorf("failed to apply the erratum to %s: it is no longer described; revisit errata.go", where)
	}
	media := rb.Value.Content.Get("application/json")
	described := media.Schema
	if described == nil || described.Value == nil || described.Value.Properties["in_reply_to"] == nil ||
		!slices.Contains(described.Value.Required, "commit_id") || !slices.Contains(described.Value.Required, "path") {
		return fmt.Errorf("failed to apply the erratum to %s: it no longer requires commit_id and path beside in_reply_to; revisit errata.go", where)
	}
	reply := openapi3.NewObjectSchema().
		WithProperty("body", openapi3.NewStringSchema()).
		WithProperty("in_reply_to", openapi3.NewIntegerSchema())
	reply.Required = []string{"body", "in_reply_to"}
	media.Schema = openapi3.NewSchemaRef("", &openapi3.Schema{AnyOf: openapi3.SchemaRefs{described, openapi3.NewSchemaRef("", reply)}})
	return nil
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
