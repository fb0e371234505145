package transform

import "strings"

// entities transforms an Entities row (SPEC §7; executions §8).
func (b *builder) entities() {
	kind, rest, hasColon := strings.Cut(b.row.RowKey, ":")
	if !hasColon {
		b.unknownKind()
		return
	}
	switch kind {
	case "org":
		id := rest
		if !strings.HasPrefix(id, "org-") {
			id = "org-" + id
		}
		// An organization's scope is its own id, whatever the PartitionKey.
		b.start(ContainerEntities, id, id, "organization")
		b.fields("name", "domain", "isActive", "createdAt", "createdBy", "updatedAt")
	case "user":
		b.start(ContainerEntities, "user-"+rest, b.rowScope(), "user")
		b.keyField("email", "Email", rest)
		b.fields("displayName", "userType", "isPlatformAdmin", "isActive", "lastLogin", "createdAt",
			"entraUserId", "lastEntraIdSync")
	case "role":
		b.start(ContainerEntities, "role-"+rest, b.rowScope(), "role")
		b.fields("name", "description", "isActive", "createdBy", "createdAt", "updatedAt")
	case "form":
		scope := b.rowScope()
		b.start(ContainerEntities, "form-"+rest, scope, "form")
		b.fields("name", "description", "linkedWorkflow")
		b.json("formSchema", "FormSchema")
		b.fields("isActive")
		b.use("IsGlobal")
		b.set("isGlobal", scope == "GLOBAL")
		b.fields("accessLevel")
		b.ifPresent("isPublic", "IsPublic")
		b.fields("createdBy", "createdAt", "updatedAt", "launchWorkflowId")
		b.json("allowedQueryParams", "AllowedQueryParams")
		b.json("defaultLaunchParams", "DefaultLaunchParams")
	case "execution":
		b.execution(rest)
		return
	default:
		b.unknownKind()
		return
	}
	b.extras()
}
