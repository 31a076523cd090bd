package deploy_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hitch-agents/hitch/internal/deploy"
	"github.com/hitch-agents/hitch/internal/httpapi"
)

const root = "../.."

// loadTemplate parses template.yaml into maps, lists and scalars, turning
// CloudFormation's short tags into their long form (!Ref X → {"Ref": X},
// !GetAtt A.B → {"Fn::GetAtt": [A, B]}, !Sub s → {"Fn::Sub": s}, …).
func loadTemplate(tb testing.TB) map[string]any {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		tb.Fatalf("template.yaml: %v", err)
	}
	v, err := decode(doc.Content[0])
	if err != nil {
		tb.Fatalf("template.yaml: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		tb.Fatal("template.yaml is not a map")
	}
	return m
}

func decode(n *yaml.Node) (any, error) {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name := strings.TrimPrefix(n.Tag, "!")
		plain := *n
		plain.Tag = ""
		v, err := decode(&plain)
		if err != nil {
			return nil, err
		}
		if name == "Ref" || name == "Condition" {
			return map[string]any{name: v}, nil
		}
		if s, ok := v.(string); ok && name == "GetAtt" {
			a, b, _ := strings.Cut(s, ".")
			v = []any{a, b}
		}
		return map[string]any{"Fn::" + name: v}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i < len(n.Content); i += 2 {
			v, err := decode(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := decode(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		if n.Tag == "" || n.Style != 0 {
			n.Tag = map[bool]string{true: "!!str", false: n.ShortTag()}[n.Style != 0]
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	case yaml.AliasNode:
		return decode(n.Alias)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// get walks m along keys; nil when a key is missing.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func resources(tb testing.TB, tpl map[string]any) map[string]any {
	tb.Helper()
	r, ok := get(tpl, "Resources").(map[string]any)
	if !ok {
		tb.Fatal("template.yaml has no Resources")
	}
	return r
}

// apiEvent is an Api event of a function in the template.
type apiEvent struct {
	function string // logical id
	name     string
	props    map[string]any
}

func apiEvents(tb testing.TB, res map[string]any) map[string]apiEvent {
	tb.Helper()
	out := map[string]apiEvent{}
	for id, r := range res {
		if get(r, "Type") != "AWS::Serverless::Function" {
			continue
		}
		evs, _ := get(r, "Properties", "Events").(map[string]any)
		for name, ev := range evs {
			if get(ev, "Type") != "Api" {
				continue
			}
			props, _ := get(ev, "Properties").(map[string]any)
			key := strings.ToUpper(fmt.Sprint(props["Method"])) + " " + fmt.Sprint(props["Path"])
			if prev, dup := out[key]; dup {
				tb.Errorf("route %s defined twice: %s.%s and %s.%s", key, prev.function, prev.name, id, name)
			}
			out[key] = apiEvent{function: id, name: name, props: props}
		}
	}
	return out
}

func TestTransform(t *testing.T) {
	tpl := loadTemplate(t)
	// LanguageExtensions first: its Fn::ForEach expands before SAM reads
	// the resources.
	want := []any{"AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"}
	if got := get(tpl, "Transform"); !reflect.DeepEqual(got, want) {
		t.Errorf("Transform = %v, want %v", got, want)
	}
}

// TestA2ADefaultAgent: the functions serve the root Agent Card of the
// parameter's agent (the deployment has more than one agent).
func TestA2ADefaultAgent(t *testing.T) {
	tpl := loadTemplate(t)
	if got := get(tpl, "Globals", "Function", "Environment", "Variables", "HITCH_A2A_DEFAULT_AGENT"); !reflect.DeepEqual(got, map[string]any{"Ref": "A2ADefaultAgent"}) {
		t.Errorf("HITCH_A2A_DEFAULT_AGENT = %v", got)
	}
	if d := get(tpl, "Parameters", "A2ADefaultAgent", "Default"); d != "assistant" {
		t.Errorf("A2ADefaultAgent defaults to %v", d)
	}
	for _, fn := range []string{"invoke", "resume", "gettask"} {
		b, err := os.ReadFile(filepath.Join(root, "functions", fn, "main.go"))
		if err != nil || !strings.Contains(string(b), `os.Getenv("HITCH_A2A_DEFAULT_AGENT")`) {
			t.Errorf("functions/%s does not read HITCH_A2A_DEFAULT_AGENT (%v)", fn, err)
		}
	}
}

// TestDurableCallerPermissions: each DurableCallerArns entry's account may
// invoke the invoke function (its resource policy), and only when callers
// are given.
func TestDurableCallerPermissions(t *testing.T) {
	res := resources(t, loadTemplate(t))
	loop, ok := res["Fn::ForEach::DurableCallers"].([]any)
	if !ok || len(loop) != 3 {
		t.Fatalf("Fn::ForEach::DurableCallers = %v", res["Fn::ForEach::DurableCallers"])
	}
	if loop[0] != "CallerArn" || !reflect.DeepEqual(loop[1], map[string]any{"Ref": "DurableCallerArns"}) {
		t.Errorf("the loop runs over %v %v, want CallerArn over DurableCallerArns", loop[0], loop[1])
	}
	perm := get(loop[2], "DurableCallerInvoke&{CallerArn}")
	if get(perm, "Type") != "AWS::Lambda::Permission" || get(perm, "Condition") != "HasDurableCallers" {
		t.Fatalf("the permission: %v", perm)
	}
	props := get(perm, "Properties")
	if !reflect.DeepEqual(get(props, "FunctionName"), map[string]any{"Fn::GetAtt": []any{"InvokeFunction", "Arn"}}) ||
		get(props, "Action") != "lambda:InvokeFunction" {
		t.Errorf("the permission's properties: %v", props)
	}
	principal := map[string]any{"Fn::Select": []any{4, map[string]any{"Fn::Split": []any{":", map[string]any{"Ref": "CallerArn"}}}}}
	if !reflect.DeepEqual(get(props, "Principal"), principal) {
		t.Errorf("Principal = %v, want the caller's account", get(props, "Principal"))
	}
}

func TestRoutes(t *testing.T) {
	tpl := loadTemplate(t)
	evs := apiEvents(t, resources(t, tpl))
	want := map[string]bool{}
	for _, r := range deploy.Routes {
		key := r.Method + " " + r.Path
		want[key] = true
		ev, ok := evs[key]
		if !ok {
			t.Errorf("route %s: no Api event in template.yaml", key)
			continue
		}
		if fn := deploy.LogicalIDs[r.Function]; ev.function != fn {
			t.Errorf("route %s: served by %s, want %s", key, ev.function, fn)
		}
		if got := get(ev.props, "RestApiId"); !cmp.Equal(got, map[string]any{"Ref": "Api"}) {
			t.Errorf("route %s: RestApiId = %v, want !Ref Api", key, got)
		}
		if got := ev.props["ResponseTransferMode"]; got != deploy.ResponseTransferMode {
			t.Errorf("route %s: ResponseTransferMode = %v, want %s", key, got, deploy.ResponseTransferMode)
		}
		if got := ev.props["TimeoutInMillis"]; got != deploy.IntegrationTimeoutMs {
			t.Errorf("route %s: TimeoutInMillis = %v, want %d", key, got, deploy.IntegrationTimeoutMs)
		}
		authorizer := get(ev.props, "Auth", "Authorizer")
		switch {
		case r.Public && authorizer != "NONE":
			t.Errorf("route %s: Auth.Authorizer = %v, want NONE (public)", key, authorizer)
		case !r.Public && authorizer != nil:
			t.Errorf("route %s: Auth.Authorizer = %v, want the API's default authorizer", key, authorizer)
		}
	}
	for key, ev := range evs {
		if !want[key] {
			t.Errorf("route %s (%s.%s) is not in docs/api.md (deploy.Routes)", key, ev.function, ev.name)
		}
	}
}

func function(tb testing.TB, res map[string]any, dir string) map[string]any {
	tb.Helper()
	id := deploy.LogicalIDs[dir]
	r := res[id]
	if get(r, "Type") != "AWS::Serverless::Function" {
		tb.Fatalf("%s is not an AWS::Serverless::Function in template.yaml", id)
	}
	return r.(map[string]any)
}

func TestFunctions(t *testing.T) {
	tpl := loadTemplate(t)
	res := resources(t, tpl)
	var ids []string
	for id, r := range res {
		if get(r, "Type") == "AWS::Serverless::Function" {
			ids = append(ids, id)
		}
	}
	var want []string
	for _, id := range deploy.LogicalIDs {
		want = append(want, id)
	}
	sort.Strings(ids)
	sort.Strings(want)
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("functions of template.yaml (-want +got):\n%s", diff)
	}
	for dir, id := range deploy.LogicalIDs {
		fn := function(t, res, dir)
		props := func(k string) any { return globalOr(tpl, fn, k) }
		checks := []struct {
			what      string
			got, want any
		}{
			{"CodeUri", props("CodeUri"), "."},
			{"Handler", props("Handler"), "bootstrap"},
			{"Runtime", props("Runtime"), "provided.al2023"},
			{"Architectures", props("Architectures"), []any{"arm64"}},
			{"Metadata.BuildMethod", get(fn, "Metadata", "BuildMethod"), "makefile"},
		}
		if dir != deploy.Authorizer {
			checks = append(checks, struct {
				what      string
				got, want any
			}{"Timeout", props("Timeout"), deploy.FunctionTimeout})
		}
		for _, c := range checks {
			if !cmp.Equal(c.got, c.want) {
				t.Errorf("%s: %s = %v, want %v", id, c.what, c.got, c.want)
			}
		}
	}
}

// globalOr is a function's property, else the Globals' one.
func globalOr(tpl, fn map[string]any, key string) any {
	if v := get(fn, "Properties", key); v != nil {
		return v
	}
	return get(tpl, "Globals", "Function", key)
}

// Every functions/<dir> is in the template, under its logical id.
func TestFunctionDirs(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(root, "functions", "*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		dir := filepath.Base(filepath.Dir(d))
		if _, ok := deploy.LogicalIDs[dir]; !ok {
			t.Errorf("functions/%s has no function in deploy.LogicalIDs / template.yaml", dir)
		}
	}
}

var envName = regexp.MustCompile(`^HITCH_[A-Z0-9_]+$`)

// envRead returns the HITCH_* names the non-test Go files of functions/<dir>
// mention as string literals (os.Getenv("HITCH_X"), lookupEnv("HITCH_X"),
// constants, …).
func envRead(tb testing.TB, dir string) (names []string, found bool) {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(root, "functions", dir, "*.go"))
	if err != nil {
		tb.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		found = true
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			tb.Fatalf("parsing %s: %v", f, err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && envName.MatchString(s) && !seen[s] {
				seen[s] = true
				names = append(names, s)
			}
			return true
		})
	}
	sort.Strings(names)
	return names, found
}

func TestEnvironment(t *testing.T) {
	tpl := loadTemplate(t)
	res := resources(t, tpl)
	for dir, id := range deploy.LogicalIDs {
		t.Run(dir, func(t *testing.T) {
			names, found := envRead(t, dir)
			if !found {
				t.Fatalf("functions/%s has no Go files: the template names a function that is not built", dir)
			}
			vars, _ := get(function(t, res, dir), "Properties", "Environment", "Variables").(map[string]any)
			global, _ := get(tpl, "Globals", "Function", "Environment", "Variables").(map[string]any)
			for _, name := range names {
				_, local := vars[name]
				_, glob := global[name]
				if !local && !glob {
					t.Errorf("functions/%s reads %s, which %s's Environment does not set", dir, name, id)
				}
			}
		})
	}
	// The authorizer reads exactly what docs/api.md configures.
	names, found := envRead(t, deploy.Authorizer)
	if !found {
		t.Fatal("functions/authorizer has no Go files")
	}
	want := []string{"HITCH_AUDIENCE", "HITCH_GROUPS", "HITCH_GROUPS_CLAIM", "HITCH_ISSUERS", "HITCH_REQUIRED_SCOPE", "HITCH_TENANTS"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("environment the authorizer reads (-want +got):\n%s", diff)
	}
}

func TestAPI(t *testing.T) {
	tpl := loadTemplate(t)
	api := get(resources(t, tpl), "Api")
	if get(api, "Type") != "AWS::Serverless::Api" {
		t.Fatal("Api is not an AWS::Serverless::Api")
	}
	p := get(api, "Properties")
	def, _ := get(p, "Auth", "DefaultAuthorizer").(string)
	az := get(p, "Auth", "Authorizers", def)
	checks := []struct {
		what      string
		got, want any
	}{
		{"EndpointConfiguration.Type", get(p, "EndpointConfiguration", "Type"), "REGIONAL"},
		{"Auth.AddDefaultAuthorizerToCorsPreflight", get(p, "Auth", "AddDefaultAuthorizerToCorsPreflight"), false},
		{"authorizer FunctionArn", get(az, "FunctionArn"), map[string]any{"Fn::GetAtt": []any{deploy.LogicalIDs[deploy.Authorizer], "Arn"}}},
		{"authorizer FunctionPayloadType", get(az, "FunctionPayloadType"), "REQUEST"},
		{"authorizer Identity.Headers", get(az, "Identity", "Headers"), []any{"Authorization"}},
		{"authorizer Identity.ReauthorizeEvery", get(az, "Identity", "ReauthorizeEvery"), 300},
	}
	for _, c := range checks {
		if !cmp.Equal(c.got, c.want) {
			t.Errorf("Api %s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if get(p, "Cors") == nil {
		t.Error("Api has no Cors")
	}
	methods, _ := get(p, "Cors", "AllowMethods").(string)
	for _, m := range []string{"GET", "POST", "DELETE", "OPTIONS"} {
		if !strings.Contains(methods, m) {
			t.Errorf("Cors.AllowMethods %q lacks %s", methods, m)
		}
	}
	if get(tpl, "Outputs", "ApiUrl", "Value") == nil {
		t.Error("no ApiUrl output")
	}
}

func TestGatewayResponses(t *testing.T) {
	tpl := loadTemplate(t)
	grs, _ := get(resources(t, tpl), "Api", "Properties", "GatewayResponses").(map[string]any)
	for typ, want := range deploy.GatewayResponses {
		gr := grs[typ]
		if gr == nil {
			t.Errorf("gateway response %s missing", typ)
			continue
		}
		if got := fmt.Sprint(get(gr, "StatusCode")); got != strconv.Itoa(want.Status) {
			t.Errorf("%s: StatusCode = %s, want %d", typ, got, want.Status)
		}
		body, _ := get(gr, "ResponseTemplates", "application/json").(string)
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Errorf("%s: body %q is not the error body of docs/api.md: %v", typ, body, err)
			continue
		}
		if e.Error.Code != want.Code || e.Error.Message == "" {
			t.Errorf("%s: body %q, want code %q and a message", typ, body, want.Code)
		}
	}
}

func TestTable(t *testing.T) {
	tpl := loadTemplate(t)
	tbl := get(resources(t, tpl), "Table")
	if get(tbl, "Type") != "AWS::DynamoDB::Table" {
		t.Fatal("Table is not an AWS::DynamoDB::Table")
	}
	p := get(tbl, "Properties")
	attrs := map[string]any{}
	for _, a := range get(p, "AttributeDefinitions").([]any) {
		attrs[get(a, "AttributeName").(string)] = get(a, "AttributeType")
	}
	gsi := get(p, "GlobalSecondaryIndexes").([]any)
	checks := []struct {
		what      string
		got, want any
	}{
		{"BillingMode", get(p, "BillingMode"), "PAY_PER_REQUEST"},
		{"AttributeDefinitions", attrs, map[string]any{"PK": "S", "SK": "S", "GSI1PK": "S", "GSI1SK": "S", "GSI3PK": "S", "GSI3SK": "S", "GSI4PK": "S", "GSI4SK": "S"}},
		{"KeySchema", get(p, "KeySchema"), []any{
			map[string]any{"AttributeName": "PK", "KeyType": "HASH"},
			map[string]any{"AttributeName": "SK", "KeyType": "RANGE"},
		}},
		{"GSI count", len(gsi), 3},
		{"GSI1 name", get(gsi[0], "IndexName"), "GSI1"},
		{"GSI1 KeySchema", get(gsi[0], "KeySchema"), []any{
			map[string]any{"AttributeName": "GSI1PK", "KeyType": "HASH"},
			map[string]any{"AttributeName": "GSI1SK", "KeyType": "RANGE"},
		}},
		// The list fields only: a lease renewal writes no index.
		{"GSI1 Projection", get(gsi[0], "Projection"), map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": []any{"data", "ttl"}}},
		// The outbox's sweep index (docs/architecture.md), and the stream the
		// notifier reads.
		{"GSI3 name", get(gsi[1], "IndexName"), "GSI3"},
		{"GSI3 KeySchema", get(gsi[1], "KeySchema"), []any{
			map[string]any{"AttributeName": "GSI3PK", "KeyType": "HASH"},
			map[string]any{"AttributeName": "GSI3SK", "KeyType": "RANGE"},
		}},
		// The reaper's index: sparse, keys only (what CreateTable makes).
		{"GSI4 name", get(gsi[2], "IndexName"), "GSI4"},
		{"GSI4 KeySchema", get(gsi[2], "KeySchema"), []any{
			map[string]any{"AttributeName": "GSI4PK", "KeyType": "HASH"},
			map[string]any{"AttributeName": "GSI4SK", "KeyType": "RANGE"},
		}},
		{"GSI4 Projection", get(gsi[2], "Projection"), map[string]any{"ProjectionType": "KEYS_ONLY"}},
		{"Stream", get(p, "StreamSpecification", "StreamViewType"), "NEW_IMAGE"},
		{"TTL", get(p, "TimeToLiveSpecification"), map[string]any{"AttributeName": "ttl", "Enabled": true}},
		{"PITR", get(p, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"), true},
		{"SSE", get(p, "SSESpecification", "SSEEnabled"), true},
	}
	for _, c := range checks {
		if !cmp.Equal(c.got, c.want) {
			t.Errorf("Table %s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

// policyActions are the actions of a function's inline policy statements,
// by the resources they apply to.
func policyActions(tb testing.TB, fn map[string]any) (actions []string, statements []any) {
	tb.Helper()
	pols, _ := get(fn, "Properties", "Policies").([]any)
	for _, p := range pols {
		sts, _ := get(p, "Statement").([]any)
		for _, st := range sts {
			if ifs, ok := get(st, "Fn::If").([]any); ok && len(ifs) == 3 {
				st = ifs[1]
			}
			statements = append(statements, st)
			switch a := get(st, "Action").(type) {
			case string:
				actions = append(actions, a)
			case []any:
				for _, x := range a {
					actions = append(actions, fmt.Sprint(x))
				}
			}
		}
	}
	return actions, statements
}

func TestPolicies(t *testing.T) {
	tpl := loadTemplate(t)
	res := resources(t, tpl)
	reads := []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}
	for _, dir := range []string{deploy.Invoke, deploy.Resume, deploy.GetTask, deploy.Authorizer} {
		fn := function(t, res, dir)
		actions, statements := policyActions(t, fn)
		for _, a := range actions {
			if strings.Contains(a, "*") {
				t.Errorf("%s: wildcard action %s", dir, a)
			}
			if dir == deploy.GetTask && strings.HasPrefix(a, "dynamodb:") && !slices.Contains(reads, a) {
				t.Errorf("get-task may only read; it has %s", a)
			}
		}
		for _, st := range statements {
			for _, r := range asList(get(st, "Resource")) {
				if r == "*" {
					t.Errorf("%s: a statement on Resource *", dir)
				}
			}
		}
		hasModel := slices.Contains(actions, "bedrock:InvokeModelWithResponseStream")
		hasTools := slices.Contains(actions, "lambda:InvokeFunction")
		wantModel := dir == deploy.Invoke || dir == deploy.Resume
		if hasModel != wantModel || hasTools != wantModel {
			t.Errorf("%s: bedrock %v, lambda tools %v; want %v", dir, hasModel, hasTools, wantModel)
		}
		if dir == deploy.Authorizer && len(actions) > 0 {
			t.Errorf("the authorizer needs no AWS permission; it has %v", actions)
		}
	}
	// Whatever loads agent definitions resolves their ssm:/hitch/… secrets,
	// and reads no other parameter.
	param := map[string]any{"Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/hitch/*"}
	for _, dir := range []string{deploy.Invoke, deploy.Resume, deploy.GetTask, deploy.Notifier} {
		_, statements := policyActions(t, function(t, res, dir))
		found := false
		for _, st := range statements {
			if get(st, "Action") == "ssm:GetParameter" {
				found = cmp.Equal(get(st, "Resource"), param)
			}
		}
		if !found {
			t.Errorf("%s: no ssm:GetParameter on parameter/hitch/*", dir)
		}
	}
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// CORS (docs/api.md, the console on another origin): API Gateway answers the
// preflight with what httpapi.CORS answers under hitch serve, the gateway's
// own error answers carry the origin, and the functions get it to add to
// theirs.
func TestCORS(t *testing.T) {
	tpl := loadTemplate(t)
	res := resources(t, tpl)
	if d := get(tpl, "Parameters", "AllowedOrigin", "Default"); d != "" {
		t.Errorf("AllowedOrigin defaults to %q, want \"\" (no CORS)", d)
	}
	origin := map[string]any{"Fn::Sub": "'${AllowedOrigin}'"}
	cors := get(res, "Api", "Properties", "Cors")
	checks := []struct {
		what      string
		got, want any
	}{
		{"Cors.AllowOrigin", get(cors, "AllowOrigin"), origin},
		{"Cors.AllowMethods", get(cors, "AllowMethods"), "'" + httpapi.CORSMethods + "'"},
		{"Cors.AllowHeaders", get(cors, "AllowHeaders"), "'" + httpapi.CORSHeaders + "'"},
	}
	for typ := range deploy.GatewayResponses {
		checks = append(checks, struct {
			what      string
			got, want any
		}{typ + " Access-Control-Allow-Origin", get(res, "Api", "Properties", "GatewayResponses", typ, "ResponseParameters", "Headers", "Access-Control-Allow-Origin"), origin})
	}
	for _, fn := range []string{"invoke", "resume", "gettask"} {
		id := deploy.LogicalIDs[fn]
		checks = append(checks, struct {
			what      string
			got, want any
		}{id + " HITCH_CORS_ORIGIN", get(res, id, "Properties", "Environment", "Variables", "HITCH_CORS_ORIGIN"), map[string]any{"Ref": "AllowedOrigin"}})
	}
	for _, c := range checks {
		if !cmp.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

// The embedded agents' files on S3: every files config.s3 of the form
// env:NAME is set by the functions that run tools (invoke, resume) to a
// location in the stack's FilesBucket, and each function may read, write,
// delete and list that prefix only.
func TestFilesBucket(t *testing.T) {
	tpl := loadTemplate(t)
	res := resources(t, tpl)
	bucket, _ := res["FilesBucket"].(map[string]any)
	if get(bucket, "Type") != "AWS::S3::Bucket" {
		t.Fatalf("FilesBucket is %v, want an AWS::S3::Bucket", get(bucket, "Type"))
	}
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if get(bucket, "Properties", "PublicAccessBlockConfiguration", k) != true {
			t.Errorf("FilesBucket: PublicAccessBlockConfiguration.%s is not true", k)
		}
	}
	if get(bucket, "Properties", "BucketEncryption") == nil {
		t.Error("FilesBucket has no encryption")
	}
	defs, err := filepath.Glob(filepath.Join(root, "agents", "*.yaml"))
	if err != nil || len(defs) == 0 {
		t.Fatalf("agents/*.yaml: %v", err)
	}
	envRef := regexp.MustCompile(`s3:\s*env:([A-Z0-9_]+)`)
	var names []string
	for _, f := range defs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range envRef.FindAllStringSubmatch(string(b), -1) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatal("no embedded agent keeps its files on S3 (config.s3: env:NAME)")
	}
	for _, dir := range []string{deploy.Invoke, deploy.Resume} {
		fn := function(t, res, dir)
		for _, name := range names {
			sub, _ := get(fn, "Properties", "Environment", "Variables", name, "Fn::Sub").(string)
			prefix, ok := strings.CutPrefix(sub, "s3://${FilesBucket}/")
			if !ok || prefix == "" || strings.Contains(prefix, "$") {
				t.Errorf("%s: %s = %v, want !Sub s3://${FilesBucket}/<prefix>", dir, name, get(fn, "Properties", "Environment", "Variables", name))
				continue
			}
			_, statements := policyActions(t, fn)
			var objects, list bool
			for _, st := range statements {
				sid, _ := get(st, "Sid").(string)
				switch sid {
				case "FilesObjects":
					r, _ := get(st, "Resource", "Fn::Sub").(string)
					objects = r == "${FilesBucket.Arn}/"+prefix+"/*"
				case "FilesList":
					p := asList(get(st, "Condition", "StringLike", "s3:prefix"))
					list = len(p) == 1 && p[0] == prefix+"/*"
				}
			}
			if !objects || !list {
				t.Errorf("%s: the S3 policy is not limited to %s/ (objects %v, list %v)", dir, prefix, objects, list)
			}
		}
	}
}
