// Command varlink-check is an independent Varlink peer for jitterd's end-to-end tests.
//
// It talks to the daemon with the varlink-go client library (not jitterd's own codec), calls
// every method of io.jitterd and org.varlink.service, and checks every reply against the types
// the interface descriptions declare, parsed with varlink-go's idl package: every field that is
// not optional is present, every value has its declared type, no field is there that the
// description does not name. Errors must be declared errors, with their declared parameters.
// The types of org.varlink.service come from the Varlink specification, written out below, not
// from the daemon.
//
// Usage: varlink-check -socket PATH -idl config/io.jitterd.varlink -config FILE [-cpu N]
//
//	varlink-check -socket PATH -idl config/io.jitterd.varlink -unprivileged
//
// FILE is the daemon's configuration file, whose [probe] names the probed CPU ("cpus = N"):
// Reload is checked with it as it is, with a line added that has an error, with a CPU added
// that does not exist, then as it was again. With -unprivileged it only checks that
// Reset and Reload are refused with a declared error, for a peer that is neither root nor in
// the admin group. Prints "ok: ..." per check and "FAIL: ..." per
// failure; the exit status is 1 when anything failed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/varlink/go/varlink"
	"github.com/varlink/go/varlink/idl"
)

// The org.varlink.service interface as the Varlink specification (varlink.org, "Service")
// defines it, including PermissionDenied and ExpectedMore.
const serviceIDL = `interface org.varlink.service
method GetInfo() -> (
  vendor: string,
  product: string,
  version: string,
  url: string,
  interfaces: []string
)
method GetInterfaceDescription(interface: string) -> (description: string)
error InterfaceNotFound (interface: string)
error MethodNotFound (method: string)
error MethodNotImplemented (method: string)
error InvalidParameter (parameter: string)
error PermissionDenied ()
error ExpectedMore ()
`

// Every wait is bounded: one call, and the whole run.
const (
	callTimeout = 10 * time.Second
	runTimeout  = 60 * time.Second
)

var failures int

func fail(format string, args ...interface{}) {
	failures++
	fmt.Printf("FAIL: "+format+"\n", args...)
}

func pass(format string, args ...interface{}) {
	fmt.Printf("ok: "+format+"\n", args...)
}

func fatal(format string, args ...interface{}) {
	fmt.Printf("FAIL: "+format+"\n", args...)
	os.Exit(1)
}

// ---- the type checker ----------------------------------------------------------------------

// Checker validates JSON values against the types of the interfaces it knows.
type Checker struct {
	ifaces map[string]*idl.IDL
}

func (c *Checker) alias(iface *idl.IDL, name string) *idl.Type {
	for _, a := range iface.Aliases {
		if a.Name == name {
			return a.Type
		}
	}
	return nil
}

// split returns the interface a fully qualified name belongs to, and the name within it.
func (c *Checker) split(full string) (*idl.IDL, string) {
	i := strings.LastIndex(full, ".")
	if i < 0 {
		return nil, ""
	}
	return c.ifaces[full[:i]], full[i+1:]
}

// method returns the interface and method declaration of a fully qualified method name.
func (c *Checker) method(full string) (*idl.IDL, *idl.Method) {
	iface, name := c.split(full)
	if iface == nil {
		return nil, nil
	}
	for _, m := range iface.Methods {
		if m.Name == name {
			return iface, m
		}
	}
	return iface, nil
}

// errorDecl returns the declaration of a fully qualified error name, or nil.
func (c *Checker) errorDecl(full string) (*idl.IDL, *idl.Error) {
	iface, name := c.split(full)
	if iface == nil {
		return nil, nil
	}
	for _, e := range iface.Errors {
		if e.Name == name {
			return iface, e
		}
	}
	return iface, nil
}

var intRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// check returns what is wrong with @v as a value of type @t, one line per problem, each
// naming the path of the value. Long because it is one switch with a case per kind of the
// Varlink type system, which reads as the list of those kinds.
func (c *Checker) check(iface *idl.IDL, t *idl.Type, v interface{}, path string) []string {
	bad := func(what string) []string {
		return []string{fmt.Sprintf("%s: %s, got %s", path, what, short(v))}
	}
	switch t.Kind {
	case idl.TypeBool:
		if _, ok := v.(bool); !ok {
			return bad("expected a bool")
		}
	case idl.TypeInt:
		n, ok := v.(json.Number)
		if !ok || !intRe.MatchString(string(n)) {
			return bad("expected an int")
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			return bad("expected an int within 64 bits")
		}
	case idl.TypeFloat:
		n, ok := v.(json.Number)
		if !ok {
			return bad("expected a float")
		}
		if _, err := strconv.ParseFloat(string(n), 64); err != nil {
			return bad("expected a finite float")
		}
	case idl.TypeString:
		if _, ok := v.(string); !ok {
			return bad("expected a string")
		}
	case idl.TypeObject:
		if _, ok := v.(map[string]interface{}); !ok {
			return bad("expected an object")
		}
	case idl.TypeEnum:
		s, ok := v.(string)
		if !ok {
			return bad("expected an enum string")
		}
		for _, f := range t.Fields {
			if f.Name == s {
				return nil
			}
		}
		return bad("not a value of the enum")
	case idl.TypeMaybe:
		if v == nil {
			return nil
		}
		return c.check(iface, t.ElementType, v, path)
	case idl.TypeArray:
		a, ok := v.([]interface{})
		if !ok {
			return bad("expected an array")
		}
		var out []string
		for i, e := range a {
			out = append(out, c.check(iface, t.ElementType, e, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case idl.TypeMap:
		m, ok := v.(map[string]interface{})
		if !ok {
			return bad("expected a map")
		}
		var out []string
		for _, k := range sortedKeys(m) {
			out = append(out, c.check(iface, t.ElementType, m[k], path+"["+strconv.Quote(k)+"]")...)
		}
		return out
	case idl.TypeStruct:
		return c.checkStruct(iface, t, v, path)
	case idl.TypeAlias:
		a := c.alias(iface, t.Alias)
		if a == nil {
			return []string{fmt.Sprintf("%s: type %s is not declared in %s", path, t.Alias, iface.Name)}
		}
		return c.check(iface, a, v, path)
	default:
		return []string{fmt.Sprintf("%s: unknown type kind %d", path, t.Kind)}
	}
	return nil
}

// checkStruct: an object with every non-optional field, each of its type, and nothing else.
func (c *Checker) checkStruct(iface *idl.IDL, t *idl.Type, v interface{}, path string) []string {
	m, ok := v.(map[string]interface{})
	if !ok {
		return []string{fmt.Sprintf("%s: expected an object, got %s", path, short(v))}
	}
	var out []string
	known := map[string]bool{}
	for _, f := range t.Fields {
		known[f.Name] = true
		fv, present := m[f.Name]
		if !present || fv == nil {
			if f.Type.Kind != idl.TypeMaybe {
				out = append(out, fmt.Sprintf("%s.%s: required field missing", path, f.Name))
			}
			continue
		}
		out = append(out, c.check(iface, f.Type, fv, path+"."+f.Name)...)
	}
	for _, k := range sortedKeys(m) {
		if !known[k] {
			out = append(out, fmt.Sprintf("%s.%s: field not in the interface description", path, k))
		}
	}
	return out
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func short(v interface{}) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// decode parses JSON keeping numbers as written, so ints and floats can be told apart.
func decode(raw []byte) (interface{}, error) {
	var v interface{}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// typeString renders a type canonically, to compare two declarations.
func typeString(t *idl.Type) string {
	switch t.Kind {
	case idl.TypeBool:
		return "bool"
	case idl.TypeInt:
		return "int"
	case idl.TypeFloat:
		return "float"
	case idl.TypeString:
		return "string"
	case idl.TypeObject:
		return "object"
	case idl.TypeMaybe:
		return "?" + typeString(t.ElementType)
	case idl.TypeArray:
		return "[]" + typeString(t.ElementType)
	case idl.TypeMap:
		return "[string]" + typeString(t.ElementType)
	case idl.TypeAlias:
		return t.Alias
	case idl.TypeEnum, idl.TypeStruct:
		var parts []string
		for _, f := range t.Fields {
			if f.Type == nil {
				parts = append(parts, f.Name)
			} else {
				parts = append(parts, f.Name+": "+typeString(f.Type))
			}
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return "?"
}

func declarations(i *idl.IDL) map[string]string {
	d := map[string]string{}
	for _, m := range i.Methods {
		d["method "+m.Name] = typeString(m.In) + " -> " + typeString(m.Out)
	}
	for _, e := range i.Errors {
		d["error "+e.Name] = typeString(e.Type)
	}
	for _, a := range i.Aliases {
		d["type "+a.Name] = typeString(a.Type)
	}
	return d
}

// ---- calls --------------------------------------------------------------------------------

// Peer is one connection to the daemon with the checker for what comes back.
type Peer struct {
	c       *Checker
	conn    *varlink.Connection
	address string
	// What was exercised, to prove every method and every io.jitterd error was.
	replied map[string]bool
	errored map[string]bool
}

func (p *Peer) reconnect() {
	if p.conn != nil {
		p.conn.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	conn, err := varlink.NewConnection(ctx, p.address)
	if err != nil {
		fatal("cannot connect to %s: %v", p.address, err)
	}
	p.conn = conn
}

// Outcome of one call: the reply parameters, or the error name and its parameters.
type Outcome struct {
	reply     interface{}
	errName   string
	errParams interface{}
	continues bool
	err       error // transport failure
}

// outcome turns what varlink-go's receive function gave into an Outcome. varlink-go hands
// the org.varlink.service errors it knows back as typed values; the rest keep their raw
// parameters.
func outcome(raw json.RawMessage, flags uint64, err error) Outcome {
	o := Outcome{continues: flags&varlink.Continues != 0}
	var params interface{}
	name := ""
	switch e := err.(type) {
	case nil:
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		v, derr := decode(raw)
		if derr != nil {
			o.err = fmt.Errorf("reply parameters are not JSON: %v", derr)
			return o
		}
		o.reply = v
		return o
	case *varlink.Error:
		name = e.Name
		if rp, ok := e.Parameters.(*json.RawMessage); ok && rp != nil {
			v, derr := decode(*rp)
			if derr != nil {
				o.err = fmt.Errorf("error parameters are not JSON: %v", derr)
				return o
			}
			params = v
		}
	case *varlink.InvalidParameter:
		name, params = e.Error(), reencode(e)
	case *varlink.MethodNotFound:
		name, params = e.Error(), reencode(e)
	case *varlink.InterfaceNotFound:
		name, params = e.Error(), reencode(e)
	case *varlink.MethodNotImplemented:
		name, params = e.Error(), reencode(e)
	default:
		o.err = err
		return o
	}
	if params == nil {
		params = map[string]interface{}{}
	}
	o.errName, o.errParams = name, params
	return o
}

func reencode(v interface{}) interface{} {
	b, _ := json.Marshal(v)
	d, _ := decode(b)
	return d
}

// send sends a call; params is the exact JSON text of the parameters ("" for none).
func (p *Peer) send(method, params string, flags uint64) func() Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var in interface{}
	if params != "" {
		in = json.RawMessage(params)
	}
	receive, err := p.conn.Send(ctx, method, in, flags)
	if err != nil {
		return func() Outcome { return Outcome{err: err} }
	}
	return func() Outcome {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		var raw json.RawMessage
		f, err := receive(ctx, &raw)
		return outcome(raw, f, err)
	}
}

// call makes a call, and again after the delay an io.jitterd.Busy refusal gives (ten times at
// most), as a client of the daemon's CPU budget should: the checks below are about replies.
func (p *Peer) call(method, params string) Outcome {
	o := p.send(method, params, 0)()
	for i := 0; i < 10 && o.errName == "io.jitterd.Busy"; i++ {
		ms := num(obj(o.errParams)["retry_after_ms"])
		if ms <= 0 || ms > 10000 {
			break
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		o = p.send(method, params, 0)()
	}
	return o
}

// checkParams validates the parameters the test itself sends against the method's input, so a
// call meant to be valid is valid by the description, not just by what the daemon accepts.
func (p *Peer) checkParams(method, params string) bool {
	iface, m := p.c.method(method)
	if m == nil {
		fail("%s: the test calls a method that is not declared", method)
		return false
	}
	if params == "" {
		params = "{}"
	}
	v, err := decode([]byte(params))
	if err != nil {
		fail("%s %s: the test's parameters are not JSON", method, params)
		return false
	}
	if probs := p.c.check(iface, m.In, v, "parameters"); len(probs) > 0 {
		fail("%s %s: the test's parameters do not match the description: %s", method, params,
			strings.Join(probs, "; "))
		return false
	}
	return true
}

// checkReply validates a reply against the method's output type; returns the reply or nil.
func (p *Peer) checkReply(method, params string, o Outcome) map[string]interface{} {
	label := strings.TrimSpace(method + " " + params)
	if o.err != nil {
		fail("%s: %v", label, o.err)
		return nil
	}
	if o.errName != "" {
		fail("%s: error %s %s instead of a reply", label, o.errName, short(o.errParams))
		return nil
	}
	iface, m := p.c.method(method)
	if probs := p.c.check(iface, m.Out, o.reply, "reply"); len(probs) > 0 {
		fail("%s: reply does not match %s: %s", label, method, strings.Join(probs, "; "))
		return nil
	}
	p.replied[method] = true
	return o.reply.(map[string]interface{})
}

// expectReply calls a method with valid parameters and checks the reply's types; @sem checks
// what the reply says, returning a problem or "".
func (p *Peer) expectReply(method, params string, sem func(r map[string]interface{}) string) map[string]interface{} {
	if !p.checkParams(method, params) {
		return nil
	}
	r := p.checkReply(method, params, p.call(method, params))
	if r == nil {
		return nil
	}
	if sem != nil {
		if why := sem(r); why != "" {
			fail("%s %s: %s", method, params, why)
			return nil
		}
	}
	pass("%s %s: reply matches the description", method, params)
	return r
}

// checkError checks an error is the one expected, declared, with its declared parameters;
// @want maps parameter names to the values they must have.
func (p *Peer) checkError(label, wantName string, want map[string]interface{}, o Outcome) {
	if o.err != nil {
		fail("%s: %v", label, o.err)
		return
	}
	if o.errName == "" {
		fail("%s: a reply %s instead of %s", label, short(o.reply), wantName)
		return
	}
	if o.errName != wantName {
		fail("%s: error %s %s, expected %s", label, o.errName, short(o.errParams), wantName)
		return
	}
	iface, decl := p.c.errorDecl(o.errName)
	if decl == nil {
		fail("%s: error %s is not declared by any interface the daemon serves", label, o.errName)
		return
	}
	if probs := p.c.check(iface, decl.Type, o.errParams, "parameters"); len(probs) > 0 {
		fail("%s: %s parameters do not match the description: %s", label, o.errName,
			strings.Join(probs, "; "))
		return
	}
	got := o.errParams.(map[string]interface{})
	for k, w := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(w) {
			fail("%s: %s has %s = %s, expected %v", label, o.errName, k, short(got[k]), w)
			return
		}
	}
	p.errored[o.errName] = true
	pass("%s: %s %s", label, o.errName, short(o.errParams))
}

func (p *Peer) expectError(method, params, wantName string, want map[string]interface{}) {
	p.checkError(strings.TrimSpace(method+" "+params), wantName, want, p.call(method, params))
}

// ---- what the replies say -------------------------------------------------------------------

func num(v interface{}) float64 {
	n, _ := v.(json.Number)
	f, _ := strconv.ParseFloat(string(n), 64)
	return f
}

func arr(r map[string]interface{}, k string) []interface{} {
	a, _ := r[k].([]interface{})
	return a
}

func obj(v interface{}) map[string]interface{} {
	m, _ := v.(map[string]interface{})
	return m
}

// ---- the run ------------------------------------------------------------------------------

func main() {
	socket := flag.String("socket", "", "the daemon's socket")
	idlPath := flag.String("idl", "", "config/io.jitterd.varlink")
	cpu := flag.Int("cpu", 1, "the probed CPU")
	config := flag.String("config", "", "the daemon's configuration file, for Reload")
	unprivileged := flag.Bool("unprivileged", false, "only check that Reset and Reload are refused")
	flag.Parse()
	if *socket == "" || *idlPath == "" || (*config == "") == !*unprivileged {
		fmt.Fprintln(os.Stderr, "usage: varlink-check -socket PATH -idl FILE -config FILE [-cpu N]\n"+
			"       varlink-check -socket PATH -idl FILE -unprivileged")
		os.Exit(2)
	}
	time.AfterFunc(runTimeout, func() { fatal("not done within %v", runTimeout) })

	text, err := os.ReadFile(*idlPath)
	if err != nil {
		fatal("%v", err)
	}
	jitterd, err := idl.New(string(text))
	if err != nil {
		fatal("%s does not parse: %v", *idlPath, err)
	}
	service, err := idl.New(serviceIDL)
	if err != nil {
		fatal("the specification's org.varlink.service does not parse: %v", err)
	}
	c := &Checker{ifaces: map[string]*idl.IDL{jitterd.Name: jitterd, service.Name: service}}
	p := &Peer{c: c, address: "unix:" + *socket, replied: map[string]bool{}, errored: map[string]bool{}}
	p.reconnect()

	selfTest(c, string(text))
	if *unprivileged {
		p.expectError("io.jitterd.Reset", "{}", "org.varlink.service.PermissionDenied", nil)
		p.expectError("io.jitterd.Reset", `{"cpus": [1]}`, "org.varlink.service.PermissionDenied", nil)
		p.expectError("io.jitterd.Reload", "", "org.varlink.service.PermissionDenied", nil)
		r := p.expectReply("io.jitterd.GetStatus", "", nil)
		if r != nil {
			pass("read-only methods are open to the unprivileged peer")
		}
		finish()
	}

	serviceInterface(p, string(text))
	methods(p, *cpu)
	reload(p, *config, *cpu)
	protocol(p, *cpu)
	monitor(p, *cpu)
	invalid(p, *cpu)
	busy(p)
	coverage(p, jitterd)
	finish()
}

func finish() {
	if failures > 0 {
		fmt.Printf("%d checks failed\n", failures)
		os.Exit(1)
	}
	os.Exit(0)
}

// selfTest proves the checker can say no: a reply shaped right passes, and each way of getting
// it wrong is caught; the IDL parser refuses a description with a syntax error.
func selfTest(c *Checker, text string) {
	broken := strings.Replace(text, "method GetStats(", "method GetStats((", 1)
	if broken == text {
		fatal("the description has no GetStats method to break")
	}
	if _, err := idl.New(broken); err == nil {
		fatal("the IDL parser accepts a syntax error")
	}
	iface, m := c.method("io.jitterd.GetHistogram")
	good := `{"cpu": 1, "window": "1m", "kind": "gap", "total": 3, "min_ns": 10, "max_ns": 20.5,
	          "buckets": [{"lower_ns": 10, "upper_ns": 10, "count": 3}]}`
	cases := map[string]string{
		"a required field missing":    `{"cpu": 1, "window": "1m", "kind": "gap", "total": 3, "min_ns": 1, "max_ns": 2}`,
		"an unknown field":            `{"cpu": 1, "window": "1m", "kind": "gap", "total": 3, "min_ns": 1, "max_ns": 2, "buckets": [], "extra": 0}`,
		"a string for an int":         `{"cpu": "1", "window": "1m", "kind": "gap", "total": 3, "min_ns": 1, "max_ns": 2, "buckets": []}`,
		"a fraction for an int":       `{"cpu": 1.5, "window": "1m", "kind": "gap", "total": 3, "min_ns": 1, "max_ns": 2, "buckets": []}`,
		"an int beyond 64 bits":       `{"cpu": 1, "window": "1m", "kind": "gap", "total": 18446744073709551616, "min_ns": 1, "max_ns": 2, "buckets": []}`,
		"a bad element of an array":   `{"cpu": 1, "window": "1m", "kind": "gap", "total": 3, "min_ns": 1, "max_ns": 2, "buckets": [{"lower_ns": 1, "upper_ns": 1}]}`,
		"null for a required field":   `{"cpu": 1, "window": null, "kind": "gap", "total": 3, "min_ns": 1, "max_ns": 2, "buckets": []}`,
		"an object for an array":      `{"cpu": 1, "window": "1m", "kind": "gap", "total": 3, "min_ns": 1, "max_ns": 2, "buckets": {}}`,
		"a bool for a float":          `{"cpu": 1, "window": "1m", "kind": "gap", "total": 3, "min_ns": true, "max_ns": 2, "buckets": []}`,
		"an unknown field in an item": `{"cpu": 1, "window": "1m", "kind": "gap", "total": 3, "min_ns": 1, "max_ns": 2, "buckets": [{"lower_ns": 1, "upper_ns": 1, "count": 1, "x": 1}]}`,
	}
	v, _ := decode([]byte(good))
	if probs := c.check(iface, m.Out, v, "reply"); len(probs) > 0 {
		fatal("the checker refuses a well-formed reply: %v", probs)
	}
	for what, bad := range cases {
		v, err := decode([]byte(bad))
		if err != nil {
			fatal("self-test %q is not JSON: %v", what, err)
		}
		if len(c.check(iface, m.Out, v, "reply")) == 0 {
			fatal("the checker accepts %s", what)
		}
	}
	// Optional fields may be absent or null, maps are open.
	_, st := c.method("io.jitterd.GetStatus")
	probe := c.alias(iface, "Probe")
	for _, s := range []string{
		`{"cpu": 1, "state": "running", "policy": "SCHED_OTHER", "priority": 0, "samples": 1, "floor_ns": 1, "worst_gap_1m_ns": 1, "isolation": "none"}`,
		`{"cpu": 1, "state": "running", "policy": "SCHED_OTHER", "priority": 0, "samples": 1, "floor_ns": 1, "worst_gap_1m_ns": 1, "isolation": "none", "migrated_to": null, "reason": "x"}`,
	} {
		v, _ := decode([]byte(s))
		if probs := c.check(iface, probe, v, "probe"); len(probs) > 0 || st == nil {
			fatal("the checker refuses optional fields left out or null: %v", probs)
		}
	}
	pass("the checker accepts a well-formed reply and refuses %d kinds of malformed ones;"+
		" the IDL parser refuses a syntax error", len(cases))
}

// serviceInterface: org.varlink.service as the specification has it, and io.jitterd as
// config/io.jitterd.varlink has it.
func serviceInterface(p *Peer, file string) {
	p.expectReply("org.varlink.service.GetInfo", "", func(r map[string]interface{}) string {
		have := map[string]bool{}
		for _, i := range arr(r, "interfaces") {
			have[fmt.Sprint(i)] = true
		}
		if !have["io.jitterd"] || !have["org.varlink.service"] || len(have) != 2 {
			return fmt.Sprintf("interfaces %s, expected io.jitterd and org.varlink.service", short(r["interfaces"]))
		}
		if r["product"] != "jitterd" || r["version"] == "" {
			return "product or version missing"
		}
		return ""
	})
	p.expectReply("org.varlink.service.GetInterfaceDescription", `{"interface": "io.jitterd"}`,
		func(r map[string]interface{}) string {
			if r["description"] != file {
				return "the served description differs from config/io.jitterd.varlink"
			}
			return ""
		})
	p.expectReply("org.varlink.service.GetInterfaceDescription", `{"interface": "org.varlink.service"}`,
		func(r map[string]interface{}) string {
			served, err := idl.New(fmt.Sprint(r["description"]))
			if err != nil {
				return "the served org.varlink.service does not parse: " + err.Error()
			}
			spec, _ := idl.New(serviceIDL)
			a, b := declarations(spec), declarations(served)
			for k, v := range a {
				if b[k] != v {
					return fmt.Sprintf("served %s is %q, the specification has %q", k, b[k], v)
				}
			}
			for k := range b {
				if _, ok := a[k]; !ok {
					return fmt.Sprintf("served org.varlink.service declares %s, which the specification does not", k)
				}
			}
			return ""
		})
}

// methods: each io.jitterd method with valid parameters, and what its reply must say. Reset
// comes last: it empties what the others read.
func methods(p *Peer, cpu int) {
	statusAndStats(p, cpu)
	histograms(p, cpu)
	eventsAndCauses(p, cpu)
	timelines(p, cpu)
	auditAndReset(p, cpu)
}

// onlyCPU says why @list, the @what of a reply, is not one entry for CPU @cpu ("" when it is).
func onlyCPU(list []interface{}, what string, cpu int) string {
	if len(list) != 1 || num(obj(list[0])["cpu"]) != float64(cpu) {
		return fmt.Sprintf("%s: expected exactly CPU %d, got %s", what, cpu, short(list))
	}
	return ""
}

// statusAndStats: GetStatus lists the probed CPU; GetStats has its default window and, over
// named windows, samples that its gap histogram counts.
func statusAndStats(p *Peer, cpu int) {
	p.expectReply("io.jitterd.GetStatus", "", func(r map[string]interface{}) string {
		return onlyCPU(arr(r, "probes"), "probes", cpu)
	})
	p.expectReply("io.jitterd.GetStats", `{"without_analyses": true}`, func(r map[string]interface{}) string {
		if why := onlyCPU(arr(r, "cpus"), "cpus", cpu); why != "" {
			return why
		}
		if w := obj(arr(r, "cpus")[0])["window"]; w != "1m" {
			return fmt.Sprintf("default window %v, the description says 1m", w)
		}
		return ""
	})
	for _, w := range []string{"10s", "all"} {
		params := fmt.Sprintf(`{"cpus": [%d], "window": %q, "without_analyses": true}`, cpu, w)
		p.expectReply("io.jitterd.GetStats", params, func(r map[string]interface{}) string {
			if why := onlyCPU(arr(r, "cpus"), "cpus", cpu); why != "" {
				return why
			}
			s := obj(arr(r, "cpus")[0])
			if s["window"] != w {
				return fmt.Sprintf("window %v, asked for %s", s["window"], w)
			}
			if num(s["samples"]) <= 0 || num(obj(s["gap"])["count"]) != num(s["samples"]) {
				return "no samples, or gap.count is not samples"
			}
			for _, k := range []string{"causes", "background", "periods"} {
				if _, ok := s[k]; ok {
					return fmt.Sprintf("GetStats carries %q, which the daemon no longer works out", k)
				}
			}
			return ""
		})
		// The raw data of the same window: one row of counts per interval, the events' starts.
		params = fmt.Sprintf(`{"cpu": %d, "window": %q}`, cpu, w)
		p.expectReply("io.jitterd.GetWindow", params, func(r map[string]interface{}) string {
			if num(r["cpu"]) != float64(cpu) || r["window"] != w {
				return fmt.Sprintf("cpu %v window %v, asked for %d %s", r["cpu"], r["window"], cpu, w)
			}
			n := len(arr(r, "counts"))
			if len(arr(r, "durations_ns")) != n || len(arr(r, "lost_ns")) != n {
				return "durations_ns, lost_ns and counts differ in length"
			}
			for _, row := range arr(r, "counts") {
				pairs, _ := row.([]interface{})
				for k := 0; k+1 < len(pairs); k += 2 {
					if i := num(pairs[k]); i < 0 || int(i) >= len(arr(r, "sources")) {
						return fmt.Sprintf("a count names source %v of %d", pairs[k], len(arr(r, "sources")))
					}
				}
				if len(pairs)%2 != 0 {
					return "a row of counts is not pairs"
				}
			}
			return ""
		})
	}
	// A client that does not say it reads no analyses from GetStats (one older than this
	// interface, which would take their absence for none) is told they moved.
	p.expectError("io.jitterd.GetStats", fmt.Sprintf(`{"cpus": [%d]}`, cpu), "io.jitterd.AnalysesMoved", nil)
}

// histograms: GetHistogram's buckets, of either kind, are well-formed and add up to its total.
func histograms(p *Peer, cpu int) {
	for _, params := range []string{
		fmt.Sprintf(`{"cpu": %d}`, cpu),
		fmt.Sprintf(`{"cpu": %d, "window": "all", "kind": "diffdiff"}`, cpu),
	} {
		p.expectReply("io.jitterd.GetHistogram", params, func(r map[string]interface{}) string {
			sum := 0.0
			for _, b := range arr(r, "buckets") {
				sum += num(obj(b)["count"])
				if num(obj(b)["lower_ns"]) > num(obj(b)["upper_ns"]) || num(obj(b)["count"]) <= 0 {
					return "a bucket with lower_ns > upper_ns or no count: " + short(b)
				}
			}
			if sum != num(r["total"]) || sum == 0 {
				return fmt.Sprintf("the buckets hold %.0f, total says %v", sum, r["total"])
			}
			return ""
		})
	}
}

// eventsAndCauses: GetEvents keeps to its limit, minimum and CPU, newest last; GetCauses
// explains no more than was recorded, and nothing while the trace is off; GetCaptures keeps to
// its limit, and has none while the trace is off.
func eventsAndCauses(p *Peer, cpu int) {
	p.expectReply("io.jitterd.GetEvents", "", nil)
	p.expectReply("io.jitterd.GetEvents",
		fmt.Sprintf(`{"cpus": [%d], "since": "10m", "min_duration": "10us", "limit": 3}`, cpu),
		func(r map[string]interface{}) string {
			ev := arr(r, "events")
			if len(ev) > 3 {
				return fmt.Sprintf("%d events for limit 3", len(ev))
			}
			for i, e := range ev {
				if num(obj(e)["duration_ns"]) < 10000 || num(obj(e)["cpu"]) != float64(cpu) {
					return "an event shorter than min_duration or of another CPU: " + short(e)
				}
				if i > 0 && num(obj(e)["start_ns"]) < num(obj(ev[i-1])["start_ns"]) {
					return "events not newest last"
				}
			}
			return ""
		})
	p.expectReply("io.jitterd.GetCauses", "", nil)
	p.expectReply("io.jitterd.GetCauses", fmt.Sprintf(`{"cpus": [%d], "window": "all"}`, cpu),
		func(r map[string]interface{}) string {
			c := arr(r, "cpus")
			if len(c) != 1 || num(obj(c[0])["cpu"]) != float64(cpu) {
				return "not one entry for the CPU asked: " + short(r)
			}
			e := obj(c[0])
			if num(e["explained"]) > num(e["interruptions"]) ||
				num(e["explained_ns"]) > num(e["interruptions_ns"]) {
				return "more explained than recorded: " + short(e)
			}
			if r["trace"] == "off" && num(e["explained"]) != 0 {
				return "causes although the trace is off: " + short(e)
			}
			return ""
		})
	p.expectReply("io.jitterd.GetCaptures", "", func(r map[string]interface{}) string {
		if len(arr(r, "captures")) != 0 || r["truncated"] != false {
			return "captures although the trace is off: " + short(r)
		}
		return ""
	})
	p.expectReply("io.jitterd.GetCaptures", fmt.Sprintf(`{"cpus": [%d], "since": "10m", "limit": 5}`, cpu),
		func(r map[string]interface{}) string {
			if len(arr(r, "captures")) > 5 {
				return "more captures than the limit: " + short(r)
			}
			return ""
		})
}

// timelines: GetTimeline has points, in time order.
func timelines(p *Peer, cpu int) {
	for _, params := range []string{fmt.Sprintf(`{"cpu": %d}`, cpu), fmt.Sprintf(`{"cpu": %d, "window": "10s"}`, cpu)} {
		p.expectReply("io.jitterd.GetTimeline", params, func(r map[string]interface{}) string {
			pts := arr(r, "points")
			if len(pts) == 0 {
				return "no points"
			}
			for i := 1; i < len(pts); i++ {
				if num(obj(pts[i])["start_ns"]) <= num(obj(pts[i-1])["start_ns"]) {
					return "points not in time order"
				}
			}
			return ""
		})
	}
}

// auditAndReset: Audit has findings; Reset, of one CPU or all, returns nothing.
func auditAndReset(p *Peer, cpu int) {
	p.expectReply("io.jitterd.Audit", "", func(r map[string]interface{}) string {
		if len(arr(r, "findings")) == 0 {
			return "no findings"
		}
		return ""
	})
	p.expectReply("io.jitterd.Reset", fmt.Sprintf(`{"cpus": [%d]}`, cpu), func(r map[string]interface{}) string {
		if len(r) != 0 {
			return "Reset returns (), got " + short(r)
		}
		return ""
	})
	p.expectReply("io.jitterd.Reset", "", nil)
}

// reload: Reload of the configuration as it is answers with nothing; with a line added that
// has an error, it is refused with InvalidConfiguration naming that file and line; with a CPU
// added that does not exist, with ReloadRolledBack; once the file is as it was, it is answered
// again.
func reload(p *Peer, config string, cpu int) {
	text, err := os.ReadFile(config)
	if err != nil {
		fail("cannot read %s: %v", config, err)
		return
	}
	empty := func(r map[string]interface{}) string {
		if len(r) != 0 {
			return "Reload returns (), got " + short(r)
		}
		return ""
	}
	p.expectReply("io.jitterd.Reload", "", empty)
	lines := strings.Count(string(text), "\n")
	if len(text) > 0 && !strings.HasSuffix(string(text), "\n") {
		lines++
	}
	bad := strings.TrimSuffix(string(text), "\n") + "\n[probe]\nthreshold = bogus\n"
	if err := os.WriteFile(config, []byte(bad), 0o644); err != nil {
		fail("cannot write %s: %v", config, err)
		return
	}
	o := p.call("io.jitterd.Reload", "")
	label := "Reload with \"threshold = bogus\" added"
	p.checkError(label, "io.jitterd.InvalidConfiguration", nil, o)
	where := fmt.Sprintf("%s:%d:", config, lines+2)
	errs := arr(obj(o.errParams), "errors")
	if len(errs) != 1 || !strings.HasPrefix(fmt.Sprint(errs[0]), where) {
		fail("%s: errors %s, expected one that begins with %s", label, short(errs), where)
	}
	// A CPU beyond every one the kernel could bring up.
	possible, err := os.ReadFile("/sys/devices/system/cpu/possible")
	last := strings.FieldsFunc(strings.TrimSpace(string(possible)), func(r rune) bool { return r == ',' || r == '-' })
	nope := 0
	if err == nil && len(last) > 0 {
		nope, err = strconv.Atoi(last[len(last)-1])
	}
	line := fmt.Sprintf("cpus = %d\n", cpu)
	if err != nil || !strings.Contains(string(text), line) {
		fail("no CPU to add: /sys/devices/system/cpu/possible %q (%v), or no %q in %s", possible, err, line, config)
	} else {
		more := strings.Replace(string(text), line, fmt.Sprintf("cpus = %d,%d\n", cpu, nope+3), 1)
		if err := os.WriteFile(config, []byte(more), 0o644); err != nil {
			fail("cannot write %s: %v", config, err)
			return
		}
		p.expectError("io.jitterd.Reload", "", "io.jitterd.ReloadRolledBack", nil)
	}
	if err := os.WriteFile(config, text, 0o644); err != nil {
		fail("cannot put %s back: %v", config, err)
		return
	}
	p.expectReply("io.jitterd.Reload", "", empty)
}

// protocol: replies in call order when calls are pipelined, and no reply to a oneway call.
func protocol(p *Peer, cpu int) {
	calls := []struct{ method, params string }{
		{"org.varlink.service.GetInfo", ""},
		{"io.jitterd.GetStatus", ""},
		{"io.jitterd.GetHistogram", fmt.Sprintf(`{"cpu": %d}`, cpu)},
		{"io.jitterd.GetStats", `{"window": "bogus"}`},
		{"io.jitterd.Audit", ""},
	}
	var pending []func() Outcome
	for _, c := range calls {
		pending = append(pending, p.send(c.method, c.params, 0))
	}
	ok := true
	for i, c := range calls {
		o := pending[i]()
		if c.params == `{"window": "bogus"}` {
			if o.errName != "io.jitterd.InvalidWindow" {
				fail("pipelined call %d (%s): %s instead of InvalidWindow", i, c.method, o.errName)
				ok = false
			}
			continue
		}
		if p.checkReply(c.method, c.params, o) == nil {
			ok = false
		}
	}
	if ok {
		pass("%d pipelined calls: each reply in call order, of its method's type", len(calls))
	}

	// A oneway call gets no reply: the next reply on the connection is the next call's.
	p.send("io.jitterd.GetStatus", "", varlink.Oneway)
	p.send("io.jitterd.GetStats", `{"window": "7y"}`, varlink.Oneway)
	if p.checkReply("org.varlink.service.GetInfo", "", p.call("org.varlink.service.GetInfo", "")) != nil {
		pass("oneway calls (one valid, one invalid) get no reply")
	}
}

// monitor: the streaming method, with "more": every reply of Monitor's type, flagged to
// continue, one per interval; a client that goes away leaves the daemon serving.
func monitor(p *Peer, cpu int) {
	const n = 4
	params := fmt.Sprintf(`{"cpus": [%d]}`, cpu)
	p.checkParams("io.jitterd.Monitor", params)
	for _, pr := range []string{"", params} {
		p.reconnect()
		receive := p.send("io.jitterd.Monitor", pr, varlink.More)
		var prev float64
		ok := true
		start := time.Now()
		for i := 0; i < n && ok; i++ {
			o := receive()
			r := p.checkReply("io.jitterd.Monitor", pr, o)
			if r == nil {
				ok = false
				break
			}
			var c map[string]interface{}
			if cs := arr(r, "cpus"); len(cs) == 1 {
				c = obj(cs[0])
			}
			switch {
			case !o.continues:
				fail("Monitor %s: reply %d lacks \"continues\" while the stream goes on", pr, i)
				ok = false
			case c == nil || num(c["cpu"]) != float64(cpu):
				fail("Monitor %s: reply %d does not have exactly CPU %d: %s", pr, i, cpu, short(r["cpus"]))
				ok = false
			case num(r["start_ns"]) == 0 && num(r["duration_ns"]) == 0 && num(c["samples"]) == 0:
				// A reply for an interval the probe never handed over: it names no interval.
				fail("Monitor %s: reply %d names no interval (start_ns 0, no samples)", pr, i)
				ok = false
			case num(r["start_ns"]) <= prev || num(r["duration_ns"]) <= 0 || num(c["samples"]) <= 0:
				fail("Monitor %s: reply %d is not the interval after the one before: %s", pr, i, short(r))
				ok = false
			default:
				prev = num(r["start_ns"])
			}
		}
		if ok {
			pass("Monitor %s with more: %d replies in %.1f s, each of Monitor's type and continuing",
				pr, n, time.Since(start).Seconds())
		}
	}
	// The streaming client hangs up; the daemon goes on answering others.
	p.reconnect()
	p.expectReply("io.jitterd.GetStatus", "", nil)
}

// invalid: calls that are wrong in every way a client can be, each answered with the declared
// error that names what is wrong.
func invalid(p *Peer, cpu int) {
	const ip = "org.varlink.service.InvalidParameter"
	type P = map[string]interface{}
	other := 0
	if cpu == 0 {
		other = 1
	}
	p.expectError("io.jitterd.GetStats", `{"bogus": 1}`, ip, P{"parameter": "bogus"})
	p.expectError("io.jitterd.GetStats", `{"cpus": "1"}`, ip, P{"parameter": "cpus"})
	p.expectError("io.jitterd.GetStats", `{"cpus": ["x"]}`, ip, P{"parameter": "cpus"})
	p.expectError("io.jitterd.GetStats", `{"window": 5}`, ip, P{"parameter": "window"})
	p.expectError("io.jitterd.GetStats", `{"window": "7y"}`, "io.jitterd.InvalidWindow", P{"window": "7y"})
	p.expectError("io.jitterd.GetStats", fmt.Sprintf(`{"cpus": [%d]}`, other), "io.jitterd.NoSuchCpu", P{"cpu": other})
	p.expectError("io.jitterd.GetHistogram", "{}", ip, P{"parameter": "cpu"})
	p.expectError("io.jitterd.GetHistogram", `{"cpu": "one"}`, ip, P{"parameter": "cpu"})
	p.expectError("io.jitterd.GetHistogram", fmt.Sprintf(`{"cpu": %d}`, other), "io.jitterd.NoSuchCpu", P{"cpu": other})
	p.expectError("io.jitterd.GetHistogram", fmt.Sprintf(`{"cpu": %d, "kind": "bogus"}`, cpu), ip, P{"parameter": "kind"})
	p.expectError("io.jitterd.GetEvents", `{"min_duration": "1x"}`, "io.jitterd.InvalidDuration",
		P{"parameter": "min_duration", "value": "1x"})
	p.expectError("io.jitterd.GetEvents", `{"since": "soon"}`, "io.jitterd.InvalidDuration",
		P{"parameter": "since", "value": "soon"})
	p.expectError("io.jitterd.GetEvents", `{"limit": 0}`, ip, P{"parameter": "limit"})
	p.expectError("io.jitterd.GetCauses", `{"window": "7y"}`, "io.jitterd.InvalidWindow", P{"window": "7y"})
	p.expectError("io.jitterd.GetCauses", fmt.Sprintf(`{"cpus": [%d]}`, other), "io.jitterd.NoSuchCpu", P{"cpu": other})
	p.expectError("io.jitterd.GetCauses", `{"since": "1m"}`, ip, P{"parameter": "since"})
	p.expectError("io.jitterd.GetCaptures", `{"since": "soon"}`, "io.jitterd.InvalidDuration",
		P{"parameter": "since", "value": "soon"})
	p.expectError("io.jitterd.GetCaptures", `{"limit": 101}`, ip, P{"parameter": "limit"})
	p.expectError("io.jitterd.GetCaptures", fmt.Sprintf(`{"cpus": [%d]}`, other), "io.jitterd.NoSuchCpu", P{"cpu": other})
	p.expectError("io.jitterd.GetTimeline", fmt.Sprintf(`{"cpu": %d}`, other), "io.jitterd.NoSuchCpu", P{"cpu": other})
	p.expectError("io.jitterd.GetTimeline", fmt.Sprintf(`{"cpu": %d, "window": "1y"}`, cpu), "io.jitterd.InvalidWindow", P{"window": "1y"})
	p.expectError("io.jitterd.GetWindow", fmt.Sprintf(`{"cpu": %d}`, other), "io.jitterd.NoSuchCpu", P{"cpu": other})
	p.expectError("io.jitterd.GetWindow", fmt.Sprintf(`{"cpu": %d, "window": "1y"}`, cpu), "io.jitterd.InvalidWindow", P{"window": "1y"})
	p.expectError("io.jitterd.Monitor", "", "org.varlink.service.ExpectedMore", nil)
	p.checkError(fmt.Sprintf(`io.jitterd.Monitor {"cpus": [%d]} with more`, other), "io.jitterd.NoSuchCpu",
		P{"cpu": other}, p.send("io.jitterd.Monitor", fmt.Sprintf(`{"cpus": [%d]}`, other), varlink.More)())
	p.expectError("io.jitterd.Audit", `{"cpus": [1]}`, ip, P{"parameter": "cpus"})
	p.expectError("io.jitterd.Reset", fmt.Sprintf(`{"cpus": [%d]}`, other), "io.jitterd.NoSuchCpu", P{"cpu": other})
	p.expectError("io.jitterd.Frobnicate", "", "org.varlink.service.MethodNotFound", P{"method": "io.jitterd.Frobnicate"})
	p.expectError("com.example.nothing.Method", "", "org.varlink.service.InterfaceNotFound",
		P{"interface": "com.example.nothing"})
	p.expectError("org.varlink.service.GetInterfaceDescription", `{"interface": "com.example.nothing"}`,
		"org.varlink.service.InterfaceNotFound", P{"interface": "com.example.nothing"})
	p.expectError("org.varlink.service.GetInterfaceDescription", "{}", ip, P{"parameter": "interface"})
	// After all of that, the connection still works.
	p.expectReply("io.jitterd.GetStatus", "", nil)
}

// coverage: every method of both interfaces answered, every io.jitterd error produced.
// busy: GetStats over every window back to back spends the clients' CPU budget (at some 25 µs a
// call, beyond 20 000 of them), and the daemon then refuses with io.jitterd.Busy and a retry
// delay; after that delay the same connection is answered again.
func busy(p *Peer) {
	const most = 200000
	for i := 0; i < most; i++ {
		windows := []string{"10s", "1m", "5m", "1h", "24h", "all"}
		o := p.send("io.jitterd.GetStats", `{"window": "`+windows[i%len(windows)]+
			`", "without_analyses": true}`, 0)()
		if o.err != nil || o.errName == "" {
			if o.err != nil {
				fail("GetStats call %d: %v", i+1, o.err)
				return
			}
			continue
		}
		label := fmt.Sprintf("GetStats, call %d back to back", i+1)
		p.checkError(label, "io.jitterd.Busy", nil, o)
		ms := num(obj(o.errParams)["retry_after_ms"])
		if ms <= 0 || ms > 60000 {
			fail("%s: retry_after_ms %v is no delay to wait", label, ms)
			return
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		p.expectReply("io.jitterd.GetStatus", "", nil)
		return
	}
	fail("%d calls of GetStats back to back were never refused", most)
}

func coverage(p *Peer, jitterd *idl.IDL) {
	var missing []string
	for name, iface := range p.c.ifaces {
		for _, m := range iface.Methods {
			if !p.replied[name+"."+m.Name] {
				missing = append(missing, "method "+name+"."+m.Name)
			}
		}
	}
	for _, e := range jitterd.Errors {
		if !p.errored[jitterd.Name+"."+e.Name] {
			missing = append(missing, "error "+jitterd.Name+"."+e.Name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		fail("not exercised: %s", strings.Join(missing, ", "))
		return
	}
	var seen []string
	for e := range p.errored {
		seen = append(seen, e)
	}
	sort.Strings(seen)
	pass("every method of io.jitterd and org.varlink.service answered; errors seen: %s",
		strings.Join(seen, ", "))
}
