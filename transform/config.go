package transform

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// config transforms a Config row (SPEC §6).
func (b *builder) config() {
	rk := b.row.RowKey
	kind, rest, hasColon := strings.Cut(rk, ":")
	switch {
	case kind == "config" && hasColon:
		b.start(ContainerEntities, "config-"+strings.ReplaceAll(rest, "_", "-"), b.rowScope(), "config")
		b.configValue(rest)
		b.fields("description", "updatedAt", "updatedBy")
	case kind == "integration" && hasColon:
		b.start(ContainerEntities, "integration-"+rest, b.rowScope(), "integration")
		b.keyField("name", "Name", rest)
		b.from("integrationType", "Type")
		b.fields("enabled")
		b.json("settings", "Settings")
		b.fields("updatedAt", "updatedBy")
	case kind == "oauth" && hasColon:
		b.start(ContainerEntities, "oauth-"+rest, b.rowScope(), "oauth_connection")
		b.keyField("connectionName", "ConnectionName", rest)
		b.fields("description")
		b.from("oauthFlowType", "OAuthFlowType")
		b.from("clientId", "ClientId")
		b.from("clientSecretRef", "ClientSecretRef")
		b.from("oauthResponseRef", "OAuthResponseRef")
		b.fields("authorizationUrl", "tokenUrl", "scopes", "redirectUri", "tokenType", "expiresAt",
			"status", "statusMessage", "lastRefreshAt", "lastTestAt", "createdAt", "createdBy",
			"updatedAt", "updatedBy")
	case kind == "workflowkey" && hasColon:
		b.workflowKey(rest, false)
	case kind == "systemconfig" && strings.HasPrefix(rest, "globalkey:"):
		b.workflowKey(strings.TrimPrefix(rest, "globalkey:"), true)
	case kind == "schedule" && hasColon:
		b.start(ContainerEntities, "schedule-"+rest, b.rowScope(), "schedule")
		b.set("workflowName", rest)
		// The source's WorkflowName property holds the description.
		b.from("description", "WorkflowName")
		b.fields("cronExpression", "nextRunAt", "lastRunAt", "lastExecutionId", "executionCount", "createdAt")
	case rk == "branding":
		scope := b.rowScope()
		b.start(ContainerEntities, "branding-"+scope, scope, "branding")
		b.fields("squareLogoUrl", "rectangleLogoUrl", "primaryColor", "updatedBy", "updatedAt")
	case rk == "github":
		scope := b.rowScope()
		b.start(ContainerEntities, "github-"+scope, scope, "github_config")
		b.fields("status", "secretRef", "repoUrl", "productionBranch", "updatedAt", "updatedBy")
	case kind == "jobstatus" && hasColon:
		b.start(ContainerEntities, "jobstatus-"+rest, b.rowScope(), "job_status")
		b.keyField("jobName", "JobName", rest)
		b.fields("startTime", "endTime", "durationSeconds", "status", "triggerType", "triggerUser",
			"totalConnections", "needsRefresh", "refreshedSuccessfully", "refreshFailed")
		b.json("errors", "Errors")
		b.fields("errorMessage")
	default:
		b.unknownKind()
		return
	}
	b.extras()
}

// workflowKey writes a workflow_key doc; global is true for
// systemconfig:globalkey: rows.
func (b *builder) workflowKey(id string, global bool) {
	b.start(ContainerEntities, "workflowkey-"+id, b.rowScope(), "workflow_key")
	b.keyField("keyId", "KeyId", id)
	b.fields("hashedKey", "workflowId")
	if global {
		b.use("IsGlobal")
		b.set("isGlobal", true)
	} else {
		b.from("isGlobal", "IsGlobal")
	}
	b.fields("createdBy", "createdAt", "lastUsedAt", "revoked", "revokedAt", "revokedBy",
		"expiresAt", "description", "disableGlobalKey")
}

// Config value dead-letter reasons (SPEC §6).
const (
	DeadLetterConfigInt  = `config value is not an integer (Type "int")`
	DeadLetterConfigBool = `config value is not true or false (Type "bool")`
	DeadLetterConfigJSON = `config value is not valid JSON (Type "json")`
)

// configValue writes key, value, secretRef and configType of a config: row,
// typing the value by Type.
func (b *builder) configValue(key string) {
	b.set("key", key)
	typ, hasType := b.prop("Type")
	typeName := typ.Str
	if hasType && typ.Type != EdmString {
		typeName = fmt.Sprint(b.value("Type", typ))
	}
	v, hasValue := b.prop("Value")
	var value any
	secretRefFromValue := false
	switch {
	case typeName == "secret_ref" && hasType:
		secretRefFromValue = true
	case !hasValue:
	case typeName == "string" && hasType:
		value = b.value("Value", v)
	case typeName == "int" && hasType:
		switch v.Type {
		case EdmInt32, EdmInt64:
			value = b.value("Value", v)
		case EdmString:
			n, err := strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64)
			if err != nil {
				b.deadLetter(DeadLetterConfigInt)
				return
			}
			value = b.value("Value", Value{Type: EdmInt64, Int: n})
		default:
			b.deadLetter(DeadLetterConfigInt)
			return
		}
	case typeName == "bool" && hasType:
		switch {
		case v.Type == EdmBoolean:
			value = v.Bool
		case v.Type == EdmString && strings.EqualFold(strings.TrimSpace(v.Str), "true"):
			value = true
		case v.Type == EdmString && strings.EqualFold(strings.TrimSpace(v.Str), "false"):
			value = false
		default:
			b.deadLetter(DeadLetterConfigBool)
			return
		}
	case typeName == "json" && hasType:
		if v.Type != EdmString {
			b.deadLetter(DeadLetterConfigJSON)
			return
		}
		dv, big, err := decodeJSONField(v.Str)
		if err != nil {
			b.deadLetter(DeadLetterConfigJSON)
			return
		}
		if big {
			b.warn(ReasonJSONBigInt, "Value")
		}
		value = dv
	default:
		value = b.value("Value", v)
	}
	if !hasType {
		b.warn(ReasonUnknownConfigType, "Type absent")
	} else if !slices.Contains([]string{"string", "int", "bool", "json", "secret_ref"}, typeName) {
		b.warn(ReasonUnknownConfigType, fmt.Sprintf("Type %q", typeName))
	}
	b.set("value", value)
	if secretRefFromValue {
		if hasValue {
			b.set("secretRef", b.value("Value", v))
		} else {
			b.from("secretRef", "SecretRef")
		}
	} else {
		b.from("secretRef", "SecretRef")
	}
	b.from("configType", "Type")
}
