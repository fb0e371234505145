package transform

import (
	"strings"
	"testing"
)

// One case per row of the SPEC §7 table.
func TestEntitiesKinds(t *testing.T) {
	cases := []rowCase{
		{
			name:   "org: scope is the id, whatever the PartitionKey",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"org:7c9e","Name":"Contoso","Domain":"contoso.example","IsActive":true,"CreatedAt":"2025-01-01T00:00:00","CreatedBy":"c","UpdatedAt":"2025-06-01T00:00:00","TenantId@odata.type":"Edm.Guid","TenantId":"0f8fad5b-d9cb-469f-a165-70867728950e"}`,
			id:     "org-7c9e", scope: "org-7c9e",
			doc: `{"id":"org-7c9e","type":"organization","scope":"org-7c9e","name":"Contoso","domain":"contoso.example","isActive":true,` +
				`"createdAt":"2025-01-01T00:00:00.0000000Z","createdBy":"c","updatedAt":"2025-06-01T00:00:00.0000000Z","tenantId":"0f8fad5b-d9cb-469f-a165-70867728950e"}`,
		},
		{
			name:   "org with org- prefix and an org PartitionKey",
			entity: `{"PartitionKey":"2f1a","RowKey":"org:org-3f25","Name":"N"}`,
			id:     "org-3f25", scope: "org-3f25",
			doc: `{"id":"org-3f25","type":"organization","scope":"org-3f25","name":"N","domain":null,"isActive":null,"createdAt":null,"createdBy":null,"updatedAt":null}`,
		},
		{
			name: "user",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"user:alice@x","Email":"alice@x","DisplayName":"Alice","UserType":"PLATFORM","IsPlatformAdmin":true,"IsActive":true,` +
				`"LastLogin":"2025-11-20T08:00:00.5","CreatedAt":"2025-01-01T00:00:00","EntraUserId@odata.type":"Edm.Guid","EntraUserId":"0f8fad5b-d9cb-469f-a165-70867728950e",` +
				`"LastEntraIdSync@odata.type":"Edm.DateTime","LastEntraIdSync":"2025-11-20T09:00:00Z"}`,
			doc: `{"id":"user-alice@x","type":"user","scope":"GLOBAL","email":"alice@x","displayName":"Alice","userType":"PLATFORM","isPlatformAdmin":true,` +
				`"isActive":true,"lastLogin":"2025-11-20T08:00:00.5000000Z","createdAt":"2025-01-01T00:00:00.0000000Z",` +
				`"entraUserId":"0f8fad5b-d9cb-469f-a165-70867728950e","lastEntraIdSync":"2025-11-20T09:00:00.0000000Z"}`,
		},
		{
			name:   "user without Email takes it from the RowKey; '%' sanitized",
			entity: `{"PartitionKey":"org-1","RowKey":"user:100%dev@x"}`,
			id:     "user-100%25dev@x",
			doc: `{"id":"user-100%25dev@x","type":"user","scope":"org-1","email":"100%dev@x","displayName":null,"userType":null,"isPlatformAdmin":null,` +
				`"isActive":null,"lastLogin":null,"createdAt":null,"entraUserId":null,"lastEntraIdSync":null}`,
			warn: []string{"id sanitized: id has characters Cosmos DB does not allow"},
		},
		{
			name:   "role",
			entity: `{"PartitionKey":"org-1","RowKey":"role:r9","Name":"Helpdesk","Description":"d","IsActive":false,"CreatedBy":"c","CreatedAt":"2025-01-01T00:00:00","UpdatedAt":"2025-01-02T00:00:00"}`,
			doc: `{"id":"role-r9","type":"role","scope":"org-1","name":"Helpdesk","description":"d","isActive":false,"createdBy":"c",` +
				`"createdAt":"2025-01-01T00:00:00.0000000Z","updatedAt":"2025-01-02T00:00:00.0000000Z"}`,
		},
		{
			name: "form GLOBAL with IsPublic",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"form:f1","Name":"New user","Description":"d","LinkedWorkflow":"onboard","FormSchema":"{\"fields\":[{\"name\":\"email\",\"required\":true}]}",` +
				`"IsActive":true,"IsGlobal":false,"AccessLevel":"authenticated","IsPublic":false,"CreatedBy":"c","CreatedAt":"2025-01-01T00:00:00","UpdatedAt":"2025-01-02T00:00:00",` +
				`"LaunchWorkflowId":"w","AllowedQueryParams":"[\"email\"]","DefaultLaunchParams":"{\"dept\":\"IT\"}"}`,
			doc: `{"id":"form-f1","type":"form","scope":"GLOBAL","name":"New user","description":"d","linkedWorkflow":"onboard",` +
				`"formSchema":{"fields":[{"name":"email","required":true}]},"isActive":true,"isGlobal":true,"accessLevel":"authenticated","isPublic":false,` +
				`"createdBy":"c","createdAt":"2025-01-01T00:00:00.0000000Z","updatedAt":"2025-01-02T00:00:00.0000000Z","launchWorkflowId":"w",` +
				`"allowedQueryParams":["email"],"defaultLaunchParams":{"dept":"IT"}}`,
		},
		{
			name:   "form in an org without IsPublic",
			entity: `{"PartitionKey":"org-1","RowKey":"form:f2","Name":"F","FormSchema":"{}"}`,
			doc: `{"id":"form-f2","type":"form","scope":"org-1","name":"F","description":null,"linkedWorkflow":null,"formSchema":{},"isActive":null,` +
				`"isGlobal":false,"accessLevel":null,"createdBy":null,"createdAt":null,"updatedAt":null,"launchWorkflowId":null,"allowedQueryParams":null,"defaultLaunchParams":null}`,
		},
		{
			name:   "form FormSchema invalid JSON",
			entity: `{"PartitionKey":"org-1","RowKey":"form:f3","FormSchema":"{fields: []}"}`,
			disp:   DispositionDeadLetter, dead: "property FormSchema is not valid JSON: invalid JSON at offset 1",
		},
		{
			name:   "form DefaultLaunchParams invalid JSON",
			entity: `{"PartitionKey":"org-1","RowKey":"form:f3","DefaultLaunchParams":"{\"a\":1}}"}`,
			disp:   DispositionDeadLetter, dead: "property DefaultLaunchParams is not valid JSON: invalid JSON at offset 7",
		},
		{
			name:   "unknown kind",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"auditevent:1_a","Action":"x","CreatedAt":"2025-01-01T00:00:00"}`,
			doc:    `{"id":"auditevent-1_a","type":"auditevent","scope":"GLOBAL","action":"x","createdAt":"2025-01-01T00:00:00.0000000Z"}`,
			warn:   []string{"unknown kind: auditevent"},
		},
		{
			name:   "unknown kind strict",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"auditevent:1_a"}`,
			opts:   &Options{Now: testNow, Strict: true},
			disp:   DispositionDeadLetter, dead: `unknown kind "auditevent" in table Entities (strict)`,
		},
		{
			name:   "unknown kind without ':'",
			entity: `{"PartitionKey":"org-1","RowKey":"settings"}`,
			doc:    `{"id":"settings","type":"settings","scope":"org-1"}`,
			warn:   []string{"unknown kind: settings"},
		},
		{
			name:   "unknown kind id with '/' and '?'",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"note:a/b?c#d\\e"}`,
			id:     "note-a%2Fb%3Fc%23d%5Ce",
			doc:    `{"id":"note-a%2Fb%3Fc%23d%5Ce","type":"note","scope":"GLOBAL"}`,
			warn:   []string{"unknown kind: note", "id sanitized: id has characters Cosmos DB does not allow"},
		},
		{
			name:   "empty RowKey",
			entity: `{"PartitionKey":"GLOBAL","RowKey":""}`,
			disp:   DispositionDeadLetter, dead: "empty RowKey",
		},
		{
			name:   "long id truncated",
			entity: `{"PartitionKey":"GLOBAL","RowKey":"user:` + strings.Repeat("a", 300) + `"}`,
			id:     "user-" + strings.Repeat("a", 233) + "~" + sha16("user-"+strings.Repeat("a", 300)),
			doc: `{"id":"user-` + strings.Repeat("a", 233) + "~" + sha16("user-"+strings.Repeat("a", 300)) + `","type":"user","scope":"GLOBAL","email":"` + strings.Repeat("a", 300) +
				`","displayName":null,"userType":null,"isPlatformAdmin":null,"isActive":null,"lastLogin":null,"createdAt":null,"entraUserId":null,"lastEntraIdSync":null}`,
			warn: []string{"id truncated: id is 305 bytes after encoding, more than 255"},
		},
	}
	for i := range cases {
		cases[i].table = TableEntities
		if cases[i].disp == "" {
			cases[i].disp = DispositionDoc
		}
	}
	runRowCases(t, cases)
}

func TestRelationships(t *testing.T) {
	migrate := &Options{Now: testNow, Relationships: RelationshipsMigrate}
	cases := []rowCase{
		{name: "userexec", entity: `{"PartitionKey":"GLOBAL","RowKey":"userexec:u1:e1","ExecutionId":"e1"}`, disp: DispositionDroppedIndex},
		{name: "userexec with ':' in the user id", entity: `{"PartitionKey":"GLOBAL","RowKey":"userexec:system:scheduler:e2"}`, disp: DispositionDroppedIndex},
		{name: "workflowexec", entity: `{"PartitionKey":"GLOBAL","RowKey":"workflowexec:wf:org-1:e3"}`, disp: DispositionDroppedIndex},
		{name: "formexec", entity: `{"PartitionKey":"GLOBAL","RowKey":"formexec:f1:e4"}`, disp: DispositionDroppedIndex},
		{name: "status", entity: `{"PartitionKey":"GLOBAL","RowKey":"status:Pending:e5"}`, disp: DispositionDroppedIndex},
		{name: "index kept in migrate mode too", entity: `{"PartitionKey":"GLOBAL","RowKey":"status:Pending:e5"}`, opts: migrate, disp: DispositionDroppedIndex},
		{name: "malformed index", entity: `{"PartitionKey":"GLOBAL","RowKey":"workflowexec:wf:e3"}`, disp: DispositionKeptInTables, warn: []string{"malformed index row: workflowexec"}},
		{name: "index without execution id", entity: `{"PartitionKey":"GLOBAL","RowKey":"status:Pending:"}`, disp: DispositionKeptInTables, warn: []string{"malformed index row: status"}},
		{name: "userperm kept", entity: `{"PartitionKey":"GLOBAL","RowKey":"userperm:u1:org-1"}`, disp: DispositionKeptInTables},
		{name: "orgperm kept", entity: `{"PartitionKey":"GLOBAL","RowKey":"orgperm:org-1:u1"}`, disp: DispositionKeptInTables},
		{name: "userrole kept", entity: `{"PartitionKey":"GLOBAL","RowKey":"userrole:u1:r1"}`, disp: DispositionKeptInTables},
		{name: "formrole kept", entity: `{"PartitionKey":"GLOBAL","RowKey":"formrole:f1:r1"}`, disp: DispositionKeptInTables},
		{name: "workflowform kept", entity: `{"PartitionKey":"GLOBAL","RowKey":"workflowform:w:f1"}`, disp: DispositionKeptInTables},
		{name: "assignedrole kept", entity: `{"PartitionKey":"GLOBAL","RowKey":"assignedrole:r1:u1"}`, disp: DispositionKeptInTables},
		{name: "roleform kept", entity: `{"PartitionKey":"GLOBAL","RowKey":"roleform:r1:f1"}`, disp: DispositionKeptInTables},
		{
			name: "userperm migrated", opts: migrate,
			entity: `{"PartitionKey":"GLOBAL","RowKey":"userperm:u1:org-1","UserId":"u1","OrgId":"org-1","GrantedAt":"2025-01-01T00:00:00","GrantedBy":"admin"}`,
			disp:   DispositionDoc, id: "userperm-u1-org-1", scope: "GLOBAL",
			doc: `{"id":"userperm-u1-org-1","type":"relationship","scope":"GLOBAL","relationship":"userperm","grantedAt":"2025-01-01T00:00:00","grantedBy":"admin","orgId":"org-1","userId":"u1"}`,
		},
		{
			name: "roleform migrated", opts: migrate, entity: `{"PartitionKey":"GLOBAL","RowKey":"roleform:r1:f1"}`,
			disp: DispositionDoc, doc: `{"id":"roleform-r1-f1","type":"relationship","scope":"GLOBAL","relationship":"roleform"}`,
		},
		{
			name: "migrated with '/' in a key", opts: migrate, entity: `{"PartitionKey":"GLOBAL","RowKey":"workflowform:a/b:f1"}`,
			disp: DispositionDoc, id: "workflowform-a%2Fb-f1",
			doc:  `{"id":"workflowform-a%2Fb-f1","type":"relationship","scope":"GLOBAL","relationship":"workflowform"}`,
			warn: []string{"id sanitized: id has characters Cosmos DB does not allow"},
		},
		{name: "unknown kind", entity: `{"PartitionKey":"GLOBAL","RowKey":"orgintegration:o:i"}`, disp: DispositionKeptInTables, warn: []string{"unknown kind: orgintegration"}},
		{name: "unknown kind migrate", opts: migrate, entity: `{"PartitionKey":"GLOBAL","RowKey":"orgintegration:o:i"}`, disp: DispositionKeptInTables, warn: []string{"unknown kind: orgintegration"}},
		{name: "unknown kind strict", opts: &Options{Now: testNow, Strict: true}, entity: `{"PartitionKey":"GLOBAL","RowKey":"x:y"}`, disp: DispositionKeptInTables, warn: []string{"unknown kind: x"}},
	}
	for i := range cases {
		cases[i].table = TableRelationships
	}
	runRowCases(t, cases)

	// The execution id of dropped indexes.
	for rk, want := range map[string]string{
		"userexec:u1:e1":                 "e1",
		"userexec:system:scheduler:e2":   "e2",
		"workflowexec:wf:org-1:e3":       "e3",
		"workflowexec:wf:a:b:org-1:e3":   "e3",
		"formexec:f1:e4":                 "e4",
		"status:CompletedWithErrors:e-5": "e-5",
	} {
		o := Transform(Row{Table: TableRelationships, PartitionKey: "GLOBAL", RowKey: rk}, BlobFacts{}, testOpts())
		if o.Disposition != DispositionDroppedIndex || o.IndexExecutionID != want {
			t.Errorf("%s: %s %q, want dropped-index %q", rk, o.Disposition, o.IndexExecutionID, want)
		}
	}
}
