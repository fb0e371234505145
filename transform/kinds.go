package transform

import "strings"

// One table per kind (SPEC §6–§9). For each kind of row: its table, the
// RowKey it matches, its doc's type and id, and its doc fields in doc
// order, each with its source property and how the two map. Both
// directions read it: the forward transform (Transform, builder.kindDoc)
// writes a kind's fields in this order, and ReverseDoc
// (docReversal.decideFields) decides each property from its field and finds
// a doc's kind and keys from it. Adding a property to a kind is one entry
// here. Code of its own remains only where a field is truly special, and
// says why where it is: a config's value and its type (config.go), an
// execution's id, result and legacy blobs (execution.go).

// rule says how a doc field and its source property map to each other.
type rule uint8

const (
	// rulePlain: the property mapped by §2, timestamps by the table's
	// list (forward); the value typed as the existing row has it, else as
	// the Python SDK types it (reverse).
	rulePlain rule = iota
	// ruleJSON: the property's text JSON-decoded, an invalid text a dead
	// letter (forward); the json.dumps text (reverse).
	ruleJSON
	// ruleKey: a property that repeats the key in the RowKey (an
	// integration's Name): the property when the row has it (a different
	// value counted), else the key (forward); written back only when the
	// existing row has it or it differs from the key, as the application
	// leaves it out (reverse).
	ruleKey
	// ruleKeyWritten: ruleKey for a property the application always
	// writes (a user's Email), so reverse writes it too.
	ruleKeyWritten
	// ruleFromKey: the key in the RowKey itself (a config's key, a
	// schedule's workflowName); never written back: the RowKey holds it.
	ruleFromKey
	// ruleDerived: what derive gives from the row's keys (a form's
	// isGlobal from its scope); never written back. src, when set, is a
	// property the field stands for: not copied as an unlisted property,
	// and kept in the row as it is.
	ruleDerived
	// ruleRawID: the doc's raw id, which the kind's id rule read from src
	// (an execution's ExecutionId) (forward); as rulePlain (reverse).
	ruleRawID
	// ruleLegacyBlob: the path of blob when it exists, or where an inline
	// legacy src is uploaded (forward, SPEC §8); never written back: the
	// row keeps the inline property it had, if any.
	ruleLegacyBlob
	// ruleGroup: fields derived together from the same properties, which
	// neither direction can decide one at a time; group's own code writes
	// them (builder.writeGroup, docReversal.decideGroup).
	ruleGroup
)

// field is one doc field of a kind.
type field struct {
	name string // the doc field
	src  string // its source property
	rule rule
	// stamp: src is a timestamp. The SPEC lists timestamps by table and
	// the list applies to every row of the table (unknown kinds and
	// unlisted properties too), so a table's timestamps are the union of
	// its kinds' (kindTable.stamps), and a property is a timestamp in
	// every kind of its table that lists it or in none
	// (TestKindTableConsistent).
	stamp bool
	// optional: the forward transform writes the field only when the row
	// has src (an execution's legacy errorType, a form's isPublic); any
	// other field is null when its property is absent.
	optional bool
	derive   func(rowKeys) any // ruleDerived
	blob     BlobName          // ruleLegacyBlob
	group    fieldGroup        // ruleGroup
}

// rowKeys are what a derived field is derived from: the row's keys and
// the kind's key in the RowKey.
type rowKeys struct {
	partitionKey, rowKey, key string
}

// fieldGroup is fields that derive together from the same properties.
// Each direction dispatches on it with a switch, not through a function
// value, so that ReverseDoc's state stays on the stack.
type fieldGroup uint8

const (
	groupConfigValue fieldGroup = iota + 1 // config.go
	groupResult                            // execution.go
)

// groupFields are each group's doc fields, in the order forward writes
// them.
var groupFields = [...][]string{
	groupConfigValue: {"value", "secretRef", "configType"},
	groupResult:      {"result", "resultType", "resultInBlob", "resultSize", "resultBlobPath"},
}

// idRule is how a kind's doc id and scope follow from its row's keys
// (forward) and back: idRules holds both directions of each.
type idRule uint8

const (
	idKey       idRule = iota // idPrefix + the key; scope by §3
	idConfigKey               // idPrefix + the key with "_" → "-"; scope by §3
	idScope                   // idPrefix + the scope (branding, github: the RowKey has no key)
	idOrg                     // the key, with "org-" unless it has it; the scope is the id
	idRowKey                  // the RowKey with ":" → "-"; scope GLOBAL (relationships)
	idExecution               // the execution's id (execution.go)
	idUnknown                 // SPEC §10: unknown kinds (builder.unknownKind)
)

// kindSpec is one kind of row and its doc.
type kindSpec struct {
	table string
	// prefix is the RowKey up to the key ("config:"); one without a
	// trailing ':' is the whole RowKey (branding, github).
	prefix   string
	docType  string
	idPrefix string
	id       idRule
	fields   []field
	// closed: the application writes exactly the listed properties, so
	// reverse writes no unlisted doc field (executions, SPEC §15).
	closed bool
	// isVariant, for a kind that shares its doc type with an earlier
	// kind, tells a doc of this kind that has no _migration from one of
	// the earlier kind.
	isVariant func(Doc) bool

	// typeValue is docType as a doc value, boxed once.
	typeValue any
}

// newKind returns the kindSpec s with what follows from it filled in.
func newKind(s kindSpec) *kindSpec {
	s.typeValue = s.docType
	return &s
}

// match reports whether the kind's RowKey pattern matches rk, and the
// key in it.
func (k *kindSpec) match(rk string) (string, bool) {
	if !strings.HasSuffix(k.prefix, ":") {
		return "", rk == k.prefix
	}
	key, ok := strings.CutPrefix(rk, k.prefix)
	return key, ok
}

// has reports whether name is one of the kind's doc fields.
func (k *kindSpec) has(name string) bool {
	for i := range k.fields {
		f := &k.fields[i]
		if f.name == name {
			return true
		}
		if f.rule == ruleGroup {
			for _, n := range groupFields[f.group] {
				if n == name {
					return true
				}
			}
		}
	}
	return false
}

// keyField is the doc field that holds the RowKey's key, if any.
func (k *kindSpec) keyField() string {
	for _, f := range k.fields {
		switch f.rule {
		case ruleKey, ruleKeyWritten, ruleFromKey:
			return f.name
		}
	}
	return ""
}

// docTypeOf is the type the forward transform gives a doc of kind k from
// RowKey rk.
func (k *kindSpec) docTypeOf(rk string) string {
	if k.id == idUnknown {
		return Kind(rk) // unknown kinds: type = kind
	}
	return k.docType
}

// Field constructors, so that each kind below reads as its SPEC row.

// prop is a field from the property of the same name with its first
// letter upper-cased.
func prop(name string) field { return field{name: name, src: pascal(name)} }

// stamp is prop for a timestamp.
func stamp(name string) field { return field{name: name, src: pascal(name), stamp: true} }

// propFrom is a field from a property of another name.
func propFrom(name, src string) field { return field{name: name, src: src} }

// jsonProp is a JSON-valued field (ruleJSON).
func jsonProp(name string) field { return field{name: name, src: pascal(name), rule: ruleJSON} }

// keyProp is a field that repeats the RowKey's key (ruleKey or
// ruleKeyWritten).
func keyProp(name, src string, r rule) field { return field{name: name, src: src, rule: r} }

// fromKey is the RowKey's key (ruleFromKey).
func fromKey(name string) field { return field{name: name, rule: ruleFromKey} }

// derived is a field derive gives (ruleDerived).
func derived(name, src string, derive func(rowKeys) any) field {
	return field{name: name, src: src, rule: ruleDerived, derive: derive}
}

// optional is f, written forward only when the row has its property.
func optional(f field) field { f.optional = true; return f }

// workflowKeyFields are the fields of both workflow key kinds, which
// differ only in isGlobal.
func workflowKeyFields(isGlobal field) []field {
	return []field{keyProp("keyId", "KeyId", ruleKeyWritten), prop("hashedKey"), prop("workflowId"), isGlobal,
		prop("createdBy"), stamp("createdAt"), stamp("lastUsedAt"), prop("revoked"), stamp("revokedAt"),
		prop("revokedBy"), stamp("expiresAt"), prop("description"), prop("disableGlobalKey")}
}

// The kinds (SPEC §6 Config, §7 Entities, §8 executions, §9
// relationships, §10 unknown kinds).
var (
	kindConfig = newKind(kindSpec{table: TableConfig, prefix: "config:", docType: "config", idPrefix: "config-", id: idConfigKey,
		fields: []field{fromKey("key"), {rule: ruleGroup, group: groupConfigValue},
			prop("description"), stamp("updatedAt"), prop("updatedBy")}})
	kindIntegration = newKind(kindSpec{table: TableConfig, prefix: "integration:", docType: "integration", idPrefix: "integration-",
		fields: []field{keyProp("name", "Name", ruleKey), propFrom("integrationType", "Type"), prop("enabled"),
			jsonProp("settings"), stamp("updatedAt"), prop("updatedBy")}})
	kindOAuth = newKind(kindSpec{table: TableConfig, prefix: "oauth:", docType: "oauth_connection", idPrefix: "oauth-",
		fields: []field{keyProp("connectionName", "ConnectionName", ruleKey), prop("description"),
			propFrom("oauthFlowType", "OAuthFlowType"), prop("clientId"), prop("clientSecretRef"),
			propFrom("oauthResponseRef", "OAuthResponseRef"), prop("authorizationUrl"), prop("tokenUrl"), prop("scopes"),
			prop("redirectUri"), prop("tokenType"), stamp("expiresAt"), prop("status"), prop("statusMessage"),
			stamp("lastRefreshAt"), stamp("lastTestAt"), stamp("createdAt"), prop("createdBy"), stamp("updatedAt"),
			prop("updatedBy")}})
	kindWorkflowKey = newKind(kindSpec{table: TableConfig, prefix: "workflowkey:", docType: "workflow_key", idPrefix: "workflowkey-",
		fields: workflowKeyFields(prop("isGlobal"))})
	// kindGlobalKey's rows are global whatever their IsGlobal says.
	kindGlobalKey = newKind(kindSpec{table: TableConfig, prefix: "systemconfig:globalkey:", docType: "workflow_key", idPrefix: "workflowkey-",
		fields:    workflowKeyFields(derived("isGlobal", "IsGlobal", func(rowKeys) any { return true })),
		isVariant: func(d Doc) bool { g, _ := d.Get("isGlobal"); return g == true }})
	// A schedule's WorkflowName property holds its description; the
	// workflow's name is the RowKey's key.
	kindSchedule = newKind(kindSpec{table: TableConfig, prefix: "schedule:", docType: "schedule", idPrefix: "schedule-",
		fields: []field{fromKey("workflowName"), propFrom("description", "WorkflowName"), prop("cronExpression"),
			stamp("nextRunAt"), stamp("lastRunAt"), prop("lastExecutionId"), prop("executionCount"), stamp("createdAt")}})
	kindBranding = newKind(kindSpec{table: TableConfig, prefix: "branding", docType: "branding", idPrefix: "branding-", id: idScope,
		fields: []field{prop("squareLogoUrl"), prop("rectangleLogoUrl"), prop("primaryColor"), prop("updatedBy"),
			stamp("updatedAt")}})
	kindGithub = newKind(kindSpec{table: TableConfig, prefix: "github", docType: "github_config", idPrefix: "github-", id: idScope,
		fields: []field{prop("status"), prop("secretRef"), prop("repoUrl"), prop("productionBranch"), stamp("updatedAt"),
			prop("updatedBy")}})
	kindJobStatus = newKind(kindSpec{table: TableConfig, prefix: "jobstatus:", docType: "job_status", idPrefix: "jobstatus-",
		fields: []field{keyProp("jobName", "JobName", ruleKeyWritten), stamp("startTime"), stamp("endTime"),
			prop("durationSeconds"), prop("status"), prop("triggerType"), prop("triggerUser"), prop("totalConnections"),
			prop("needsRefresh"), prop("refreshedSuccessfully"), prop("refreshFailed"), jsonProp("errors"),
			prop("errorMessage")}})

	kindOrg = newKind(kindSpec{table: TableEntities, prefix: "org:", docType: "organization", idPrefix: "org-", id: idOrg,
		fields: []field{prop("name"), prop("domain"), prop("isActive"), stamp("createdAt"), prop("createdBy"),
			stamp("updatedAt")}})
	kindUser = newKind(kindSpec{table: TableEntities, prefix: "user:", docType: "user", idPrefix: "user-",
		fields: []field{keyProp("email", "Email", ruleKeyWritten), prop("displayName"), prop("userType"),
			prop("isPlatformAdmin"), prop("isActive"), stamp("lastLogin"), stamp("createdAt"), prop("entraUserId"),
			stamp("lastEntraIdSync")}})
	kindRole = newKind(kindSpec{table: TableEntities, prefix: "role:", docType: "role", idPrefix: "role-",
		fields: []field{prop("name"), prop("description"), prop("isActive"), prop("createdBy"), stamp("createdAt"),
			stamp("updatedAt")}})
	// A legacy form is global when its scope is; its IsGlobal property is
	// not copied.
	kindForm = newKind(kindSpec{table: TableEntities, prefix: "form:", docType: "form", idPrefix: "form-",
		fields: []field{prop("name"), prop("description"), prop("linkedWorkflow"), jsonProp("formSchema"),
			prop("isActive"), derived("isGlobal", "IsGlobal", func(k rowKeys) any { return k.partitionKey == "GLOBAL" }),
			prop("accessLevel"), optional(prop("isPublic")), prop("createdBy"), stamp("createdAt"), stamp("updatedAt"),
			prop("launchWorkflowId"), jsonProp("allowedQueryParams"), jsonProp("defaultLaunchParams")}})
	// kindExecution's fields are SPEC §8's; its row carries exactly the
	// properties the application writes (§15).
	kindExecution = newKind(kindSpec{table: TableEntities, prefix: "execution:", docType: "execution", id: idExecution, closed: true,
		fields: []field{{name: "executionId", src: "ExecutionId", rule: ruleRawID}, prop("workflowName"), prop("formId"),
			prop("executedBy"), prop("executedByName"), prop("status"), jsonProp("inputData"),
			{rule: ruleGroup, group: groupResult}, prop("errorMessage"), prop("durationMs"), stamp("startedAt"),
			stamp("completedAt"),
			{name: "logsBlobPath", src: "Logs", rule: ruleLegacyBlob, blob: BlobLogs},
			{name: "variablesBlobPath", src: "Variables", rule: ruleLegacyBlob, blob: BlobVariables},
			{name: "snapshotBlobPath", src: "StateSnapshots", rule: ruleLegacyBlob, blob: BlobSnapshot},
			optional(prop("errorType")), optional(jsonProp("errorDetails")), optional(jsonProp("integrationCalls"))}})

	// kindRelationship is every relationship kind of relationshipKeys.
	kindRelationship = newKind(kindSpec{table: TableRelationships, docType: "relationship", id: idRowKey,
		fields: []field{derived("relationship", "", func(k rowKeys) any { return Kind(k.rowKey) })}})

	// kindUnknownConfig and kindUnknownEntities are the unknown kinds of
	// SPEC §10: every field is an unlisted property.
	kindUnknownConfig   = newKind(kindSpec{table: TableConfig, id: idUnknown})
	kindUnknownEntities = newKind(kindSpec{table: TableEntities, id: idUnknown})
)

// relationshipKeys are the relationship kinds (SPEC §9) and the
// properties that make up the RowKey of each after "{kind}:", in order
// (as Bifrost's rows carry them, e.g. userperm:{UserId}:{OrgId}).
var relationshipKeys = map[string][2]string{
	"userperm":     {"userId", "orgId"},
	"orgperm":      {"orgId", "userId"},
	"userrole":     {"userId", "roleId"},
	"formrole":     {"formId", "roleId"},
	"workflowform": {"workflowName", "formId"},
	"assignedrole": {"roleId", "userId"},
	"roleform":     {"roleId", "formId"},
}

// indexSpec is a kind of execution index row in Relationships (SPEC §9,
// §15): how its RowKey files an execution and what Bifrost's execution
// repository copies into it. Both directions read it: the forward
// transform drops these rows (and run and verify check them against the
// executions), reverse writes them for an execution doc.
type indexSpec struct {
	kind string
	// key is the execution property the row is filed under; partition:
	// the key is followed by the execution's PartitionKey (workflowexec):
	// {kind}:{key}[:{partition}]:{executionId}.
	key       string
	partition bool
	// required: an execution without the key is worth a warning when
	// written back (the application always sets it).
	required bool
	// active, when not nil, says for which key values the row exists
	// (status: while Pending or Running); nil: whenever the key is set.
	active func(key string) bool
	// props are the execution's properties the row copies, besides
	// ExecutionId and OrganizationId; stamped: it carries UpdatedAt, the
	// time it was written.
	props   []string
	stamped bool
}

// rowKey is the RowKey of the index row filing execution id under key
// (and partition).
func (x *indexSpec) rowKey(key, partition, id string) string {
	if x.partition {
		return x.kind + ":" + key + ":" + partition + ":" + id
	}
	return x.kind + ":" + key + ":" + id
}

// allIndexes are the execution index kinds, in the order reverse writes
// them.
var allIndexes = []*indexSpec{
	{kind: "userexec", key: "ExecutedBy", required: true,
		props: []string{"WorkflowName", "FormId", "Status", "StartedAt", "CompletedAt", "DurationMs", "ErrorMessage", "ExecutedByName"}},
	{kind: "workflowexec", key: "WorkflowName", partition: true, required: true,
		props: []string{"ExecutedBy", "ExecutedByName", "FormId", "Status", "StartedAt", "CompletedAt", "DurationMs", "ErrorMessage"}},
	{kind: "formexec", key: "FormId",
		props: []string{"WorkflowName", "ExecutedBy", "ExecutedByName", "Status", "StartedAt", "CompletedAt", "DurationMs", "ErrorMessage"}},
	{kind: "status", key: "Status", active: statusIndexed, stamped: true,
		props: []string{"WorkflowName", "ExecutedBy", "ExecutedByName", "Status", "StartedAt"}},
}

// allKinds are the kinds of defaultKinds; in each table, a RowKey is of
// the first kind that matches it.
var allKinds = []*kindSpec{
	kindConfig, kindIntegration, kindOAuth, kindWorkflowKey, kindGlobalKey, kindSchedule, kindBranding, kindGithub,
	kindJobStatus, kindOrg, kindUser, kindRole, kindForm, kindExecution, kindRelationship,
	kindUnknownConfig, kindUnknownEntities,
}

// defaultKinds is the kind table Transform, ReverseDoc and DocRowRef use.
var defaultKinds = newKindTable(allKinds, allIndexes)

// kindTable is a set of kinds, indexed for both directions.
type kindTable struct {
	// matched are the Config and Entities kinds matched by RowKey, in
	// order.
	matched      []*kindSpec
	relationship *kindSpec
	unknown      map[string]*kindSpec // by table
	// byType are the kinds a doc without _migration can be, by type,
	// the first before its variants.
	byType map[string][]*kindSpec
	// stamps are each table's timestamp properties; docStamps the same
	// under their doc names.
	stamps, docStamps map[string]map[string]bool
	// indexes are the execution index kinds, in order.
	indexes []*indexSpec
}

// newKindTable indexes kinds and the execution index kinds.
func newKindTable(kinds []*kindSpec, indexes []*indexSpec) *kindTable {
	t := &kindTable{unknown: map[string]*kindSpec{}, byType: map[string][]*kindSpec{}, stamps: map[string]map[string]bool{},
		docStamps: map[string]map[string]bool{}, indexes: indexes}
	for _, k := range kinds {
		switch {
		case k.id == idUnknown:
			t.unknown[k.table] = k
			continue
		case k.table == TableRelationships:
			t.relationship = k
		default:
			t.matched = append(t.matched, k)
		}
		t.byType[k.docType] = append(t.byType[k.docType], k)
		for _, f := range k.fields {
			if f.stamp {
				if t.stamps[k.table] == nil {
					t.stamps[k.table], t.docStamps[k.table] = map[string]bool{}, map[string]bool{}
				}
				t.stamps[k.table][f.src] = true
				t.docStamps[k.table][camel(f.src)] = true
			}
		}
	}
	return t
}

// classify returns the kind of a row of table with RowKey rk, and the key
// in the RowKey: the first kind of the table that matches, else the
// table's unknown kind; nil for rows that never become docs (unknown
// relationships, other tables). It is both directions' dispatch:
// Transform builds the doc of this kind, ReverseDoc reads a doc back as
// the kind its _migration row has.
func (t *kindTable) classify(table, rk string) (*kindSpec, string) {
	if table == TableRelationships {
		kind, rest, _ := strings.Cut(rk, ":")
		if _, ok := relationshipKeys[kind]; ok {
			return t.relationship, rest
		}
		return nil, ""
	}
	for _, k := range t.matched {
		if k.table != table {
			continue
		}
		if key, ok := k.match(rk); ok {
			return k, key
		}
	}
	return t.unknown[table], ""
}

// ofType returns the kind of a doc without _migration from its type: the
// first kind of that type, or a later one whose isVariant says the doc is
// of it; nil for a type no kind gives.
func (t *kindTable) ofType(docType string, doc Doc) *kindSpec {
	ks := t.byType[docType]
	if len(ks) == 0 {
		return nil
	}
	for _, k := range ks[1:] {
		if k.isVariant != nil && k.isVariant(doc) {
			return k
		}
	}
	return ks[0]
}

// index returns the execution index kind named kind, nil for another.
func (t *kindTable) index(kind string) *indexSpec {
	for _, x := range t.indexes {
		if x.kind == kind {
			return x
		}
	}
	return nil
}
