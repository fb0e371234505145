package transform

import "testing"

// One case per row of the SPEC §6 table, plus the §6 value typing.
func TestConfigKinds(t *testing.T) {
	cases := []rowCase{
		{
			name:   "config string",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"config:smtp_host","Value":"mail.example","Type":"string","Description":"d","UpdatedAt":"2025-11-20T14:03:12.345678","UpdatedBy":"a@x"}`,
			id:     "config-smtp-host",
			doc:    `{"id":"config-smtp-host","type":"config","scope":"GLOBAL","key":"smtp_host","value":"mail.example","secretRef":null,"configType":"string","description":"d","updatedAt":"2025-11-20T14:03:12.3456780Z","updatedBy":"a@x"}`,
		},
		{
			name:   "config absent properties are null",
			entity: `{"PartitionKey":"org-1","RowKey":"config:k","Type":"string"}`,
			doc:    `{"id":"config-k","type":"config","scope":"org-1","key":"k","value":null,"secretRef":null,"configType":"string","description":null,"updatedAt":null,"updatedBy":null}`,
		},
		{
			name:   "integration",
			entity: `{"PartitionKey":"org-1","RowKey":"integration:halopsa","Type":"psa","Enabled":true,"Settings":"{\"url\":\"https://h\",\"n\":2}","UpdatedAt":"2025-01-01T00:00:00+01:00","UpdatedBy":"u"}`,
			doc:    `{"id":"integration-halopsa","type":"integration","scope":"org-1","name":"halopsa","integrationType":"psa","enabled":true,"settings":{"url":"https://h","n":2},"updatedAt":"2024-12-31T23:00:00.0000000Z","updatedBy":"u"}`,
		},
		{
			name:   "integration Name property differs from RowKey",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"integration:graph","Name":"Graph","Settings":"{}"}`,
			doc:    `{"id":"integration-graph","type":"integration","scope":"GLOBAL","name":"Graph","integrationType":null,"enabled":null,"settings":{},"updatedAt":null,"updatedBy":null}`,
			warn:   []string{"key property differs from RowKey: Name"},
		},
		{
			name:   "integration Settings invalid JSON",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"integration:graph","Settings":"{'a': 1}"}`,
			disp:   DispositionDeadLetter, dead: "property Settings is not valid JSON: invalid JSON at offset 1",
		},
		{
			name: "oauth",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"oauth:graph","Description":"d","OAuthFlowType":"authorization_code","ClientId":"cid","ClientSecretRef":"kv-secret",` +
				`"OAuthResponseRef":"kv-resp","AuthorizationUrl":"https://a","TokenUrl":"https://t","Scopes":"a b","RedirectUri":"https://r","TokenType":"Bearer",` +
				`"ExpiresAt":"2025-11-20T15:00:00","Status":"completed","StatusMessage":"ok","LastRefreshAt":"2025-11-20T14:00:00","LastTestAt":"2025-11-20T14:30:00",` +
				`"CreatedAt":"2025-01-01T00:00:00","CreatedBy":"c","UpdatedAt":"2025-11-20T14:00:00","UpdatedBy":"u"}`,
			doc: `{"id":"oauth-graph","type":"oauth_connection","scope":"GLOBAL","connectionName":"graph","description":"d","oauthFlowType":"authorization_code",` +
				`"clientId":"cid","clientSecretRef":"kv-secret","oauthResponseRef":"kv-resp","authorizationUrl":"https://a","tokenUrl":"https://t","scopes":"a b",` +
				`"redirectUri":"https://r","tokenType":"Bearer","expiresAt":"2025-11-20T15:00:00.0000000Z","status":"completed","statusMessage":"ok",` +
				`"lastRefreshAt":"2025-11-20T14:00:00.0000000Z","lastTestAt":"2025-11-20T14:30:00.0000000Z","createdAt":"2025-01-01T00:00:00.0000000Z",` +
				`"createdBy":"c","updatedAt":"2025-11-20T14:00:00.0000000Z","updatedBy":"u"}`,
		},
		{
			name: "workflowkey",
			entity: `{"PartitionKey":"org-1","RowKey":"workflowkey:k1","KeyId":"k1","HashedKey":"h","WorkflowId":"wf","CreatedBy":"c","CreatedAt":"2025-01-01T00:00:00",` +
				`"LastUsedAt":"2025-01-02T00:00:00","Revoked":false,"ExpiresAt":"2026-01-01T00:00:00","Description":"d","DisableGlobalKey":true}`,
			doc: `{"id":"workflowkey-k1","type":"workflow_key","scope":"org-1","keyId":"k1","hashedKey":"h","workflowId":"wf","isGlobal":null,"createdBy":"c",` +
				`"createdAt":"2025-01-01T00:00:00.0000000Z","lastUsedAt":"2025-01-02T00:00:00.0000000Z","revoked":false,"revokedAt":null,"revokedBy":null,` +
				`"expiresAt":"2026-01-01T00:00:00.0000000Z","description":"d","disableGlobalKey":true}`,
		},
		{
			name:   "systemconfig globalkey",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"systemconfig:globalkey:g1","HashedKey":"h","IsGlobal":false,"Revoked":true,"RevokedAt":"2025-02-01T00:00:00Z","RevokedBy":"r"}`,
			doc: `{"id":"workflowkey-g1","type":"workflow_key","scope":"GLOBAL","keyId":"g1","hashedKey":"h","workflowId":null,"isGlobal":true,"createdBy":null,` +
				`"createdAt":null,"lastUsedAt":null,"revoked":true,"revokedAt":"2025-02-01T00:00:00.0000000Z","revokedBy":"r","expiresAt":null,"description":null,"disableGlobalKey":null}`,
		},
		{
			name:   "other systemconfig rows are an unknown kind",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"systemconfig:other","Flag":true}`,
			doc:    `{"id":"systemconfig-other","type":"systemconfig","scope":"GLOBAL","flag":true}`,
			warn:   []string{"unknown kind: systemconfig"},
		},
		{
			name: "schedule",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"schedule:nightly_sync","WorkflowName":"Sync users nightly","CronExpression":"0 2 * * *",` +
				`"NextRunAt":"2025-11-21T02:00:00","LastRunAt":"2025-11-20T02:00:00","LastExecutionId":"e1","ExecutionCount@odata.type":"Edm.Int64","ExecutionCount":"1842","CreatedAt":"2025-01-01T00:00:00"}`,
			doc: `{"id":"schedule-nightly_sync","type":"schedule","scope":"GLOBAL","workflowName":"nightly_sync","description":"Sync users nightly",` +
				`"cronExpression":"0 2 * * *","nextRunAt":"2025-11-21T02:00:00.0000000Z","lastRunAt":"2025-11-20T02:00:00.0000000Z","lastExecutionId":"e1",` +
				`"executionCount":1842,"createdAt":"2025-01-01T00:00:00.0000000Z"}`,
		},
		{
			name:   "branding",
			entity: `{"PartitionKey":"4b0c","RowKey":"branding","SquareLogoUrl":"s","RectangleLogoUrl":"r","PrimaryColor":"#123456","UpdatedBy":"u","UpdatedAt":"2025-11-20T14:03:12"}`,
			doc:    `{"id":"branding-org-4b0c","type":"branding","scope":"org-4b0c","squareLogoUrl":"s","rectangleLogoUrl":"r","primaryColor":"#123456","updatedBy":"u","updatedAt":"2025-11-20T14:03:12.0000000Z"}`,
		},
		{
			name:   "github",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"github","Status":"connected","SecretRef":"kv-gh","RepoUrl":"https://g","ProductionBranch":"main"}`,
			doc:    `{"id":"github-GLOBAL","type":"github_config","scope":"GLOBAL","status":"connected","secretRef":"kv-gh","repoUrl":"https://g","productionBranch":"main","updatedAt":null,"updatedBy":null}`,
		},
		{
			name: "jobstatus",
			entity: `{"PartitionKey":"SYSTEM","RowKey":"jobstatus:token_refresh","JobName":"token_refresh","StartTime":"2025-11-20T14:00:00","EndTime":"2025-11-20T14:00:05",` +
				`"DurationSeconds@odata.type":"Edm.Double","DurationSeconds":5.0,"Status":"completed","TriggerType":"schedule","TriggerUser":"system","TotalConnections":2,` +
				`"NeedsRefresh":2,"RefreshedSuccessfully":2,"RefreshFailed":0,"Errors":"[]"}`,
			doc: `{"id":"jobstatus-token_refresh","type":"job_status","scope":"SYSTEM","jobName":"token_refresh","startTime":"2025-11-20T14:00:00.0000000Z",` +
				`"endTime":"2025-11-20T14:00:05.0000000Z","durationSeconds":5.0,"status":"completed","triggerType":"schedule","triggerUser":"system",` +
				`"totalConnections":2,"needsRefresh":2,"refreshedSuccessfully":2,"refreshFailed":0,"errors":[],"errorMessage":null}`,
		},
		{
			name:   "jobstatus Errors invalid JSON",
			entity: `{"PartitionKey":"SYSTEM","RowKey":"jobstatus:j","Errors":"[1,"}`,
			disp:   DispositionDeadLetter, dead: "property Errors is not valid JSON: invalid JSON at offset 3",
		},
		{
			name:   "unknown kind",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"notificationtemplate:welcome_email","Subject":"Hi","UpdatedAt":"2025-11-20T14:03:12"}`,
			id:     "notificationtemplate-welcome_email",
			doc:    `{"id":"notificationtemplate-welcome_email","type":"notificationtemplate","scope":"GLOBAL","subject":"Hi","updatedAt":"2025-11-20T14:03:12.0000000Z"}`,
			warn:   []string{"unknown kind: notificationtemplate"},
		},
		{
			name:   "unknown kind strict",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"notificationtemplate:welcome_email","Subject":"Hi"}`,
			opts:   &Options{Now: testNow, Strict: true},
			disp:   DispositionDeadLetter, dead: `unknown kind "notificationtemplate" in table Config (strict)`,
		},
		{
			name:   "kind without its ':' is unknown",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"config","Value":"x"}`,
			doc:    `{"id":"config","type":"config","scope":"GLOBAL","value":"x"}`,
			warn:   []string{"unknown kind: config"},
		},
	}
	for i := range cases {
		cases[i].table = TableConfig
		if cases[i].disp == "" {
			cases[i].disp = DispositionDoc
		}
	}
	runRowCases(t, cases)
}

// configDoc is the doc of a GLOBAL config:k row with the given value,
// secretRef and configType.
func configDoc(value, secretRef, configType string) string {
	return `{"id":"config-k","type":"config","scope":"GLOBAL","key":"k","value":` + value + `,"secretRef":` + secretRef +
		`,"configType":` + configType + `,"description":null,"updatedAt":null,"updatedBy":null}`
}

func TestConfigValueTyping(t *testing.T) {
	row := func(props string) string { return `{"PartitionKey":"GLOBAL","RowKey":"config:k"` + props + `}` }
	cases := []rowCase{
		{name: "string", entity: row(`,"Type":"string","Value":"42"`), doc: configDoc(`"42"`, `null`, `"string"`)},
		{name: "int", entity: row(`,"Type":"int","Value":"25"`), doc: configDoc(`25`, `null`, `"int"`)},
		{name: "int negative with spaces", entity: row(`,"Type":"int","Value":" -7 "`), doc: configDoc(`-7`, `null`, `"int"`)},
		{name: "int already a number", entity: row(`,"Type":"int","Value":25`), doc: configDoc(`25`, `null`, `"int"`)},
		{
			name: "int above 2^53", entity: row(`,"Type":"int","Value":"9007199254740993"`),
			doc: configDoc(`"9007199254740993"`, `null`, `"int"`), warn: []string{"int64 above 2^53: Value"},
		},
		{name: "int unparseable", entity: row(`,"Type":"int","Value":"twelve"`), disp: DispositionDeadLetter, dead: `config value is not an integer (Type "int")`},
		{name: "int decimal", entity: row(`,"Type":"int","Value":"1.5"`), disp: DispositionDeadLetter, dead: `config value is not an integer (Type "int")`},
		{name: "int overflow", entity: row(`,"Type":"int","Value":"99999999999999999999"`), disp: DispositionDeadLetter, dead: `config value is not an integer (Type "int")`},
		{name: "int of a bool", entity: row(`,"Type":"int","Value":true`), disp: DispositionDeadLetter, dead: `config value is not an integer (Type "int")`},
		{name: "bool true", entity: row(`,"Type":"bool","Value":"true"`), doc: configDoc(`true`, `null`, `"bool"`)},
		{name: "bool Python False", entity: row(`,"Type":"bool","Value":"False"`), doc: configDoc(`false`, `null`, `"bool"`)},
		{name: "bool TRUE", entity: row(`,"Type":"bool","Value":"TRUE"`), doc: configDoc(`true`, `null`, `"bool"`)},
		{name: "bool already a boolean", entity: row(`,"Type":"bool","Value":false`), doc: configDoc(`false`, `null`, `"bool"`)},
		{name: "bool yes", entity: row(`,"Type":"bool","Value":"yes"`), disp: DispositionDeadLetter, dead: `config value is not true or false (Type "bool")`},
		{name: "bool 1", entity: row(`,"Type":"bool","Value":"1"`), disp: DispositionDeadLetter, dead: `config value is not true or false (Type "bool")`},
		{
			name: "json object", entity: row(`,"Type":"json","Value":"{\"b\":[1,2.50,null],\"a\":\"x\"}"`),
			doc: configDoc(`{"b":[1,2.50,null],"a":"x"}`, `null`, `"json"`),
		},
		{name: "json scalar", entity: row(`,"Type":"json","Value":"\"s\""`), doc: configDoc(`"s"`, `null`, `"json"`)},
		{name: "json truncated", entity: row(`,"Type":"json","Value":"{\"a\": [1, 2"`), disp: DispositionDeadLetter, dead: `config value is not valid JSON (Type "json")`},
		{name: "json NaN literal", entity: row(`,"Type":"json","Value":"NaN"`), disp: DispositionDeadLetter, dead: `config value is not valid JSON (Type "json")`},
		{name: "json empty", entity: row(`,"Type":"json","Value":""`), disp: DispositionDeadLetter, dead: `config value is not valid JSON (Type "json")`},
		{name: "json not a string", entity: row(`,"Type":"json","Value":3`), disp: DispositionDeadLetter, dead: `config value is not valid JSON (Type "json")`},
		{
			name: "json big integer", entity: row(`,"Type":"json","Value":"[12345678901234567890]"`),
			doc: configDoc(`[12345678901234567890]`, `null`, `"json"`), warn: []string{"json integer above 2^53: Value"},
		},
		{name: "secret_ref", entity: row(`,"Type":"secret_ref","Value":"kv-name"`), doc: configDoc(`null`, `"kv-name"`, `"secret_ref"`)},
		{name: "secret_ref without Value uses SecretRef", entity: row(`,"Type":"secret_ref","SecretRef":"kv-2"`), doc: configDoc(`null`, `"kv-2"`, `"secret_ref"`)},
		{name: "string with SecretRef", entity: row(`,"Type":"string","Value":"v","SecretRef":"kv-3"`), doc: configDoc(`"v"`, `"kv-3"`, `"string"`)},
		{
			name: "unknown type boolean keeps the string", entity: row(`,"Type":"boolean","Value":"true"`),
			doc: configDoc(`"true"`, `null`, `"boolean"`), warn: []string{`unknown config type: Type "boolean"`},
		},
		{
			name: "no Type", entity: row(`,"Value":"v"`),
			doc: configDoc(`"v"`, `null`, `null`), warn: []string{"unknown config type: Type absent"},
		},
		{name: "absent Value with Type int is null", entity: row(`,"Type":"int"`), doc: configDoc(`null`, `null`, `"int"`)},
		{
			name: "key with '_' → '-' in the id only", entity: `{"PartitionKey":"GLOBAL","RowKey":"config:a_b_c","Type":"string"}`, id: "config-a-b-c",
			doc: `{"id":"config-a-b-c","type":"config","scope":"GLOBAL","key":"a_b_c","value":null,"secretRef":null,"configType":"string","description":null,"updatedAt":null,"updatedBy":null}`,
		},
		{
			name: "legacy oauth_{name}_client_secret is an ordinary config row", entity: `{"PartitionKey":"GLOBAL","RowKey":"config:oauth_graph_client_secret","Type":"secret_ref","Value":"kv"}`,
			doc: `{"id":"config-oauth-graph-client-secret","type":"config","scope":"GLOBAL","key":"oauth_graph_client_secret","value":null,"secretRef":"kv","configType":"secret_ref","description":null,"updatedAt":null,"updatedBy":null}`,
		},
	}
	for i := range cases {
		cases[i].table = TableConfig
		if cases[i].disp == "" {
			cases[i].disp = DispositionDoc
		}
	}
	runRowCases(t, cases)
}
