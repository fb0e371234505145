package transform

import (
	"fmt"
	"strings"
)

// The kinds of SPEC §6, §7, §9 read backwards: for each, its table, doc
// type, RowKey prefix, id prefix and the doc fields with their source
// properties. The forward transform states the same mapping as code; the
// round-trip tests (reverse_roundtrip_test.go) hold the two together.

// revField is one listed doc field of a kind and its source property.
type revField struct {
	name, src string
	enc       fieldEnc
}

// revKind describes one kind for ReverseDoc.
type revKind struct {
	table   string
	docType string
	// prefix is the RowKey before the key ("config:"); the whole RowKey
	// for branding and github.
	prefix string
	// idPrefix is the doc id before the key ("config-").
	idPrefix string
	fields   []revField
	// special are fields handled by the kind's own code (config values,
	// execution results, fields derived from other fields).
	special []string
	// keyField is the doc field that holds the RowKey's key, if any.
	keyField string
	// keyWritten: the application writes the key property (a user's
	// Email, a workflow key's KeyId, a job's JobName) even though it
	// repeats the RowKey. An integration's Name and an OAuth connection's
	// ConnectionName are not written unless they differ from it.
	keyWritten bool
}

// has reports whether name is one of the kind's listed fields.
func (k *revKind) has(name string) bool {
	for _, f := range k.fields {
		if f.name == name {
			return true
		}
	}
	for _, s := range k.special {
		if s == name {
			return true
		}
	}
	return false
}

// plainFields lists fields whose source property is the field's name with
// its first letter upper-cased.
func plainFields(names ...string) []revField {
	out := make([]revField, len(names))
	for i, n := range names {
		out[i] = revField{n, pascal(n), encPlain}
	}
	return out
}

func join(parts ...[]revField) []revField {
	var out []revField
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	kindConfig = revKind{table: TableConfig, docType: "config", prefix: "config:", idPrefix: "config-",
		special: []string{"key", "value", "secretRef", "configType"},
		fields:  plainFields("description", "updatedAt", "updatedBy")}
	kindIntegration = revKind{table: TableConfig, docType: "integration", prefix: "integration:", idPrefix: "integration-",
		keyField: "name",
		fields: join([]revField{{"name", "Name", encKey}, {"integrationType", "Type", encPlain}},
			plainFields("enabled"), []revField{{"settings", "Settings", encJSON}}, plainFields("updatedAt", "updatedBy"))}
	kindOAuth = revKind{table: TableConfig, docType: "oauth_connection", prefix: "oauth:", idPrefix: "oauth-",
		keyField: "connectionName",
		fields: join([]revField{{"connectionName", "ConnectionName", encKey}}, plainFields("description"),
			[]revField{{"oauthFlowType", "OAuthFlowType", encPlain}, {"clientId", "ClientId", encPlain},
				{"clientSecretRef", "ClientSecretRef", encPlain}, {"oauthResponseRef", "OAuthResponseRef", encPlain}},
			plainFields("authorizationUrl", "tokenUrl", "scopes", "redirectUri", "tokenType", "expiresAt",
				"status", "statusMessage", "lastRefreshAt", "lastTestAt", "createdAt", "createdBy",
				"updatedAt", "updatedBy"))}
	workflowKeyTail = plainFields("createdBy", "createdAt", "lastUsedAt", "revoked", "revokedAt", "revokedBy",
		"expiresAt", "description", "disableGlobalKey")
	kindWorkflowKey = revKind{table: TableConfig, docType: "workflow_key", prefix: "workflowkey:", idPrefix: "workflowkey-",
		keyField: "keyId", keyWritten: true,
		fields: join([]revField{{"keyId", "KeyId", encKey}}, plainFields("hashedKey", "workflowId", "isGlobal"), workflowKeyTail)}
	kindGlobalKey = revKind{table: TableConfig, docType: "workflow_key", prefix: "systemconfig:globalkey:", idPrefix: "workflowkey-",
		keyField: "keyId", keyWritten: true,
		fields: join([]revField{{"keyId", "KeyId", encKey}}, plainFields("hashedKey", "workflowId"),
			[]revField{{"isGlobal", "", encDerived}}, workflowKeyTail)}
	kindSchedule = revKind{table: TableConfig, docType: "schedule", prefix: "schedule:", idPrefix: "schedule-",
		keyField: "workflowName",
		fields: join([]revField{{"workflowName", "", encDerived}, {"description", "WorkflowName", encPlain}},
			plainFields("cronExpression", "nextRunAt", "lastRunAt", "lastExecutionId", "executionCount", "createdAt"))}
	kindBranding = revKind{table: TableConfig, docType: "branding", prefix: "branding", idPrefix: "branding-",
		fields: plainFields("squareLogoUrl", "rectangleLogoUrl", "primaryColor", "updatedBy", "updatedAt")}
	kindGithub = revKind{table: TableConfig, docType: "github_config", prefix: "github", idPrefix: "github-",
		fields: plainFields("status", "secretRef", "repoUrl", "productionBranch", "updatedAt", "updatedBy")}
	kindJobStatus = revKind{table: TableConfig, docType: "job_status", prefix: "jobstatus:", idPrefix: "jobstatus-",
		keyField: "jobName", keyWritten: true,
		fields: join([]revField{{"jobName", "JobName", encKey}},
			plainFields("startTime", "endTime", "durationSeconds", "status", "triggerType", "triggerUser",
				"totalConnections", "needsRefresh", "refreshedSuccessfully", "refreshFailed"),
			[]revField{{"errors", "Errors", encJSON}}, plainFields("errorMessage"))}
	kindOrg = revKind{table: TableEntities, docType: "organization", prefix: "org:", idPrefix: "org-",
		fields: plainFields("name", "domain", "isActive", "createdAt", "createdBy", "updatedAt")}
	kindUser = revKind{table: TableEntities, docType: "user", prefix: "user:", idPrefix: "user-",
		keyField: "email", keyWritten: true,
		fields: join([]revField{{"email", "Email", encKey}},
			plainFields("displayName", "userType", "isPlatformAdmin", "isActive", "lastLogin", "createdAt",
				"entraUserId", "lastEntraIdSync"))}
	kindRole = revKind{table: TableEntities, docType: "role", prefix: "role:", idPrefix: "role-",
		fields: plainFields("name", "description", "isActive", "createdBy", "createdAt", "updatedAt")}
	kindForm = revKind{table: TableEntities, docType: "form", prefix: "form:", idPrefix: "form-",
		fields: join(plainFields("name", "description", "linkedWorkflow"), []revField{{"formSchema", "FormSchema", encJSON}},
			plainFields("isActive"), []revField{{"isGlobal", "", encDerived}}, plainFields("accessLevel", "isPublic",
				"createdBy", "createdAt", "updatedAt", "launchWorkflowId"),
			[]revField{{"allowedQueryParams", "AllowedQueryParams", encJSON}, {"defaultLaunchParams", "DefaultLaunchParams", encJSON}})}
	// kindExecution's fields are the properties the application writes for
	// an execution (SPEC §15); result and resultInBlob are decided together
	// and the blob paths, resultType and resultSize are derived.
	kindExecution = revKind{table: TableEntities, docType: "execution", prefix: "execution:",
		special: []string{"result", "resultInBlob", "resultType", "resultSize", "resultBlobPath",
			"logsBlobPath", "variablesBlobPath", "snapshotBlobPath"},
		fields: join(plainFields("executionId", "workflowName", "formId", "executedBy", "executedByName", "status"),
			[]revField{{"inputData", "InputData", encJSON}},
			plainFields("errorMessage", "durationMs", "startedAt", "completedAt", "errorType"),
			[]revField{{"errorDetails", "ErrorDetails", encJSON}, {"integrationCalls", "IntegrationCalls", encJSON}})}
	kindRelationship = revKind{table: TableRelationships, docType: "relationship",
		fields: []revField{{"relationship", "", encDerived}}}
	// kindUnknownConfig and kindUnknownEntities are the unknown kinds of
	// SPEC §10: every field is an unlisted property.
	kindUnknownConfig   = revKind{table: TableConfig}
	kindUnknownEntities = revKind{table: TableEntities}
)

// relationshipKeys are the properties that make up the RowKey of each
// relationship kind after "{kind}:", in order (as Bifrost's rows carry
// them, e.g. userperm:{UserId}:{OrgId}).
var relationshipKeys = map[string][2]string{
	"userperm":     {"userId", "orgId"},
	"orgperm":      {"orgId", "userId"},
	"userrole":     {"userId", "roleId"},
	"formrole":     {"formId", "roleId"},
	"workflowform": {"workflowName", "formId"},
	"assignedrole": {"roleId", "userId"},
	"roleform":     {"roleId", "formId"},
}

// classify returns the kind the forward transform gives a row of table
// with this RowKey (the same patterns as Transform's switch) and the key
// in the RowKey; nil for rows that never become docs (execution indexes,
// unknown relationships, other tables).
func classify(table, rk string) (*revKind, string) {
	kind, rest, hasColon := strings.Cut(rk, ":")
	switch table {
	case TableConfig:
		switch {
		case kind == "config" && hasColon:
			return &kindConfig, rest
		case kind == "integration" && hasColon:
			return &kindIntegration, rest
		case kind == "oauth" && hasColon:
			return &kindOAuth, rest
		case kind == "workflowkey" && hasColon:
			return &kindWorkflowKey, rest
		case kind == "systemconfig" && strings.HasPrefix(rest, "globalkey:"):
			return &kindGlobalKey, strings.TrimPrefix(rest, "globalkey:")
		case kind == "schedule" && hasColon:
			return &kindSchedule, rest
		case rk == "branding":
			return &kindBranding, ""
		case rk == "github":
			return &kindGithub, ""
		case kind == "jobstatus" && hasColon:
			return &kindJobStatus, rest
		}
		return &kindUnknownConfig, ""
	case TableEntities:
		if hasColon {
			switch kind {
			case "org":
				return &kindOrg, rest
			case "user":
				return &kindUser, rest
			case "role":
				return &kindRole, rest
			case "form":
				return &kindForm, rest
			case "execution":
				return &kindExecution, rest
			}
		}
		return &kindUnknownEntities, ""
	case TableRelationships:
		if _, ok := relationshipKeys[kind]; ok {
			return &kindRelationship, rest
		}
	}
	return nil, ""
}

// docType is the type the forward transform gives a doc of kind k from
// RowKey rk.
func (k *revKind) docTypeOf(rk string) string {
	if k.docType == "" {
		return Kind(rk) // unknown kinds: type = kind
	}
	return k.docType
}

// kindsByType are the kinds a doc without _migration can be, by type.
var kindsByType = map[string]*revKind{
	"config": &kindConfig, "integration": &kindIntegration, "oauth_connection": &kindOAuth,
	"workflow_key": &kindWorkflowKey, "schedule": &kindSchedule, "branding": &kindBranding,
	"github_config": &kindGithub, "job_status": &kindJobStatus, "organization": &kindOrg,
	"user": &kindUser, "role": &kindRole, "form": &kindForm, "execution": &kindExecution,
	"relationship": &kindRelationship,
}

// locate finds the doc's table, keys and kind: from _migration when the
// doc has it, else from its type, id and scope. It dead-letters and
// returns false when it cannot.
func (r *reverser) locate() bool {
	var typeOK, idOK bool
	r.docType, typeOK = r.str("type")
	r.id, idOK = r.str("id")
	r.scp, _ = r.str("scope")
	if !typeOK || !idOK {
		r.dead(ReverseBadDoc, "no string id or type")
		return false
	}
	mig, hasMig, err := DocMigration(r.doc)
	if err != nil {
		r.dead(ReverseBadDoc, err.Error())
		return false
	}
	r.mig, r.hasMig = mig, hasMig
	if hasMig {
		k, key := classify(mig.Table, mig.RowKey)
		if k == nil {
			r.dead(ReverseKindMismatch, fmt.Sprintf("_migration names a %s row of kind %q, which is not migrated as a doc", mig.Table, Kind(mig.RowKey)))
			return false
		}
		if want := k.docTypeOf(mig.RowKey); r.docType != want {
			r.dead(ReverseKindMismatch, fmt.Sprintf("doc type %q, _migration row of kind %q gives %q", r.docType, Kind(mig.RowKey), want))
			return false
		}
		r.kind, r.keyFromRK = k, key
		r.table, r.pk, r.rk = mig.Table, mig.PartitionKey, mig.RowKey
		if k == &kindExecution {
			r.execID = executionIDOfDoc(r.doc, mig.RowKey)
		}
		return true
	}
	k, known := kindsByType[r.docType]
	if !known {
		r.dead(ReverseNoKeys, fmt.Sprintf("a doc of unknown type %q has no _migration: its RowKey and table are known only from there", r.docType))
		return false
	}
	r.kind, r.table = k, k.table
	switch k {
	case &kindOrg, &kindRelationship:
		r.pk = "GLOBAL"
	default:
		switch {
		case r.scp == "GLOBAL" || r.scp == "SYSTEM":
			r.pk = r.scp
		case strings.HasPrefix(r.scp, "org-") && len(r.scp) > len("org-"):
			r.pk = strings.TrimPrefix(r.scp, "org-")
		default:
			r.dead(ReverseNoKeys, "scope is not GLOBAL, SYSTEM or org-{id}")
			return false
		}
	}
	return r.deriveRowKey()
}

// deriveRowKey sets the RowKey of a doc without _migration: the inverse of
// the id rules of SPEC §6–§10, checked by applying them again.
func (r *reverser) deriveRowKey() bool {
	k := r.kind
	fail := func(detail string) bool {
		r.dead(ReverseNoKeys, detail)
		return false
	}
	switch k {
	case &kindConfig:
		key, ok := r.str("key")
		if !ok {
			return fail("config doc has no string key")
		}
		if id, _, _ := SanitizeID("config-" + strings.ReplaceAll(key, "_", "-")); id != r.id {
			return fail("config key does not give the doc id")
		}
		r.rk, r.keyFromRK = "config:"+key, key
	case &kindBranding, &kindGithub:
		if r.id != k.idPrefix+r.scp {
			return fail(fmt.Sprintf("%s doc id is not %s + scope", r.docType, k.idPrefix))
		}
		r.rk = k.prefix
	case &kindOrg:
		// org:{uuid} and org:org-{uuid} both give the id org-{uuid}; the
		// application writes the first.
		uuid, ok := r.keyFromID("")
		if !ok || uuid == "" {
			return fail("organization id does not map back to org:{id}")
		}
		r.rk, r.keyFromRK = "org:"+uuid, uuid
	case &kindExecution:
		r.execID = executionIDOfDoc(r.doc, "")
		if r.execID == "" {
			raw, ok := r.keyFromID("")
			if !ok {
				return fail("execution id does not map back to an execution id")
			}
			r.execID = raw
		}
		if id, _, _ := SanitizeID(r.execID); id != r.id {
			return fail("executionId does not give the doc id")
		}
		s, _ := r.str("startedAt")
		started, ok := ParseTimestamp(s)
		if !ok {
			return fail("execution has no parseable startedAt, which its RowKey needs")
		}
		r.rk = fmt.Sprintf("execution:%d_%s", pythonReverseTs(started), r.execID)
	case &kindRelationship:
		return r.relationshipRowKey()
	default:
		key, ok := r.keyFromID(k.keyField)
		if !ok {
			return fail(fmt.Sprintf("%s id does not map back to a RowKey", r.docType))
		}
		r.keyFromRK = key
		r.rk = k.prefix + key
		if k == &kindWorkflowKey {
			if g, _ := r.doc.Get("isGlobal"); g == true {
				r.kind, r.rk = &kindGlobalKey, kindGlobalKey.prefix+key
			}
		}
	}
	return true
}

// keyFromID returns the key a doc id was made from: the id after the
// kind's prefix, percent-decoded, when encoding it again gives the id;
// for a truncated id (SanitizeID), the doc's key field when that gives
// the id.
func (r *reverser) keyFromID(keyField string) (string, bool) {
	prefix := r.kind.idPrefix
	if !looksTruncated(r.id) {
		if rest, ok := strings.CutPrefix(r.id, prefix); ok {
			if raw, err := DecodeID(rest); err == nil {
				if id, _, _ := SanitizeID(prefix + raw); id == r.id {
					return raw, true
				}
			}
		}
		return "", false
	}
	if keyField != "" {
		if key, ok := r.str(keyField); ok {
			if id, _, _ := SanitizeID(prefix + key); id == r.id {
				return key, true
			}
		}
	}
	return "", false
}

// looksTruncated reports whether an id has the form SanitizeID gives a
// long one: at most 238 bytes (a few less where the cut backs off a
// character or an escape), "~" and 16 lower-case hex digits. Such an id
// encodes itself, so only its length and suffix tell it from a short one.
func looksTruncated(id string) bool {
	n := len(id)
	if n < idTruncatedPrefix+17-5 || n > MaxIDBytes || id[n-17] != '~' {
		return false
	}
	for i := n - 16; i < n; i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// relationshipRowKey derives a relationship's RowKey from its kind and
// the two properties its RowKey is made of, checked against the doc id.
func (r *reverser) relationshipRowKey() bool {
	kind, _ := r.str("relationship")
	parts, ok := relationshipKeys[kind]
	if !ok {
		r.dead(ReverseNoKeys, fmt.Sprintf("relationship kind %q is not one the tool migrates", kind))
		return false
	}
	a, ok1 := r.str(parts[0])
	b, ok2 := r.str(parts[1])
	rk := kind + ":" + a + ":" + b
	if id, _, _ := SanitizeID(strings.ReplaceAll(rk, ":", "-")); !ok1 || !ok2 || id != r.id {
		r.dead(ReverseNoKeys, fmt.Sprintf("%s relationship: %s and %s do not give the doc id", kind, parts[0], parts[1]))
		return false
	}
	r.rk, r.keyFromRK = rk, a+":"+b
	return true
}

// executionIDOfDoc is an execution doc's executionId field, else the id in
// RowKey rk (after the first '_'), else "".
func executionIDOfDoc(doc Doc, rk string) string {
	if v, _ := doc.Get("executionId"); v != nil {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	if _, id, ok := strings.Cut(strings.TrimPrefix(rk, "execution:"), "_"); ok && rk != "" {
		return id
	}
	return ""
}

// Migration is a doc's _migration (SPEC §10): the keys and Timestamp of
// the row it was made from, and the hash of its content then.
type Migration struct {
	Table, PartitionKey, RowKey string
	// Timestamp is the row's Timestamp in TimestampLayout; "" when it was
	// null (a row without one).
	Timestamp string
	Hash      string
}

// DocMigration returns the doc's _migration and whether it has one. It
// returns an error when _migration is present but is not an object with
// the string table (Config, Entities or Relationships), partitionKey,
// rowKey and hash, and a timestamp that is null or a timestamp string.
// It is pure and safe for concurrent use.
func DocMigration(doc Doc) (Migration, bool, error) {
	v, ok := doc.Get("_migration")
	if !ok {
		return Migration{}, false, nil
	}
	d, isDoc := v.(Doc)
	if !isDoc {
		return Migration{}, true, fmt.Errorf("_migration is not an object")
	}
	var m Migration
	for _, f := range []struct {
		name string
		dst  *string
	}{{"table", &m.Table}, {"partitionKey", &m.PartitionKey}, {"rowKey", &m.RowKey}, {"hash", &m.Hash}} {
		s, isStr := getString(d, f.name)
		if !isStr {
			return Migration{}, true, fmt.Errorf("_migration.%s is not a string", f.name)
		}
		*f.dst = s
	}
	if TableOrder(m.Table) == len(Tables()) {
		return Migration{}, true, fmt.Errorf("_migration.table is not Config, Entities or Relationships")
	}
	switch ts, _ := d.Get("timestamp"); x := ts.(type) {
	case nil:
	case string:
		if _, ok := ParseTimestamp(x); !ok {
			return Migration{}, true, fmt.Errorf("_migration.timestamp is not a timestamp")
		}
		m.Timestamp = x
	default:
		return Migration{}, true, fmt.Errorf("_migration.timestamp is not a string")
	}
	return m, true, nil
}

func getString(d Doc, name string) (string, bool) {
	v, _ := d.Get(name)
	s, ok := v.(string)
	return s, ok
}

// DecodeDocOrdered decodes a doc's JSON keeping its members in order
// (json.dumps writes a dict's keys in order) and numbers as json.Number
// (their exact text), into the Doc ReverseDoc reads. A repeated member
// keeps its last value at its first position, as Python's json.loads
// does. It returns an error when b is not valid JSON (naming the byte
// offset, not the text) or not an object. It is pure and safe for
// concurrent use.
func DecodeDocOrdered(b []byte) (Doc, error) {
	v, _, err := decodeJSONField(string(b))
	if err != nil {
		return nil, fmt.Errorf("decode doc: %w", err)
	}
	d, ok := v.Value().(Doc)
	if !ok {
		return nil, fmt.Errorf("decode doc: not a JSON object")
	}
	return d, nil
}

// executionStatuses are Bifrost's execution statuses (SPEC §8).
var executionStatuses = []string{"Pending", "Running", "Success", "Failed", "Timeout", "CompletedWithErrors", "Cancelling", "Cancelled"}

// statusIndexed reports the statuses that have a status index row: the
// repository keeps one only while an execution is Pending or Running.
func statusIndexed(status string) bool { return status == "Pending" || status == "Running" }

// DocRowRef returns the table and keys of the row a doc goes back to —
// the row to read before ReverseDoc, whose existing argument it is —
// or, when they cannot be known, the dead letter ReverseDoc would give.
// It is pure and safe for concurrent use.
func DocRowRef(doc Doc) (RowRef, *ReverseDeadLetter) {
	r := &reverser{doc: doc}
	if !r.locate() {
		return RowRef{}, r.fail
	}
	return RowRef{r.table, r.pk, r.rk}, nil
}
